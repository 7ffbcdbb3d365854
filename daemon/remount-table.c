/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cycle's lookups in a mount table: a mount by id, the mount visible on a path, and the
 * mounts of the cycle's filesystem. */
#include <sys/stat.h>

#include "remount-cycle-internal.h"
#include "util.h"

void remount_table_unrefp(struct libmnt_table **t) {
        mnt_unref_table(*t);
}

/* The entry of the mount table with that id (and devnum and target when target is given),
 * or NULL. */
struct libmnt_fs *remount_table_find(struct libmnt_table *t, int id, dev_t devnum, const char *target) {
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs, *found = NULL;

        if (!iter)
                return NULL;
        while (mnt_table_next_fs(t, iter, &fs) == 0)
                if (mnt_fs_get_id(fs) == id && (!target || (mnt_fs_get_devno(fs) == devnum &&
                                                            streq(mnt_fs_get_target(fs) ?: "", target)))) {
                        found = fs;
                        break;
                }
        mnt_free_iter(iter);
        return found;
}

/* The mount visible on target (the last one mounted there), or NULL. */
struct libmnt_fs *remount_table_top(struct libmnt_table *t, const char *target) {
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_BACKWARD);
        struct libmnt_fs *fs, *found = NULL;

        if (!iter)
                return NULL;
        while (mnt_table_next_fs(t, iter, &fs) == 0)
                if (streq(mnt_fs_get_target(fs) ?: "", target)) {
                        found = fs;
                        break;
                }
        mnt_free_iter(iter);
        return found;
}

bool remount_mountinfo_has(const char *path, int id, dev_t devnum, const char *target) {
        _cleanup_(remount_table_unrefp) struct libmnt_table *t = mnt_new_table_from_file(path);
        return t && remount_table_find(t, id, devnum, target);
}

/* A mount of our filesystem: its type, and its device (btrfs: the source, as the superblock
 * has an anonymous device number). */
bool remount_is_ours(const RemountPlan *p, struct libmnt_fs *fs) {
        struct stat st;
        const char *source = mnt_fs_get_source(fs);

        if (!streq(mnt_fs_get_fstype(fs) ?: "", p->fstype))
                return false;
        if (mnt_fs_get_devno(fs) == p->devnum)
                return true;
        return source && stat(source, &st) >= 0 && S_ISBLK(st.st_mode) && st.st_rdev == p->source_devnum;
}

/* Our filesystem mounted anywhere but on target, or NULL. */
struct libmnt_fs *remount_table_find_elsewhere(struct libmnt_table *t, const RemountPlan *p) {
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs, *found = NULL;

        if (!iter)
                return NULL;
        while (mnt_table_next_fs(t, iter, &fs) == 0)
                if (remount_is_ours(p, fs) && !streq(mnt_fs_get_target(fs) ?: "", p->target)) {
                        found = fs;
                        break;
                }
        mnt_free_iter(iter);
        return found;
}
