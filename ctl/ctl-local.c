/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* status and explain without the daemon: the engine set up here, read-only, from sysfs. */
#include "ctl-consumers.h"
#include "ctl-local.h"
#include "ctl-show.h"
#include "ctl.h"
#include "engine.h"
#include "identity.h"
#include "log.h"
#include "policy.h"
#include "table.h"
#include "util.h"

static void say_fallback(void) {
        fprintf(stderr, "stablepagesd is not running: reading sysfs directly (mounts and swap areas assumed "
                        "to run with the flag as it is now, no stall figures).\n");
}

/* Sets up an engine the way stablepagesd would, read-only. Returns 0, or -EIO when it cannot
 * (logged): a failure, even for an -EINVAL of a bad override file or an -ENODEV of a disk gone. */
static int local_engine(Engine *e) {
        _cleanup_free_ char *file = NULL, *dir = NULL;
        EngineOptions o = {};

        if (arg_config_dir) {
                file = path_join(arg_config_dir, "stablepages.conf");
                dir = path_join(arg_config_dir, "stablepages.conf.d");
                if (!file || !dir)
                        return log_oom();
                o.config_file = file;
                o.dropin_dir = dir;
        }
        int r = engine_init(e, &o);
        if (r < 0) {
                log_error_errno(r, "Cannot initialize: %m");
                return -EIO;
        }
        if ((r = engine_load_config(e)) < 0 || (r = engine_load_overrides(e)) < 0 ||
            (r = engine_load_learned(e)) < 0 || (r = engine_scan(e)) < 0) {
                log_error_errno(r, "Cannot read the devices: %m");
                return -EIO;
        }
        return 0;
}

/* What the disks (every disk when NULL) say without the daemon: their consumers' hazards, and
 * flags off where they are needed. */
static void say_local_hazards(const Engine *e, const ConsumerSet *consumers, char *const *disks) {
        for (size_t i = 0; i < e->table.n; i++) {
                const EngineDevice *d = &e->devices[i];
                if (disks && !strv_contains(disks, d->facts->name))
                        continue;
                ctl_say_consumer_hazards(d->facts->name, consumer_set_find(consumers, d->facts->name));
                if (!d->facts->hidden && need_is_protected(d->class.need) && !d->class.in_force &&
                    d->facts->stable_writes != ATTR_ABSENT)
                        ctl_say_flag_off(d->facts->name, need_to_string(d->class.need),
                                         d->class.reasons ? d->class.reasons[0] : NULL);
        }
}

/* Maps each name (disk or partition) to its disk, each disk once, as ctl_resolve_names() does
 * through the daemon. Returns 0, or -ENODEV for a name that is no block device (logged). */
static int local_resolve_names(Engine *e, int argc, char **argv, char ***ret) {
        _cleanup_strv_free_ char **disks = NULL;

        for (int i = 0; i < argc; i++) {
                EngineDevice *d = engine_find(e, argv[i]);
                if (!d)
                        return log_error_errno(SYNTHETIC_ERRNO(ENODEV), "%s: no such block device.",
                                               argv[i]);
                if (!strv_contains(disks, d->facts->name) && strv_extend(&disks, d->facts->name) < 0)
                        return log_oom();
        }
        *ret = TAKE_PTR(disks);
        return 0;
}

int ctl_status_local(int argc, char **argv) {
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_strv_free_ char **disks = NULL;
        _cleanup_(consumer_set_done) ConsumerSet consumers = {};

        say_fallback();
        int r = local_engine(&e);
        if (r < 0)
                return r;
        r = local_resolve_names(&e, argc, argv, &disks);
        if (r < 0)
                return r;
        if (arg_json != JSON_OFF) {
                engine_dump_json(&e, disks, stdout, arg_json == JSON_PRETTY);
                return 0;
        }
        r = ctl_consumers_local(&e, &consumers);
        if (r < 0)
                return r;
        t = table_new(ctl_status_header);
        if (!t)
                return log_oom();
        for (size_t i = 0; i < e.table.n; i++) {
                const EngineDevice *d = &e.devices[i];
                if (disks && !strv_contains(disks, d->facts->name))
                        continue;
                const DeviceConsumers *c = consumer_set_find(&consumers, d->facts->name);
                _cleanup_free_ char *summary = consumers_summary(c), *mounts = ctl_mounts_summary(c);
                if (!summary || !mounts)
                        return log_oom();
                const char *row[] = { d->facts->name,
                                      need_to_string(d->class.need),
                                      kernel_state_to_string(d->facts->stable_writes, d->class.in_force),
                                      desired_to_string(d->decision.desired),
                                      mounts,
                                      summary,
                                      "-" };
                if (table_add_row(t, row) < 0)
                        return log_oom();
        }
        _cleanup_(table_freep) Table *o = table_new(ctl_overrides_header);
        OverrideEntry *entries = NULL;
        size_t n = 0;
        if (!o || engine_list_overrides(&e, disks, &entries, &n) < 0)
                return log_oom();
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = ctl_overrides_add(o, entries[i].disk, setting_to_string(entries[i].setting),
                                      entries[i].force, entries[i].scope, entries[i].binding,
                                      entries[i].source);
        override_entries_free(entries, n);
        if (r < 0)
                return log_oom();
        ctl_pager_open();
        table_print(t, stdout, arg_legend);
        ctl_overrides_print(o);
        say_local_hazards(&e, &consumers, disks);
        return 0;
}

int ctl_explain_local(const char *name) {
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(consumer_set_done) ConsumerSet consumers = {};

        say_fallback();
        int r = local_engine(&e);
        if (r < 0)
                return r;
        EngineDevice *d = engine_find(&e, name);
        if (!d)
                return log_error_errno(SYNTHETIC_ERRNO(ENODEV), "%s: no such block device.", name);
        char buf[32];
        printf("%s (%s, %s): need %s\n", d->facts->name, format_devnum(d->facts->devnum, buf),
               device_kind_to_string(d->facts->kind), need_to_string(d->class.need));
        ctl_print_lines("because:", d->class.reasons);
        printf("  %-9sstable writes %s (queue/stable_writes=%d)\n",
               "kernel:", kernel_state_to_string(d->facts->stable_writes, d->class.in_force),
               d->facts->stable_writes);
        printf("  %-9s%s (%s): %s\n", "desired:", desired_to_string(d->decision.desired),
               desired_source_to_string(d->decision.source), d->decision.reason);
        printf("  %-9s%s\n", "setting:", setting_to_string(d->setting));
        ctl_print_override(d->override_scope, d->override_binding, d->override_source, d->facts->diskseq);
        _cleanup_(stable_id_done) StableId id = {};
        _cleanup_free_ char *match =
                stable_id_pick(d->facts, &e.table, false, &id, NULL) >= 0 ? stable_id_match_text(&id) : NULL;
        ctl_print_stable_id(match);
        if (d->need_problem)
                printf("  %-9s%s\n", "problem:", d->need_problem);
        r = ctl_consumers_local(&e, &consumers);
        if (r < 0)
                return r;
        ctl_print_consumers(consumer_set_find(&consumers, d->facts->name));
        say_local_hazards(&e, &consumers, (char *[]){ d->facts->name, NULL });
        if (d->learned != LEARNED_NONE)
                ctl_print_learned(learned_to_string(d->learned), d->learned_since_usec, d->learned_reason);
        return 0;
}
