/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The consumers found without the daemon (consumers-read.h). */
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "consumers-read.h"
#include "util.h"

void local_consumers_done(LocalConsumers *l) {
        free(l->mounts);
        strv_free(l->strings);
        swap_areas_done(&l->areas);
        free(l->swaps);
        *l = (LocalConsumers){};
}

dev_t mount_fs_source_devnum(struct libmnt_fs *fs) {
        const char *src = mnt_fs_get_srcpath(fs);
        dev_t devnum = mnt_fs_get_devno(fs);
        struct stat st;

        if (major(devnum) != 0)
                return devnum;
        if (streq(mnt_fs_get_fstype(fs) ?: "", "btrfs") && src && src[0] == '/' && stat(src, &st) == 0 &&
            S_ISBLK(st.st_mode))
                return st.st_rdev;
        return 0;
}

/* A string kept in l, or NULL on -ENOMEM. */
static const char *keep(LocalConsumers *l, const char *s) {
        size_t n = strv_length(l->strings);
        return strv_extend(&l->strings, s ?: "") < 0 ? NULL : l->strings[n];
}

static void libmnt_tablep(struct libmnt_table **t) {
        mnt_unref_table(*t);
}

/* The source of the mount of table with the anonymous device number devnum (btrfs). */
static dev_t table_source(dev_t devnum, void *userdata) {
        struct libmnt_table *t = userdata;
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs;
        dev_t found = 0;

        while (iter && found == 0 && mnt_table_next_fs(t, iter, &fs) == 0)
                if (mnt_fs_get_devno(fs) == devnum)
                        found = mount_fs_source_devnum(fs);
        mnt_free_iter(iter);
        return found;
}

static int read_mounts(const Engine *e, LocalConsumers *l, struct libmnt_table *t) {
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs;
        uint64_t now = now_usec_realtime();
        int r = 0;

        if (!iter)
                return -ENOMEM;
        while (r >= 0 && mnt_table_next_fs(t, iter, &fs) == 0) {
                dev_t src = mount_fs_source_devnum(fs);
                const DeviceFacts *f = src ? device_table_find_devnum(&e->table, src) : NULL;
                const char *options = mnt_fs_get_fs_options(fs);
                ConsumerMount *m;

                if (!f)
                        continue;
                m = realloc(l->mounts, sizeof(ConsumerMount) * (l->n_mounts + 1));
                if (!m) {
                        r = -ENOMEM;
                        break;
                }
                l->mounts = m;
                m[l->n_mounts] = (ConsumerMount){
                        .disk = keep(l, f->name),
                        .target = keep(l, mnt_fs_get_target(fs)),
                        .fstype = keep(l, mnt_fs_get_fstype(fs)),
                        .read_only = options && mnt_optstr_get_option(options, "ro", NULL, NULL) == 0,
                        .effective = stable_writes_in_force(f, e->kernel),
                        .origin = EFFECTIVE_ASSUMED,
                        .since_usec = now,
                        .own_reason = filesystem_own_reason(mnt_fs_get_fstype(fs), options),
                };
                if (!m[l->n_mounts].disk || !m[l->n_mounts].target || !m[l->n_mounts].fstype)
                        r = -ENOMEM;
                l->n_mounts++;
        }
        mnt_free_iter(iter);
        return r;
}

static int read_swaps(const Engine *e, LocalConsumers *l, struct libmnt_table *t) {
        _cleanup_free_ char *text = NULL;
        uint64_t now = now_usec_realtime();
        int r;

        if (read_full_file("/proc/swaps", 1024 * 1024, &text, NULL) < 0)
                return 0; /* no swap support, or no /proc: none */
        r = swap_areas_parse(text, &l->areas);
        if (r < 0)
                return r;
        l->swaps = calloc(l->areas.n + 1, sizeof(ConsumerSwap));
        if (!l->swaps)
                return -ENOMEM;
        for (size_t i = 0; i < l->areas.n; i++) {
                SwapArea *a = &l->areas.items[i];
                const DeviceFacts *f;

                if (swap_area_resolve(a, t ? table_source : NULL, t) < 0 ||
                    !(f = device_table_find_devnum(&e->table, a->devnum)))
                        continue;
                l->swaps[l->n_swaps++] = (ConsumerSwap){
                        .disk = f->name,
                        .path = a->path,
                        .file = a->file,
                        .captured = stable_writes_in_force(f, e->kernel),
                        .origin = EFFECTIVE_ASSUMED,
                        .since_usec = now,
                };
        }
        return 0;
}

int local_consumers_read(const Engine *e, LocalConsumers *ret) {
        _cleanup_(local_consumers_done) LocalConsumers l = {};
        _cleanup_(libmnt_tablep) struct libmnt_table *t = NULL;
        int r;

        *ret = (LocalConsumers){};
        if (!streq(e->sysfs_root, "/sys"))
                return 0;
        t = mnt_new_table_from_file("/proc/self/mountinfo");
        if (t && (r = read_mounts(e, &l, t)) < 0)
                return r;
        r = read_swaps(e, &l, t);
        if (r < 0)
                return r;
        *ret = l;
        l = (LocalConsumers){};
        return 0;
}

ConsumerInputs local_consumers_inputs(const LocalConsumers *l) {
        return (ConsumerInputs){
                .mounts = l->mounts,
                .n_mounts = l->n_mounts,
                .swaps = l->swaps,
                .n_swaps = l->n_swaps,
        };
}
