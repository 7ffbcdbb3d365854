/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small helpers for the integration tests, things the shell cannot do:
 *
 *   sp-helper rewrite FILE COUNT
 *       Rewrites the first page of FILE COUNT times, each time right after starting its
 *       writeback, and times the rewrite. With stable writes in force on the filesystem
 *       the rewrite waits for the writeback to finish; without, it does not. Also times
 *       how long the writeback then still had to run, which shows that the page really
 *       was under writeback while it was rewritten. blk-throttle lets part of the I/O
 *       through at once (its budget per time slice), so with 20 IOPS about every other
 *       writeback is throttled: the average is the figure to compare, not the median.
 *       Prints
 *         "rewrite_avg_us=N rewrite_median_us=N rewrite_max_us=N inflight_avg_us=N count=N"
 *
 *   sp-helper loop-remove N
 *       Removes the (detached) loop device loopN (LOOP_CTL_REMOVE).
 *
 *   sp-helper mount-storm DIR COUNT [PAUSE_US]
 *       Mounts a tmpfs on DIR and unmounts it again, COUNT times, pausing PAUSE_US
 *       microseconds after each pair (default 0). Prints "pairs=N elapsed_ms=N".
 *
 *   sp-helper fuse-mount SOURCE DIR
 *       Mounts a FUSE filesystem of type fuse.sptest on DIR whose source string is SOURCE (what
 *       `fusermount -o fsname=/dev/sda1` lets any user do), then closes the FUSE device: no
 *       daemon serves it, every access fails at once (ENOTCONN) until it is unmounted.
 *
 *   sp-helper fuse-serve DIR FILE
 *       Mounts a FUSE filesystem of type fuse.sptest on DIR holding one regular file, img, whose
 *       data is FILE's, prints "ready" and serves it until DIR is unmounted. Nothing is cached
 *       (every lookup and every stat asks the server): stopping the server (SIGSTOP) hangs
 *       whatever walks a path into DIR or asks for img's attributes, as a hung NFS server or a
 *       stuck FUSE daemon does, until it is continued.
 *
 *   sp-helper notify-listen SOCKET
 *       Receives sd_notify() datagrams on the unix socket SOCKET (created; give it to the
 *       daemon as NOTIFY_SOCKET) and prints each assignment on its own line, flushed, until
 *       killed.
 *
 * Exit status 0 on success, 1 on failure, 2 on usage errors. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/loop.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static int do_rewrite(const char *path, int count) {
        char page[4096];
        uint64_t *t = calloc((size_t) count, sizeof(uint64_t)), sum = 0, inflight = 0;
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

        if (fd < 0 || !t) {
                fprintf(stderr, "rewrite: cannot open %s: %m\n", path);
                return 1;
        }
        memset(page, 'a', sizeof page);
        /* Allocate the block and get it onto the disk once, so that later writebacks are
         * plain overwrites of one page. */
        if (pwrite(fd, page, sizeof page, 0) != sizeof page || fsync(fd) < 0) {
                fprintf(stderr, "rewrite: cannot write %s: %m\n", path);
                return 1;
        }
        for (int i = 0; i < count; i++) {
                page[0] = (char) ('a' + i % 26);
                /* Wait for any earlier writeback of the page, then start writing the dirty page
                 * back: when this returns, the page is under (throttled) writeback. */
                if (sync_file_range(fd, 0, sizeof page,
                                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE) < 0) {
                        fprintf(stderr, "rewrite: sync_file_range: %m\n");
                        return 1;
                }
                uint64_t a = now_ns();
                if (pwrite(fd, page, sizeof page, 0) != sizeof page) {
                        fprintf(stderr, "rewrite: pwrite: %m\n");
                        return 1;
                }
                uint64_t b = now_ns();
                /* How long the writeback started above still ran after the rewrite. */
                if (sync_file_range(fd, 0, sizeof page, SYNC_FILE_RANGE_WAIT_BEFORE) < 0) {
                        fprintf(stderr, "rewrite: sync_file_range: %m\n");
                        return 1;
                }
                inflight += now_ns() - b;
                t[i] = (b - a) / 1000;
                sum += t[i];
        }
        qsort(t, (size_t) count, sizeof(uint64_t), cmp_u64);
        printf("rewrite_avg_us=%llu rewrite_median_us=%llu rewrite_max_us=%llu inflight_avg_us=%llu "
               "count=%d\n",
               (unsigned long long) (sum / (uint64_t) count), (unsigned long long) t[count / 2],
               (unsigned long long) t[count - 1], (unsigned long long) (inflight / 1000 / (uint64_t) count),
               count);
        free(t);
        close(fd);
        return 0;
}

static int do_loop_remove(int n) {
        int fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        if (fd < 0 || ioctl(fd, LOOP_CTL_REMOVE, n) < 0) {
                fprintf(stderr, "loop-remove: loop%d: %m\n", n);
                return 1;
        }
        close(fd);
        return 0;
}

static int do_mount_storm(const char *dir, int count, int pause_us) {
        uint64_t a = now_ns();
        for (int i = 0; i < count; i++) {
                if (mount("stablepages-storm", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") < 0) {
                        fprintf(stderr, "mount-storm: mount %s: %m\n", dir);
                        return 1;
                }
                if (umount2(dir, 0) < 0) {
                        fprintf(stderr, "mount-storm: umount %s: %m\n", dir);
                        return 1;
                }
                if (pause_us > 0)
                        usleep((useconds_t) pause_us);
        }
        printf("pairs=%d elapsed_ms=%llu\n", count, (unsigned long long) ((now_ns() - a) / 1000000));
        return 0;
}

static int do_fuse_mount(const char *source, const char *dir) {
        char options[128];
        int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

        if (fd < 0) {
                fprintf(stderr, "fuse-mount: /dev/fuse: %m\n");
                return 1;
        }
        snprintf(options, sizeof options, "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
        if (mount(source, dir, "fuse.sptest", MS_NOSUID | MS_NODEV, options) < 0) {
                fprintf(stderr, "fuse-mount: mount %s: %m\n", dir);
                return 1;
        }
        close(fd);
        return 0;
}

/* fuse-serve: answers request unique with error (a negative errno) or the size bytes at data. */
static int fuse_reply(int fd, uint64_t unique, int error, const void *data, size_t size) {
        struct fuse_out_header h = { .len = (uint32_t) (sizeof h + (error ? 0 : size)),
                                     .error = error,
                                     .unique = unique };
        struct iovec iov[2] = { { &h, sizeof h }, { (void *) data, error ? 0 : size } };
        /* ENOENT: the request was interrupted meanwhile. */
        return writev(fd, iov, 2) < 0 && errno != ENOENT ? -errno : 0;
}

/* The attributes of the root directory (1) or of img (2), whose data is backing's. */
static void fuse_node_attr(int backing, uint64_t node, struct fuse_attr *a) {
        struct stat st = {};

        memset(a, 0, sizeof *a);
        a->ino = node;
        a->blksize = 4096;
        if (node == FUSE_ROOT_ID) {
                a->mode = S_IFDIR | 0755;
                a->nlink = 2;
                return;
        }
        (void) fstat(backing, &st);
        a->mode = S_IFREG | 0644;
        a->nlink = 1;
        a->size = (uint64_t) st.st_size;
        a->blocks = (uint64_t) st.st_blocks;
}

static int do_fuse_serve(const char *dir, const char *file) {
        static char buf[FUSE_MIN_READ_BUFFER + (1 << 20)], data[1 << 20];
        char options[128];
        int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC), backing = open(file, O_RDWR | O_CLOEXEC);

        if (fd < 0 || backing < 0) {
                fprintf(stderr, "fuse-serve: open /dev/fuse or %s: %m\n", file);
                return 1;
        }
        snprintf(options, sizeof options, "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
        if (mount("sptest", dir, "fuse.sptest", MS_NOSUID | MS_NODEV, options) < 0) {
                fprintf(stderr, "fuse-serve: mount %s: %m\n", dir);
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0 && errno == ENODEV)
                        return 0; /* unmounted */
                if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
                        continue;
                if (n < (ssize_t) sizeof(struct fuse_in_header)) {
                        fprintf(stderr, "fuse-serve: read: %m\n");
                        return 1;
                }
                const struct fuse_in_header *in = (const struct fuse_in_header *) buf;
                const char *arg = buf + sizeof *in;
                uint64_t node = in->nodeid;
                int r = 0;

                switch (in->opcode) {
                case FUSE_INIT: {
                        const struct fuse_init_in *i = (const struct fuse_init_in *) arg;
                        struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
                                                   .minor = i->minor < FUSE_KERNEL_MINOR_VERSION
                                                                    ? i->minor
                                                                    : FUSE_KERNEL_MINOR_VERSION,
                                                   .max_readahead = i->max_readahead,
                                                   .max_background = 16,
                                                   .congestion_threshold = 12,
                                                   .max_write = 1 << 20,
                                                   .time_gran = 1,
                                                   .max_pages = 256,
                                                   .flags = FUSE_MAX_PAGES };
                        r = fuse_reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_LOOKUP: {
                        struct fuse_entry_out o = { .nodeid = 2, .generation = 1 }; /* nothing cached */
                        if (node != FUSE_ROOT_ID || strcmp(arg, "img") != 0) {
                                r = fuse_reply(fd, in->unique, -ENOENT, NULL, 0);
                                break;
                        }
                        fuse_node_attr(backing, 2, &o.attr);
                        r = fuse_reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_GETATTR:
                case FUSE_SETATTR: {
                        struct fuse_attr_out o = {};
                        fuse_node_attr(backing, node, &o.attr);
                        r = fuse_reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_OPEN:
                case FUSE_OPENDIR: {
                        struct fuse_open_out o = {};
                        r = fuse_reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_READ: {
                        const struct fuse_read_in *i = (const struct fuse_read_in *) arg;
                        ssize_t k = pread(backing, data, i->size < sizeof data ? i->size : sizeof data,
                                          (off_t) i->offset);
                        r = fuse_reply(fd, in->unique, k < 0 ? -errno : 0, data, k < 0 ? 0 : (size_t) k);
                        break;
                }
                case FUSE_WRITE: {
                        const struct fuse_write_in *i = (const struct fuse_write_in *) arg;
                        ssize_t k = pwrite(backing, arg + sizeof *i, i->size, (off_t) i->offset);
                        struct fuse_write_out o = { .size = k < 0 ? 0 : (uint32_t) k };
                        r = fuse_reply(fd, in->unique, k < 0 ? -errno : 0, &o, sizeof o);
                        break;
                }
                case FUSE_READDIR: /* an empty listing: nothing looks */
                case FUSE_FLUSH:
                case FUSE_RELEASE:
                case FUSE_RELEASEDIR:
                case FUSE_FSYNC:
                case FUSE_DESTROY:
                        r = fuse_reply(fd, in->unique, 0, NULL, 0);
                        break;
                case FUSE_STATFS: {
                        struct fuse_statfs_out o = {
                                .st = { .bsize = 4096, .frsize = 4096, .namelen = 255 }
                        };
                        r = fuse_reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_FORGET:
                case FUSE_BATCH_FORGET:
                case FUSE_INTERRUPT:
                        break; /* no answer */
                default:
                        r = fuse_reply(fd, in->unique, -ENOSYS, NULL, 0);
                }
                if (r < 0) {
                        fprintf(stderr, "fuse-serve: write: %s\n", strerror(-r));
                        return 1;
                }
        }
}

static int do_notify_listen(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char buf[4096];
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || strlen(path) >= sizeof sa.sun_path) {
                fprintf(stderr, "notify-listen: bad socket %s\n", path);
                return 1;
        }
        strcpy(sa.sun_path, path);
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                fprintf(stderr, "notify-listen: bind %s: %m\n", path);
                return 1;
        }
        for (;;) {
                ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, "notify-listen: recv: %m\n");
                        return 1;
                }
                buf[n] = '\0';
                printf("%s%s", buf, n > 0 && buf[n - 1] == '\n' ? "" : "\n");
                fflush(stdout);
        }
}

int main(int argc, char *argv[]) {
        if (argc == 4 && strcmp(argv[1], "rewrite") == 0 && atoi(argv[3]) > 0)
                return do_rewrite(argv[2], atoi(argv[3]));
        if (argc == 3 && strcmp(argv[1], "loop-remove") == 0)
                return do_loop_remove(atoi(argv[2]));
        if ((argc == 4 || argc == 5) && strcmp(argv[1], "mount-storm") == 0 && atoi(argv[3]) > 0)
                return do_mount_storm(argv[2], atoi(argv[3]), argc == 5 ? atoi(argv[4]) : 0);
        if (argc == 4 && strcmp(argv[1], "fuse-mount") == 0)
                return do_fuse_mount(argv[2], argv[3]);
        if (argc == 4 && strcmp(argv[1], "fuse-serve") == 0)
                return do_fuse_serve(argv[2], argv[3]);
        if (argc == 3 && strcmp(argv[1], "notify-listen") == 0)
                return do_notify_listen(argv[2]);
        fprintf(stderr,
                "usage: %s rewrite FILE COUNT | loop-remove N | mount-storm DIR COUNT [PAUSE_US] | "
                "fuse-mount SOURCE DIR | fuse-serve DIR FILE | notify-listen SOCKET\n",
                argv[0]);
        return 2;
}
