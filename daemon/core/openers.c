/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The processes holding a block device open for writing (openers.h). */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "openers.h"
#include "util.h"

void openers_done(Openers *o) {
        free(o->items);
        *o = (Openers){};
}

static bool devnum_in(dev_t d, const dev_t *devnums, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (devnums[i] == d)
                        return true;
        return false;
}

/* The open flags of descriptor fd of the process whose /proc directory is pid_fd, or -errno. */
static long fd_flags(int pid_fd, const char *fd) {
        _cleanup_free_ char *path = strdup_printf("fdinfo/%s", fd);
        _cleanup_close_ int f = -EBADF;
        char buf[512];
        ssize_t n;

        if (!path)
                return -ENOMEM;
        f = openat(pid_fd, path, O_RDONLY | O_CLOEXEC);
        if (f < 0)
                return -errno;
        n = read(f, buf, sizeof buf - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        const char *p = strstr(buf, "flags:");
        return p ? strtol(p + strlen("flags:"), NULL, 8) : -EBADMSG;
}

static int add(Openers *o, pid_t pid, int pid_fd, dev_t devnum, bool direct) {
        for (size_t i = 0; i < o->n; i++)
                if (o->items[i].pid == pid && o->items[i].devnum == devnum) {
                        o->items[i].direct = o->items[i].direct && direct; /* buffered if any is */
                        return 0;
                }
        Opener *items = realloc(o->items, sizeof(Opener) * (o->n + 1));
        if (!items)
                return -ENOMEM;
        o->items = items;
        Opener *x = &items[o->n++];
        *x = (Opener){ .pid = pid, .devnum = devnum, .direct = direct };
        _cleanup_close_ int f = openat(pid_fd, "comm", O_RDONLY | O_CLOEXEC);
        ssize_t n = f >= 0 ? read(f, x->comm, sizeof x->comm - 1) : -1;
        x->comm[n > 0 ? n : 0] = '\0';
        strstrip_trailing(x->comm);
        if (!x->comm[0])
                strcpy(x->comm, "?");
        return 0;
}

/* Adds the descriptors of one process. Returns 0, or -ENOMEM. */
static int scan_pid(Openers *o, int proc_fd, const char *pid_name, const dev_t *devnums, size_t n) {
        _cleanup_close_ int pid_fd = openat(proc_fd, pid_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd_dir;

        if (pid_fd < 0)
                return 0; /* gone */
        fd_dir = openat(pid_fd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd_dir < 0) {
                o->uninspectable += errno == EACCES || errno == EPERM;
                return 0;
        }
        d = fdopendir(fd_dir);
        if (!d) {
                close(fd_dir);
                return 0;
        }
        while ((de = readdir(d))) {
                struct stat st;
                long flags;

                if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, 0) < 0 ||
                    !S_ISBLK(st.st_mode) || !devnum_in(st.st_rdev, devnums, n))
                        continue;
                flags = fd_flags(pid_fd, de->d_name);
                if (flags == -ENOMEM)
                        return -ENOMEM;
                if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
                        continue;
                int r = add(o, (pid_t) atoi(pid_name), pid_fd, st.st_rdev, flags & O_DIRECT);
                if (r < 0)
                        return r;
        }
        return 0;
}

int openers_scan(const char *proc_root, const dev_t *devnums, size_t n, Openers *ret) {
        _cleanup_(openers_done) Openers o = {};
        _cleanup_closedir_ DIR *d = opendir(proc_root ?: "/proc");
        struct dirent *de;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                if (*end || pid <= 0)
                        continue;
                int r = scan_pid(&o, dirfd(d), de->d_name, devnums, n);
                if (r < 0)
                        return r;
        }
        *ret = o;
        o = (Openers){};
        return 0;
}

char *openers_describe(const Openers *o, const char *disk) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        if (o->n == 0)
                fprintf(f, "no process seen with /dev/%s open for writing", disk);
        else
                fprintf(f, "processes with /dev/%s open for writing:", disk);
        for (size_t i = 0; i < o->n; i++)
                fprintf(f, "%s PID %d (%s%s)", i == 0 ? "" : ",", (int) o->items[i].pid, o->items[i].comm,
                        o->items[i].direct ? ", O_DIRECT: not through the page cache" : ", buffered");
        if (o->uninspectable > 0)
                fprintf(f, "; %u other process%s could not be inspected (no ptrace access to them)",
                        o->uninspectable, o->uninspectable == 1 ? "" : "es");
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
