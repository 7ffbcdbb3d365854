/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reads of sysfs attributes under a root directory (sysfs.h). */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>

#include "sysfs.h"
#include "util.h"

int sysfs_read_string(const char *root, const char *path, char **ret) {
        _cleanup_free_ char *p = path_join(root, path);

        if (!p)
                return -ENOMEM;
        return sysfs_read_string_at(AT_FDCWD, p, ret);
}

int sysfs_read_string_at(int dirfd, const char *path, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        char buf[4096];
        ssize_t k;

        /* O_NONBLOCK: something else than an attribute in its place (a FIFO under a test
         * root) must not block the daemon's only thread. One read(): a sysfs attribute comes
         * whole (open, read, close: the fewest system calls, which is what a scan of a
         * thousand disks costs). */
        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        do
                k = read(fd, buf, sizeof buf - 1);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        buf[k] = '\0';
        buf[strcspn(buf, "\n")] = '\0'; /* the first line */
        char *s = strdup(strstrip_trailing(buf));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int sysfs_read_int(const char *root, const char *path, long long *ret) {
        _cleanup_free_ char *s = NULL;
        int r = sysfs_read_string(root, path, &s);
        if (r < 0)
                return r;
        return parse_int_range(s, LLONG_MIN, LLONG_MAX, ret);
}

int sysfs_read_link_basename(const char *root, const char *path, char **ret) {
        _cleanup_free_ char *p = path_join(root, path);
        char buf[PATH_MAX];

        if (!p)
                return -ENOMEM;
        ssize_t k = readlink(p, buf, sizeof buf - 1);
        if (k < 0)
                return -errno;
        buf[k] = '\0';
        const char *b = strrchr(buf, '/');
        char *s = strdup(b ? b + 1 : buf);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int sysfs_list_dir(const char *root, const char *path, char ***ret) {
        _cleanup_free_ char *p = path_join(root, path);

        if (!p)
                return -ENOMEM;
        return sysfs_list_dir_at(AT_FDCWD, p, ret);
}

int sysfs_list_dir_at(int dirfd, const char *path, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;
        int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
        DIR *d;

        if (fd < 0) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        return 0;
                }
                return -errno;
        }
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (strv_extend_with_size(&l, &n, de->d_name) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
        }
        closedir(d);
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

int sysfs_parse_bool01(const char *value) {
        long long v;
        if (parse_int_range(value, 0, 1, &v) < 0)
                return -EINVAL;
        return (int) v;
}
