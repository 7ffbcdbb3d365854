/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one-shot verbs of stablepagesd (verbs.h): apply (the udev rule's applier), restore, dump and
 * udev-facts, each on the core engine without the Manager. */
#include <assert.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "dm-table.h"
#include "exit-code.h"
#include "log.h"
#include "loop-backing.h"
#include "sysfs.h"
#include "util.h"
#include "verbs.h"

/* Loads config, overrides and facts (of every disk, or of disks and what they stack on);
 * logs config problems. Returns 0, or -EIO when it cannot: a failure (exit 1) whatever the
 * cause, even an -EINVAL (a bad --kernel-release) or an -ENODEV (a disk gone while read). */
static int engine_setup(Engine *e, const EngineOptions *o, char *const *disks) {
        _cleanup_free_ char *note = NULL;
        int r = engine_init(e, o);
        if (r < 0) {
                log_error_errno(r, "Cannot initialize: %m");
                return -EIO;
        }
        r = engine_load_config_in_force(e, &note);
        if (r < 0) {
                log_error_errno(r, "Cannot load the configuration: %m");
                return -EIO;
        }
        for (size_t i = 0; i < e->diags.n; i++) {
                const ConfigDiag *d = &e->diags.items[i];
                if (d->line > 0)
                        log_full(d->level == DIAG_ERROR ? LOG_ERR : LOG_WARNING, "%s:%u: %s", d->file,
                                 d->line, d->message);
                else
                        log_full(d->level == DIAG_ERROR ? LOG_ERR : LOG_WARNING, "%s: %s", d->file,
                                 d->message);
        }
        if (note)
                log_notice("%s.", note);
        r = engine_load_overrides(e);
        if (r < 0)
                log_warning_errno(r, "Cannot read runtime overrides in %s, ignoring: %m", e->runtime_dir);
        r = engine_load_learned(e);
        if (r < 0)
                log_warning_errno(r, "Cannot read the learned decisions in %s, ignoring them: %m",
                                  e->state_dir);
        r = engine_scan_for(e, disks);
        if (r < 0)
                return -EIO;
        for (size_t i = 0; i < e->table.n; i++)
                if (e->devices[i].need_problem)
                        log_warning("%s", e->devices[i].need_problem);
        return 0;
}

/* The disks of names (disk names, partitions mapped to their disk), each once. Returns 0,
 * -EINVAL for an invalid name, or -ENOMEM. */
static int disks_of(const EngineOptions *o, char **names, int n, char ***ret) {
        _cleanup_strv_free_ char **disks = NULL;
        int r;

        for (int i = 0; i < n; i++)
                if (!device_name_is_valid(names[i]))
                        return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "Invalid device name \"%s\".",
                                               names[i]);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *disk = NULL;
                r = device_disk_of(o->sysfs_root ?: "/sys", names[i], &disk);
                if (r == -ENOMEM)
                        return log_oom();
                if (disk && !strv_contains(disks, disk) && strv_extend(&disks, disk) < 0)
                        return log_oom();
        }
        *ret = TAKE_PTR(disks);
        return 0;
}

/* Says, for each disk of e, that its flag moved without the project since its history's last
 * record (someone else wrote it). */
static void log_moved(const Engine *e) {
        for (size_t i = 0; i < e->table.n; i++) {
                const DeviceFacts *f = &e->table.devices[i];
                if (f->moved_from != ATTR_ABSENT)
                        log_warning("%s: queue/stable_writes changed from %d to %d outside stablepages (its "
                                    "history in %s/history says %d last).",
                                    f->name, f->moved_from, f->stable_writes, e->runtime_dir, f->moved_from);
        }
}

/* Whether the event of disk with diskseq (0: none given) is of an earlier disk of that name: a
 * udev worker can run it after the next disk took the name (a dm device made, removed and made
 * again). Its own events apply the new disk; this one must not record its first sight. */
static bool event_is_stale(const EngineOptions *o, const char *disk, uint64_t diskseq) {
        _cleanup_free_ char *attr = strdup_printf("block/%s/diskseq", disk);
        long long now;

        if (diskseq == 0 || !attr || sysfs_read_int(o->sysfs_root ?: "/sys", attr, &now) < 0 ||
            (uint64_t) now == diskseq)
                return false;
        log_info("%s: an event of an earlier disk of this name (diskseq %" PRIu64 ", the disk's is %lld): "
                 "nothing to do.",
                 disk, diskseq, now);
        return true;
}

int verb_apply(const EngineOptions *o, const char *action, uint64_t diskseq, char **names, int n) {
        _cleanup_(engine_done) Engine e = {};
        _cleanup_strv_free_ char **disks = NULL;
        bool missing = false, failed = false;
        int r;

        assert(o);
        assert(names || n <= 0);

        if (n <= 0)
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "apply needs at least one device name.");
        /* Only the named disks and what they stack on are read: udev runs this for every
         * disk and partition event, and a machine may have hundreds of disks. */
        r = disks_of(o, names, n, &disks);
        if (r < 0)
                return r;
        if (n == 1 && strv_length(disks) == 1 && event_is_stale(o, disks[0], diskseq))
                return 0;
        EngineOptions eo = *o;
        eo.record_history = true;
        eo.writer = "udev-applier";
        /* The add of a disk itself (not of a partition: its disk came before) shows the flag the
         * kernel set, before anything wrote it. */
        if (action && streq(action, "add") && n == 1 && strv_contains(disks, names[0]))
                eo.added_disk = names[0];
        static char *const no_disks[] = { NULL };
        r = engine_setup(&e, &eo, disks ?: no_disks);
        if (r < 0)
                return r;
        log_moved(&e);

        for (int i = 0; i < n; i++) {
                _cleanup_(apply_result_done) ApplyResult res = {};
                EngineDevice *d = engine_find(&e, names[i]);

                if (!d) {
                        log_error("%s: no such block device under %s/block.", names[i], e.sysfs_root);
                        missing = true;
                        continue;
                }
                r = engine_apply(&e, d, &res);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0) {
                        log_error("%s", res.message);
                        failed = true;
                } else
                        log_debug("%s", res.message);
        }
        /* A missing device outweighs a refusal or a failed write (each logged with its reason);
         * a disk removed meanwhile (-ENODEV from engine_apply()) is a failure, not a usage slip. */
        return missing ? -ENODEV : failed ? -EIO : 0;
}

int verb_restore(const EngineOptions *o, bool all, char **names, int n) {
        _cleanup_(engine_done) Engine e = {};
        _cleanup_strv_free_ char **disks = NULL;
        bool missing = false, failed = false;
        int r;

        assert(o);
        assert(names || n <= 0);

        if (all == (n > 0))
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL),
                                       "restore needs either --all or device names.");
        r = disks_of(o, names, n, &disks);
        if (r < 0)
                return r;
        EngineOptions eo = *o;
        eo.writer = "restore";
        static char *const no_disks[] = { NULL };
        r = engine_setup(&e, &eo, all ? NULL : disks ?: no_disks);
        if (r < 0)
                return r;
        for (size_t i = 0; i < e.table.n; i++) {
                _cleanup_(apply_result_done) ApplyResult res = {};
                EngineDevice *d = &e.devices[i];

                if (!all && !strv_contains(disks, d->facts->name))
                        continue; /* what a named disk stacks on */
                r = engine_restore(&e, d, &res);
                if (r == -ENOMEM)
                        return log_oom();
                if (r == -EPERM)
                        log_notice("%s", res.message);
                else if (r < 0) {
                        log_error("%s", res.message);
                        failed = true;
                } else
                        log_full(res.changed ? LOG_INFO : LOG_DEBUG, "%s", res.message);
        }
        for (int i = 0; i < n; i++)
                if (!engine_find(&e, names[i])) {
                        log_error("%s: no such block device under %s/block.", names[i], e.sysfs_root);
                        missing = true;
                }
        return missing ? -ENODEV : failed ? -EIO : 0;
}

int verb_dump(const EngineOptions *o, const char *json, char **names, int n) {
        _cleanup_(engine_done) Engine e = {};

        assert(o);
        assert(names || n <= 0);

        int r = engine_setup(&e, o, NULL);
        if (r < 0)
                return r;
        for (int i = 0; i < n; i++)
                if (!engine_find(&e, names[i]))
                        return log_error_errno(SYNTHETIC_ERRNO(ENODEV),
                                               "%s: no such block device under %s/block.", names[i],
                                               e.sysfs_root);
        if (json)
                engine_dump_json(&e, n > 0 ? names : NULL, stdout, streq(json, "pretty"));
        else
                engine_dump_text(&e, stdout);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

/* udev-facts of a loop device: the device under its backing file (loop-backing.h); nothing for
 * another disk that is not a dm device. */
static int udev_facts_loop(const char *root, const char *name, dev_t devnum) {
        _cleanup_free_ char *loop = strdup_printf("%s/block/%s/loop", root, name);
        _cleanup_free_ char *node = strdup_printf("/dev/%s", name);
        _cleanup_strv_free_ char **lines = NULL;
        struct stat st;

        if (!loop || !node)
                return log_oom();
        if (stat(loop, &st) < 0 || !S_ISDIR(st.st_mode))
                return 0; /* neither dm nor loop: nothing only root can read */
        int r = loop_backing_udev_facts(root, name, devnum, node, &lines);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                log_error_errno(r, "%s: cannot ask the kernel for its backing file through %s: %m", name,
                                node);
                return -EIO;
        }
        STRV_FOREACH (l, lines)
                if (startswith(*l, LOOP_BACKING_ERROR_PROPERTY "="))
                        log_warning("%s: %s", name, *l + strlen(LOOP_BACKING_ERROR_PROPERTY "="));
        STRV_FOREACH (l, lines)
                printf("%s\n", *l);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

int verb_udev_facts(const EngineOptions *o, char **names, int n) {
        const char *root = o->sysfs_root ?: "/sys";
        _cleanup_free_ char *devp = NULL, *dmp = NULL, *dev = NULL, *full = NULL;
        _cleanup_strv_free_ char **props = NULL;
        _cleanup_(dm_table_done) DmTable t = {};
        struct stat st;
        dev_t devnum;
        int r;

        assert(o);
        assert(names || n <= 0);

        if (n != 1 || !device_name_is_valid(names[0]))
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "udev-facts needs one device name.");
        devp = strdup_printf("block/%s/dev", names[0]);
        dmp = strdup_printf("block/%s/dm", names[0]);
        if (!devp || !dmp || !(full = path_join(root, dmp)))
                return log_oom();
        r = sysfs_read_string(root, devp, &dev);
        if (r < 0 || parse_devnum(dev, &devnum) < 0)
                return log_error_errno(SYNTHETIC_ERRNO(ENODEV), "%s: no such disk under %s/block.", names[0],
                                       root);
        if (stat(full, &st) < 0 || !S_ISDIR(st.st_mode))
                return udev_facts_loop(root, names[0], devnum);

        r = dm_table_read_kernel(devnum, &t);
        if (r < 0) {
                log_error_errno(r, "%s: cannot read its device-mapper table (DM_TABLE_STATUS): %m",
                                names[0]);
                return -EIO; /* a failure (exit 1), whatever the ioctl's errno (-ENODEV, -EINVAL) */
        }
        r = dm_table_to_properties(&t, &props);
        if (r < 0)
                return log_oom();
        STRV_FOREACH (p, props)
                printf("%s\n", *p);
        return fflush(stdout) == 0 ? 0 : -EIO;
}
