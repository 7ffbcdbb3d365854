/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The device holding a loop device's backing file (loop-backing.h), found without ever waiting
 * on the file's filesystem. */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "bounded.h"
#include "loop-backing.h"
#include "sysfs.h"
#include "util.h"

int loop_backing_from_record(char *const *properties, uint64_t diskseq, dev_t *ret,
                             const char **ret_reason) {
        const char *seq = strv_find_value(properties, LOOP_DISKSEQ_PROPERTY);
        const char *devnum = strv_find_value(properties, LOOP_BACKING_PROPERTY);
        const char *error = strv_find_value(properties, LOOP_BACKING_ERROR_PROPERTY);
        char buf[32];

        snprintf(buf, sizeof buf, "%" PRIu64, diskseq);
        if (!seq || !streq(seq, buf))
                return 0;
        if (!isempty(devnum) && parse_devnum(devnum, ret) >= 0)
                return 1;
        if (isempty(error))
                return 0;
        *ret_reason = error;
        return -EIO;
}

static int stat_dev(void *userdata, uint64_t *ret) {
        struct stat st;

        if (stat(userdata, &st) < 0)
                return -errno;
        *ret = st.st_dev;
        return 0;
}

int loop_backing_stat(const char *path, void *userdata, dev_t *ret) {
        uint64_t dev;
        int r = bounded_call(stat_dev, (void *) path, LOOP_BACKING_TIMEOUT_USEC, &dev);

        if (r < 0)
                return r;
        *ret = (dev_t) dev;
        return 0;
}

static int get_status(void *userdata, uint64_t *ret) {
        struct loop_info64 info = {};

        if (ioctl(*(int *) userdata, LOOP_GET_STATUS64, &info) < 0)
                return -errno;
        *ret = info.lo_device; /* the kernel's huge_encode_dev(): what makedev() makes */
        return 0;
}

static int read_diskseq(const char *sysfs_root, const char *name, uint64_t *ret) {
        _cleanup_free_ char *p = strdup_printf("block/%s/diskseq", name), *s = NULL;
        int r = p ? sysfs_read_string(sysfs_root, p, &s) : -ENOMEM;

        if (r == -ENOENT) { /* a kernel without diskseq (before 5.15) */
                *ret = 0;
                return 0;
        }
        if (r < 0)
                return r;
        *ret = strtoull(s, NULL, 10); /* as device.c reads it */
        return 0;
}

int loop_backing_udev_facts(const char *sysfs_root, const char *name, dev_t devnum, const char *node,
                            char ***ret_lines) {
        _cleanup_strv_free_ char **lines = NULL;
        _cleanup_close_ int fd = -EBADF;
        uint64_t before, after, dev = 0;
        struct stat st;
        char buf[32];
        int r;

        *ret_lines = NULL;
        fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISBLK(st.st_mode) || st.st_rdev != devnum)
                return -ENODEV; /* not this loop device's node */
        if ((r = read_diskseq(sysfs_root, name, &before)) < 0)
                return r;
        r = bounded_call(get_status, &fd, LOOP_BACKING_TIMEOUT_USEC, &dev);
        if (r == -ENXIO)
                return 0; /* no file attached */
        if (r == -ENOMEM || read_diskseq(sysfs_root, name, &after) < 0 || after != before)
                return r == -ENOMEM ? r : 0;
        if (strv_extendf(&lines, LOOP_DISKSEQ_PROPERTY "=%" PRIu64, before) < 0)
                return -ENOMEM;
        if (r >= 0)
                r = strv_extendf(&lines, LOOP_BACKING_PROPERTY "=%s", format_devnum((dev_t) dev, buf));
        else if (r == -ETIMEDOUT)
                r = strv_extendf(&lines,
                                 LOOP_BACKING_ERROR_PROPERTY "=LOOP_GET_STATUS64 got no answer from the "
                                                             "backing file's filesystem within %llu s",
                                 (unsigned long long) (LOOP_BACKING_TIMEOUT_USEC / USEC_PER_SEC));
        else
                r = strv_extendf(&lines, LOOP_BACKING_ERROR_PROPERTY "=LOOP_GET_STATUS64: %s", strerror(-r));
        if (r < 0)
                return r;
        *ret_lines = TAKE_PTR(lines);
        return 0;
}
