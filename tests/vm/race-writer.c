/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stable-pages hazard as a workload: pages modified while they are under writeback.
 *
 *   race-writer [--pages N] [--seconds S] [--read-device DEV] [--unlink | --direct] FILE
 *   race-writer --raw [--pages N] [--seconds S] DEV
 *     Creates FILE with N pages (default 256), writes it back once, maps it shared and, for S
 *     seconds (default 5), lets one thread store into every page without pause while the main
 *     thread writes the file back again and again (sync_file_range WAIT_BEFORE|WRITE|WAIT_AFTER,
 *     which reports write errors). Without stable writes in force the stores land in pages
 *     whose writeback has started; with them, each store waits for the page's writeback.
 *     With --unlink, the file is removed at the end instead of written back once more (fsync):
 *     what its pages last looked like under writeback stays on the device (a mirror's legs keep
 *     any difference, as after swap or a deleted temporary file).
 *     With --direct, no page cache: the thread stores into a buffer that the main thread writes
 *     with O_DIRECT at successive offsets of FILE again and again, the buffer changing while
 *     the device reads it (what no stable-writes flag protects).
 *     With --read-device, a third thread reads the file's blocks straight from DEV (the block
 *     device the filesystem is on; where they are comes from FIEMAP) with O_DIRECT, 64 KiB at a
 *     time, round after round, so that data stored with a tag that does not match it (e.g.
 *     dm-integrity) fails to read before a later write-back repairs it.
 *     With --raw, the same on the block device DEV itself, through its own page cache (what a
 *     VM image or a database on the raw device does): its first N pages are mapped, stored
 *     into and written back, and read back from DEV with O_DIRECT.
 *     Prints one line
 *       syncs=N errors=K first_error=STRING stores=M [reads=R read_errors=E first_read_error=S]
 *     where errors counts write-backs that failed (EIO from the kernel: the device rejected
 *     the data, e.g. a PI guard check) and read_errors the failed device reads, then fsyncs and
 *     exits 0; 1 on setup failures only.
 *
 * The caller reads the kernel log and the device afterwards: this program only makes the
 * race happen and reports what the kernel returned to it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static atomic_bool stop;
static atomic_ulong stores;

typedef struct Region {
        volatile unsigned char *p;
        size_t size;
} Region;

typedef struct Reader {
        int fd;
        off_t start;
        size_t size;
        unsigned long reads, errors;
        char first_error[64];
} Reader;

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Stores into every 64th byte of every page, round after round, until told to stop. */
static void *dirtier(void *arg) {
        const Region *r = arg;
        unsigned long n = 0;

        for (unsigned char v = 1; !atomic_load_explicit(&stop, memory_order_relaxed); v++)
                for (size_t off = 0; off < r->size; off += 64, n++)
                        r->p[off] = (unsigned char) (v + off / PAGE);
        atomic_store(&stores, n);
        return NULL;
}

/* Reads the file's extent on the device, 64 KiB at a time, until told to stop. */
static void *reader(void *arg) {
        Reader *r = arg;
        const size_t chunk = 64 * 1024;
        void *buf;

        if (posix_memalign(&buf, PAGE, chunk) != 0)
                return NULL;
        snprintf(r->first_error, sizeof(r->first_error), "none");
        while (!atomic_load_explicit(&stop, memory_order_relaxed))
                for (size_t off = 0; off < r->size; off += chunk, r->reads++)
                        if (pread(r->fd, buf, chunk, r->start + (off_t) off) < 0 && r->errors++ == 0)
                                snprintf(r->first_error, sizeof(r->first_error), "%s",
                                         strerrorname_np(errno) ?: "?");
        free(buf);
        return NULL;
}

/* The physical byte offset of FILE's data on its device, when it is one extent of SIZE bytes. */
static int file_extent(int fd, size_t size, off_t *ret) {
        struct {
                struct fiemap map;
                struct fiemap_extent extent[2];
        } f = { .map = { .fm_length = size, .fm_flags = FIEMAP_FLAG_SYNC, .fm_extent_count = 2 } };

        if (ioctl(fd, FS_IOC_FIEMAP, &f) < 0)
                return -errno;
        if (f.map.fm_mapped_extents != 1 || f.map.fm_extents[0].fe_length < size)
                return -ERANGE;
        *ret = (off_t) f.map.fm_extents[0].fe_physical;
        return 0;
}

/* --direct: writes the buffer of r with O_DIRECT to path, offset after offset (wrapping), for
 * seconds, while a thread t stores into it; prints "direct_writes=N errors=K stores=M". */
static int direct_writes(const char *path, Region *r, double seconds, pthread_t *t) {
        unsigned long writes = 0, errors = 0;
        off_t off = 0;
        void *buf;
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);

        if (fd < 0 || posix_fallocate(fd, 0, (off_t) r->size * 16) != 0 ||
            posix_memalign(&buf, PAGE, r->size) != 0) {
                perror(path);
                return 1;
        }
        r->p = buf;
        memset(buf, 'x', r->size);
        if (pthread_create(t, NULL, dirtier, r) != 0) {
                fprintf(stderr, "pthread_create failed\n");
                return 1;
        }
        for (double end = now() + seconds; now() < end;
             writes++, off = (off + (off_t) r->size) % ((off_t) r->size * 16))
                if (pwrite(fd, buf, r->size, off) != (ssize_t) r->size)
                        errors++;
        atomic_store(&stop, true);
        pthread_join(*t, NULL);
        printf("direct_writes=%lu errors=%lu stores=%lu\n", writes, errors, atomic_load(&stores));
        return close(fd) < 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "pages", required_argument, NULL, 'p' },
                { "seconds", required_argument, NULL, 's' },
                { "read-device", required_argument, NULL, 'r' },
                { "raw", no_argument, NULL, 'R' },
                { "unlink", no_argument, NULL, 'u' },
                { "direct", no_argument, NULL, 'd' },
                {},
        };
        bool unlink_at_end = false, direct = false;
        long pages = 256;
        double seconds = 5;
        unsigned long syncs = 0, errors = 0;
        char first_error[64] = "none";
        const char *device = NULL;
        bool raw = false;
        Reader rd = { .fd = -1 };
        pthread_t t, tr;
        int c, fd;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'p':
                        pages = strtol(optarg, NULL, 10);
                        break;
                case 's':
                        seconds = strtod(optarg, NULL);
                        break;
                case 'r':
                        device = optarg;
                        break;
                case 'R':
                        raw = true;
                        break;
                case 'u':
                        unlink_at_end = true;
                        break;
                case 'd':
                        direct = true;
                        break;
                default:
                        return 2;
                }
        if (optind != argc - 1 || pages <= 0 || seconds <= 0) {
                fprintf(stderr,
                        "usage: %s [--pages N] [--seconds S] [--read-device DEV] [--unlink | --direct] "
                        "FILE\n"
                        "       %s --raw [--pages N] [--seconds S] DEV\n",
                        argv[0], argv[0]);
                return 2;
        }

        Region r = { .size = (size_t) pages * PAGE };
        if (direct)
                return direct_writes(argv[optind], &r, seconds, &t);
        if (raw)
                device = argv[optind];
        fd = raw ? open(argv[optind], O_RDWR | O_CLOEXEC)
                 : open(argv[optind], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || (!raw && posix_fallocate(fd, 0, (off_t) r.size) != 0)) {
                perror(argv[optind]);
                return 1;
        }
        r.p = mmap(NULL, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (r.p == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        memset((void *) r.p, 'x', r.size);
        if (fsync(fd) < 0) {
                perror("fsync");
                return 1;
        }

        if (device) {
                int e;
                rd.size = r.size;
                rd.fd = open(device, O_RDONLY | O_DIRECT | O_CLOEXEC);
                if (rd.fd < 0) {
                        perror(device);
                        return 1;
                }
                e = raw ? 0 : file_extent(fd, r.size, &rd.start);
                if (e < 0) {
                        fprintf(stderr, "FIEMAP of %s: %s\n", argv[optind], strerror(-e));
                        return 1;
                }
        }
        if (pthread_create(&t, NULL, dirtier, &r) != 0 ||
            (device && pthread_create(&tr, NULL, reader, &rd) != 0)) {
                fprintf(stderr, "pthread_create failed\n");
                return 1;
        }
        for (double end = now() + seconds; now() < end; syncs++)
                if (sync_file_range(fd, 0, 0,
                                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                            SYNC_FILE_RANGE_WAIT_AFTER) < 0) {
                        if (errors++ == 0)
                                snprintf(first_error, sizeof(first_error), "%s",
                                         strerrorname_np(errno) ?: "?");
                }
        atomic_store(&stop, true);
        pthread_join(t, NULL);
        if (device)
                pthread_join(tr, NULL);
        if (unlink_at_end) {
                if (unlink(argv[optind]) < 0) {
                        perror(argv[optind]);
                        return 1;
                }
        } else if (fsync(fd) < 0 && errors++ == 0)
                snprintf(first_error, sizeof(first_error), "%s", strerrorname_np(errno) ?: "?");
        printf("syncs=%lu errors=%lu first_error=%s stores=%lu", syncs, errors, first_error,
               atomic_load(&stores));
        if (device)
                printf(" reads=%lu read_errors=%lu first_read_error=%s", rd.reads, rd.errors,
                       rd.first_error);
        printf("\n");
        return 0;
}
