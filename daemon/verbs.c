/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "dm-table.h"
#include "log.h"
#include "sysfs.h"
#include "util.h"
#include "verbs.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_NO_DEVICE = 4 };

/* Loads config, overrides and facts (of every disk, or of disks and what they stack on);
 * logs config problems. */
static int engine_setup(Engine *e, const EngineOptions *o, char *const *disks) {
        int r = engine_init(e, o);
        if (r < 0)
                return log_error_errno(r, "Cannot initialize: %m");
        r = engine_load_config(e);
        if (r < 0)
                return log_error_errno(r, "Cannot load the configuration: %m");
        for (size_t i = 0; i < e->diags.n; i++) {
                const ConfigDiag *d = &e->diags.items[i];
                if (d->line > 0)
                        log_full(d->level == DIAG_ERROR ? LOG_ERR : LOG_WARNING, "%s:%u: %s", d->file,
                                 d->line, d->message);
                else
                        log_full(d->level == DIAG_ERROR ? LOG_ERR : LOG_WARNING, "%s: %s", d->file,
                                 d->message);
        }
        r = engine_load_overrides(e);
        if (r < 0)
                log_warning_errno(r, "Cannot read runtime overrides in %s, ignoring: %m", e->runtime_dir);
        r = engine_load_learned(e);
        if (r < 0)
                log_warning_errno(r, "Cannot read the learned decisions in %s, ignoring them: %m",
                                  e->state_dir);
        r = engine_scan_for(e, disks);
        if (r < 0)
                return r;
        for (size_t i = 0; i < e->table.n; i++)
                if (e->devices[i].need_problem)
                        log_warning("%s", e->devices[i].need_problem);
        return 0;
}

int verb_apply(const EngineOptions *o, char **names, int n) {
        _cleanup_(engine_done) Engine e = {};
        _cleanup_strv_free_ char **disks = NULL;
        int ret = EXIT_OK;

        if (n <= 0) {
                log_error("apply needs at least one device name.");
                return EXIT_USAGE;
        }
        for (int i = 0; i < n; i++)
                if (!device_name_is_valid(names[i])) {
                        log_error("Invalid device name \"%s\".", names[i]);
                        return EXIT_USAGE;
                }
        /* Only the named disks and what they stack on are read: udev runs this for every
         * disk and partition event, and a machine may have hundreds of disks. */
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *disk = NULL;
                int r = device_disk_of(o->sysfs_root ?: "/sys", names[i], &disk);
                if (r == -ENOMEM)
                        return log_oom(), EXIT_FAIL;
                if (disk && !strv_contains(disks, disk) && strv_extend(&disks, disk) < 0)
                        return log_oom(), EXIT_FAIL;
        }
        static char *const no_disks[] = { NULL };
        if (engine_setup(&e, o, disks ?: no_disks) < 0)
                return EXIT_FAIL;

        for (int i = 0; i < n; i++) {
                _cleanup_(apply_result_done) ApplyResult res = {};
                EngineDevice *d = engine_find(&e, names[i]);

                if (!d) {
                        log_error("%s: no such block device under %s/block.", names[i], e.sysfs_root);
                        ret = MAX(ret, EXIT_NO_DEVICE);
                        continue;
                }
                int r = engine_apply(&e, d, &res);
                if (r == -ENOMEM)
                        return log_oom(), EXIT_FAIL;
                if (r < 0) {
                        log_error("%s", res.message);
                        if (ret == EXIT_OK)
                                ret = EXIT_FAIL;
                } else
                        log_debug("%s", res.message);
        }
        return ret;
}

int verb_dump(const EngineOptions *o, const char *json, char **names, int n) {
        _cleanup_(engine_done) Engine e = {};

        if (engine_setup(&e, o, NULL) < 0)
                return EXIT_FAIL;
        for (int i = 0; i < n; i++)
                if (!engine_find(&e, names[i])) {
                        log_error("%s: no such block device under %s/block.", names[i], e.sysfs_root);
                        return EXIT_NO_DEVICE;
                }
        if (json)
                engine_dump_json(&e, n > 0 ? names : NULL, stdout, streq(json, "pretty"));
        else
                engine_dump_text(&e, stdout);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
}

int verb_udev_facts(const EngineOptions *o, char **names, int n) {
        const char *root = o->sysfs_root ?: "/sys";
        _cleanup_free_ char *devp = NULL, *dmp = NULL, *dev = NULL, *full = NULL;
        _cleanup_strv_free_ char **props = NULL;
        _cleanup_(dm_table_done) DmTable t = {};
        struct stat st;
        dev_t devnum;
        int r;

        if (n != 1 || !device_name_is_valid(names[0])) {
                log_error("udev-facts needs one device name.");
                return EXIT_USAGE;
        }
        devp = strdup_printf("block/%s/dev", names[0]);
        dmp = strdup_printf("block/%s/dm", names[0]);
        if (!devp || !dmp || !(full = path_join(root, dmp)))
                return log_oom(), EXIT_FAIL;
        r = sysfs_read_string(root, devp, &dev);
        if (r < 0 || parse_devnum(dev, &devnum) < 0) {
                log_error("%s: no such disk under %s/block.", names[0], root);
                return EXIT_NO_DEVICE;
        }
        if (stat(full, &st) < 0 || !S_ISDIR(st.st_mode))
                return EXIT_OK; /* not a dm device: nothing only root can read */

        r = dm_table_read_kernel(devnum, &t);
        if (r < 0) {
                log_error_errno(r, "%s: cannot read its device-mapper table (DM_TABLE_STATUS): %m",
                                names[0]);
                return EXIT_FAIL;
        }
        r = dm_table_to_properties(&t, &props);
        if (r < 0)
                return log_oom(), EXIT_FAIL;
        STRV_FOREACH (p, props)
                printf("%s\n", *p);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
}
