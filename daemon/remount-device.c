/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Step 3: the filesystem's device: whether the end of its superblock can be seen, and whether
 * it can be mounted again. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "remount-cycle-internal.h"
#include "util.h"

/* The path to open the source device by: the recorded source when it is that device, else
 * /dev/block/MAJ:MIN. */
void remount_source_path(const RemountPlan *p, char *buf, size_t size) {
        struct stat st;

        if (p->source && stat(p->source, &st) >= 0 && S_ISBLK(st.st_mode) && st.st_rdev == p->source_devnum)
                snprintf(buf, size, "%s", p->source);
        else
                snprintf(buf, size, "/dev/block/%u:%u", major(p->source_devnum), minor(p->source_devnum));
}

/* The kernel's directory of the superblock of p's filesystem (/sys/fs/TYPE/NAME, named
 * after the block device: sb->s_id) into buf, for the types that have one; "" otherwise. It
 * exists exactly as long as the superblock, and a new superblock's has a new inode. */
void remount_superblock_dir(const RemountPlan *p, char *buf, size_t size) {
        static const char *const with_sysfs[] = { "ext4", "xfs", "f2fs" };
        char link[64], target[PATH_MAX];
        ssize_t n;

        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(with_sysfs); i++)
                if (streq(p->fstype, with_sysfs[i])) {
                        snprintf(link, sizeof link, "/sys/dev/block/%u:%u", major(p->source_devnum),
                                 minor(p->source_devnum));
                        n = readlink(link, target, sizeof target - 1);
                        if (n <= 0)
                                return;
                        target[n] = '\0';
                        snprintf(buf, size, "/sys/fs/%s/%s", p->fstype, strrchr(target, '/') + 1);
                        return;
                }
}

/* Step 3. Finds how the superblock's end will be seen, and records the identity of the
 * superblock now. Returns 0, or 1 with a sentence in *ret_reason. */
int cycle_superblock_setup(Cycle *c, char **ret_reason) {
        const RemountPlan *p = c->plan;
        char source[PATH_MAX];
        struct stat st;
        int fd;

        remount_superblock_dir(p, c->sb_dir, sizeof c->sb_dir);
        if (c->sb_dir[0] && stat(c->sb_dir, &st) >= 0) {
                c->journal->sb_ino = (uint64_t) st.st_ino;
                return 0;
        }
        c->sb_dir[0] = '\0';
        /* Else the device is opened with O_EXCL after the unmount: it must open at all. */
        remount_source_path(p, source, sizeof source);
        fd = open(source, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
                close(fd);
                return 0;
        }
        *ret_reason = strdup_printf(
                "there is no way to see that its superblock goes away at the unmount: %s has no "
                "/sys/fs/%s directory here and %s cannot be opened (%s%s)",
                p->fstype, p->fstype, source, strerror(errno),
                errno == EPERM ? ": the service's DevicePolicy= denies block devices" : "");
        return *ret_reason ? 1 : -ENOMEM;
}

/* After the unmount: 1 when the superblock is gone, 0 when it lives on, -errno when that
 * cannot be told (never read as gone). */
int cycle_superblock_gone(Cycle *c) {
        char source[PATH_MAX];
        int fd;

        if (c->sb_dir[0]) {
                struct stat st;
                if (stat(c->sb_dir, &st) >= 0)
                        return (uint64_t) st.st_ino == c->journal->sb_ino ? 0 : 1;
                return errno == ENOENT ? 1 : -errno;
        }
        remount_source_path(c->plan, source, sizeof source);
        fd = open(source, O_RDONLY | O_EXCL | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
                close(fd);
                return 1;
        }
        return errno == EBUSY ? 0 : -errno;
}

/* The daemon's own mount(2) opens the device from this process's cgroup: a device policy
 * (DevicePolicy=closed) makes it fail with EPERM, after the unmount. Checked before. */
int cycle_check_mountable(Cycle *c, char **ret_reason) {
        char source[PATH_MAX];
        bool rw = !mnt_optstr_get_option(c->plan->vfs_options, "rw", NULL, NULL);
        int fd;

        remount_source_path(c->plan, source, sizeof source);
        fd = open(source, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
                close(fd);
                return 0;
        }
        *ret_reason = strdup_printf("it could not be mounted again: %s cannot be opened %s (%s%s)", source,
                                    rw ? "read-write" : "read-only", strerror(errno),
                                    errno == EPERM ? ": a device policy denies it" : "");
        return *ret_reason ? 1 : -ENOMEM;
}
