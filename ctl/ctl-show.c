/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* status and explain: from the daemon over D-Bus, or from sysfs when it is not running. */
#include <inttypes.h>
#include <time.h>

#include "bus-api.h"
#include "ctl.h"
#include "engine.h"
#include "identity.h"
#include "log.h"
#include "policy.h"
#include "table.h"
#include "util.h"

static const char *const status_header[] = { "DEVICE", "NEED",      "KERNEL", "DESIRED",
                                             "MOUNTS", "STALL-P99", NULL };

static const char *const overrides_header[] = { "OVERRIDE", "SETTING", "SCOPE", "BOUND-TO", "SOURCE", NULL };

/* Adds one override to the overrides table: the disk it applies to ("-" for none present). */
static int overrides_add(Table *t, const char *disk, const char *setting, bool force, const char *scope,
                         const char *binding, const char *source) {
        _cleanup_free_ char *what = strdup_printf("%s%s", setting, force ? " (force)" : "");
        if (!what)
                return -ENOMEM;
        const char *row[] = { isempty(disk) ? "-" : disk, what, scope, binding, source };
        return table_add_row(t, row);
}

/* Prints the overrides table after the devices table, when there is any override. */
static void overrides_print(const Table *t) {
        if (t->n_rows <= 1)
                return;
        putchar('\n');
        table_print(t, stdout, arg_legend);
}

static void say_fallback(void) {
        fprintf(stderr, "stablepagesd is not running: reading sysfs directly "
                        "(no mount state, no stall figures).\n");
}

/* Sets up an engine the way stablepagesd would, read-only. */
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
        if (r < 0)
                return log_error_errno(r, "Cannot initialize: %m");
        if ((r = engine_load_config(e)) < 0 || (r = engine_load_overrides(e)) < 0 ||
            (r = engine_load_learned(e)) < 0 || (r = engine_scan(e)) < 0)
                return log_error_errno(r, "Cannot read the devices: %m");
        return 0;
}

static int check_local_names(Engine *e, int argc, char **argv) {
        for (int i = 0; i < argc; i++)
                if (!engine_find(e, argv[i])) {
                        log_error("%s: no such block device.", argv[i]);
                        return EXIT_NO_DEVICE;
                }
        return EXIT_OK;
}

static int status_local(int argc, char **argv) {
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(table_freep) Table *t = NULL;

        say_fallback();
        if (local_engine(&e) < 0)
                return EXIT_FAIL;
        int r = check_local_names(&e, argc, argv);
        if (r != EXIT_OK)
                return r;
        if (arg_json != JSON_OFF) {
                engine_dump_json(&e, argc > 0 ? argv : NULL, stdout, arg_json == JSON_PRETTY);
                return EXIT_OK;
        }
        t = table_new(status_header);
        if (!t)
                return log_oom(), EXIT_FAIL;
        for (size_t i = 0; i < e.table.n; i++) {
                const EngineDevice *d = &e.devices[i];
                if (argc > 0 && !strv_contains(argv, d->facts->name))
                        continue;
                const char *row[] = { d->facts->name,
                                      need_to_string(d->class.need),
                                      kernel_state_to_string(d->facts->stable_writes, d->class.in_force),
                                      desired_to_string(d->decision.desired),
                                      "?",
                                      "-" };
                if (table_add_row(t, row) < 0)
                        return log_oom(), EXIT_FAIL;
        }
        _cleanup_(table_freep) Table *o = table_new(overrides_header);
        OverrideEntry *entries = NULL;
        size_t n = 0;
        if (!o || engine_list_overrides(&e, argc > 0 ? argv : NULL, &entries, &n) < 0)
                return log_oom(), EXIT_FAIL;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = overrides_add(o, entries[i].disk, setting_to_string(entries[i].setting),
                                  entries[i].force, entries[i].scope, entries[i].binding, entries[i].source);
        override_entries_free(entries, n);
        if (r < 0)
                return log_oom(), EXIT_FAIL;
        ctl_pager_open();
        table_print(t, stdout, arg_legend);
        overrides_print(o);
        return EXIT_OK;
}

/* Maps each name (disk or partition) to its disk through the daemon. */
static int resolve_names(sd_bus *bus, int argc, char **argv, char ***ret) {
        _cleanup_strv_free_ char **disks = NULL;

        for (int i = 0; i < argc; i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                const char *path;
                _cleanup_free_ char *disk = NULL;

                int r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "GetDevice",
                                           &error, &reply, "s", argv[i]);
                if (r < 0)
                        return ctl_call_error(argv[i], &error, r);
                r = sd_bus_message_read(reply, "o", &path);
                if (r < 0)
                        return log_error_errno(r, "Bad reply: %m"), EXIT_FAIL;
                r = sd_bus_path_decode(path, BUS_DEVICE_PREFIX, &disk);
                if (r <= 0)
                        return log_error("Bad device path %s.", path), EXIT_FAIL;
                if (strv_extend(&disks, disk) < 0)
                        return log_oom(), EXIT_FAIL;
        }
        *ret = TAKE_PTR(disks);
        return EXIT_OK;
}

int verb_status(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_strv_free_ char **disks = NULL;
        int r;

        if (ctl_bus_open(&bus) < 0 || !ctl_daemon_running(bus))
                return status_local(argc, argv);

        r = resolve_names(bus, argc, argv, &disks);
        if (r != EXIT_OK)
                return r;

        if (arg_json != JSON_OFF) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
                const char *json;

                r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE,
                                                   "DumpJSON");
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, disks);
                if (r >= 0)
                        r = sd_bus_message_append(m, "t",
                                                  arg_json == JSON_PRETTY ? DUMP_FLAG_PRETTY : UINT64_C(0));
                if (r < 0)
                        return log_error_errno(r, "Cannot build the call: %m"), EXIT_FAIL;
                r = sd_bus_call(bus, m, 0, &error, &reply);
                if (r < 0)
                        return ctl_call_error("status", &error, r);
                r = sd_bus_message_read(reply, "s", &json);
                if (r < 0)
                        return log_error_errno(r, "Bad reply: %m"), EXIT_FAIL;
                fputs(json, stdout);
                if (!*json || json[strlen(json) - 1] != '\n')
                        fputc('\n', stdout);
                return EXIT_OK;
        }

        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "ListDevices", &error, &reply,
                               "");
        if (r < 0)
                return ctl_call_error("status", &error, r);
        if (arg_legend) {
                _cleanup_free_ char *mode = NULL, *why = NULL;
                if (sd_bus_get_property_string(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "StallProbe",
                                               NULL, &mode) >= 0 &&
                    sd_bus_get_property_string(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE,
                                               "StallProbeReason", NULL, &why) >= 0)
                        printf("Stall probe: %s (%s)\n\n", mode, why);
        }
        t = table_new(status_header);
        if (!t)
                return log_oom(), EXIT_FAIL;
        r = sd_bus_message_enter_container(reply, 'a', "(sossssbt)");
        if (r < 0)
                return log_error_errno(r, "Bad reply: %m"), EXIT_FAIL;
        for (;;) {
                const char *name, *path, *need, *kernel, *desired, *mounts;
                int pending;
                uint64_t p99;
                char p99s[32] = "-";

                r = sd_bus_message_read(reply, "(sossssbt)", &name, &path, &need, &kernel, &desired, &mounts,
                                        &pending, &p99);
                if (r < 0)
                        return log_error_errno(r, "Bad reply: %m"), EXIT_FAIL;
                if (r == 0)
                        break;
                if (strv_length(disks) > 0 && !strv_contains(disks, name))
                        continue;
                if (p99 == 0)
                        snprintf(p99s, sizeof p99s, "none"); /* no waits: there is no p99 */
                else if (p99 != STALL_UNMEASURED_USEC) {
                        if (p99 >= 10000)
                                snprintf(p99s, sizeof p99s, "%" PRIu64 "ms", p99 / 1000);
                        else
                                snprintf(p99s, sizeof p99s, "%" PRIu64 "us", p99);
                }
                const char *row[] = { name, need, kernel, desired, isempty(mounts) ? "-" : mounts, p99s };
                if (table_add_row(t, row) < 0)
                        return log_oom(), EXIT_FAIL;
        }

        /* Which identity each override is bound to: a disk, not a name. */
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *list = NULL;
        _cleanup_(table_freep) Table *o = table_new(overrides_header);
        if (!o)
                return log_oom(), EXIT_FAIL;
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "ListOverrides", &error,
                               &list, "");
        if (r < 0)
                return ctl_call_error("status", &error, r);
        r = sd_bus_message_enter_container(list, 'a', "(ssbsss)");
        while (r >= 0) {
                const char *disk, *setting, *scope, *binding, *source;
                int force;
                r = sd_bus_message_read(list, "(ssbsss)", &disk, &setting, &force, &scope, &binding,
                                        &source);
                if (r <= 0)
                        break;
                if (strv_length(disks) > 0 && !strv_contains(disks, disk))
                        continue;
                r = overrides_add(o, disk, setting, force, scope, binding, source);
        }
        if (r == -ENOMEM)
                return log_oom(), EXIT_FAIL;
        if (r < 0)
                return log_error_errno(r, "Bad reply: %m"), EXIT_FAIL;
        ctl_pager_open();
        table_print(t, stdout, arg_legend);
        overrides_print(o);
        return EXIT_OK;
}

static void print_reasons(const char *label, char *const *reasons) {
        bool first = true;
        STRV_FOREACH (s, reasons) {
                printf("  %-9s%s\n", first ? label : "", *s);
                first = false;
        }
}

/* The override line of explain: what it is bound to, and where it is kept. */
static void print_override(const char *scope, const char *binding, const char *source, uint64_t diskseq) {
        if (isempty(scope))
                printf("  %-9sno override (this disk: diskseq %" PRIu64 ")\n", "binding:", diskseq);
        else if (streq(scope, "runtime"))
                printf("  %-9sruntime, bound to this disk (%s) until it goes away; %s\n",
                       "binding:", binding, source);
        else
                printf("  %-9sconfiguration, bound to %s; %s\n", "binding:", binding, source);
}

/* The disk id line of explain: what a persistent override would be bound to. */
static void print_stable_id(const char *match) {
        printf("  %-9s%s\n",
               "disk id:", isempty(match) ? "none stable (a persistent override needs --bind=name)" : match);
}

static int explain_local(const char *name) {
        _cleanup_(engine_done) Engine e = {};

        say_fallback();
        if (local_engine(&e) < 0)
                return EXIT_FAIL;
        EngineDevice *d = engine_find(&e, name);
        if (!d)
                return log_error("%s: no such block device.", name), EXIT_NO_DEVICE;
        char buf[32];
        printf("%s (%s, %s): need %s\n", d->facts->name, format_devnum(d->facts->devnum, buf),
               device_kind_to_string(d->facts->kind), need_to_string(d->class.need));
        print_reasons("because:", d->class.reasons);
        printf("  %-9sstable writes %s (queue/stable_writes=%d)\n",
               "kernel:", kernel_state_to_string(d->facts->stable_writes, d->class.in_force),
               d->facts->stable_writes);
        printf("  %-9s%s (%s): %s\n", "desired:", desired_to_string(d->decision.desired),
               desired_source_to_string(d->decision.source), d->decision.reason);
        printf("  %-9s%s\n", "setting:", setting_to_string(d->setting));
        print_override(d->override_scope, d->override_binding, d->override_source, d->facts->diskseq);
        _cleanup_(stable_id_done) StableId id = {};
        _cleanup_free_ char *match =
                stable_id_pick(d->facts, &e.table, false, &id, NULL) >= 0 ? stable_id_match_text(&id) : NULL;
        print_stable_id(match);
        if (d->need_problem)
                printf("  %-9s%s\n", "problem:", d->need_problem);
        if (d->learned != LEARNED_NONE) {
                char when[64] = "?";
                time_t t = (time_t) (d->learned_since_usec / USEC_PER_SEC);
                struct tm tm;
                if (localtime_r(&t, &tm))
                        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm);
                printf("  %-9s%s since %s: %s\n", "learned:", learned_to_string(d->learned), when,
                       d->learned_reason);
        }
        return EXIT_OK;
}

/* The stall lines of explain: the figures, what the policy made of them, what it learned. */
static int explain_stalls(sd_bus *bus, const char *path, sd_bus_error *error) {
        _cleanup_free_ char *reason = NULL, *learned = NULL, *learned_reason = NULL;
        uint64_t count = 0, p99 = 0, max = 0, wcount = 0, since = 0;
        int measured = 0, r;
        char a[32], b[32];

#define GET(prop, type, var)                                                                                \
        (r = sd_bus_get_property_trivial(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, prop, error, type,      \
                                         var)) < 0
        if (GET("StallMeasured", 'b', &measured) || GET("StallCount", 't', &count) ||
            GET("StallP99USec", 't', &p99) || GET("StallMaxUSec", 't', &max) ||
            GET("StallWindowCount", 't', &wcount) || GET("LearnedUSec", 't', &since))
                return r;
#undef GET
        if ((r = sd_bus_get_property_string(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "StallReason", error,
                                            &reason)) < 0 ||
            (r = sd_bus_get_property_string(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "Learned", error,
                                            &learned)) < 0 ||
            (r = sd_bus_get_property_string(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "LearnedReason",
                                            error, &learned_reason)) < 0)
                return r;

        if (!measured)
                printf("  %-9snot measured: %s\n", "stalls:", reason);
        else if (p99 == STALL_UNMEASURED_USEC)
                printf("  %-9s%" PRIu64 " waits since the probe started, %" PRIu64
                       " in the window (no durations)\n",
                       "stalls:", count, wcount);
        else
                printf("  %-9s%" PRIu64 " waits since the probe started, p99 <= %s, max %s; %" PRIu64
                       " in the window\n",
                       "stalls:", count, format_usec(p99, a), format_usec(max, b), wcount);
        if (measured && !isempty(reason))
                printf("  %-9s%s\n", "cost:", reason);
        if (!isempty(learned)) {
                char when[64] = "?";
                time_t t = (time_t) (since / USEC_PER_SEC);
                struct tm tm;
                if (localtime_r(&t, &tm))
                        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm);
                printf("  %-9s%s since %s: %s\n", "learned:", learned, when, learned_reason);
        }
        return 0;
}

int verb_explain(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *mounts = NULL;
        _cleanup_strv_free_ char **reasons = NULL;
        _cleanup_free_ char *need = NULL, *kind = NULL, *devnum = NULL, *desired = NULL, *source = NULL,
                            *decision = NULL, *setting = NULL, *dname = NULL, *oscope = NULL,
                            *obinding = NULL, *osource = NULL, *stable_id = NULL;
        uint64_t diskseq = 0;
        const char *path;
        int flag = -1, in_force = 0, r;

        if (ctl_bus_open(&bus) < 0 || !ctl_daemon_running(bus))
                return explain_local(argv[0]);

        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "GetDevice", &error, &reply,
                               "s", argv[0]);
        if (r < 0)
                return ctl_call_error(argv[0], &error, r);
        if ((r = sd_bus_message_read(reply, "o", &path)) < 0)
                return log_error_errno(r, "Bad reply: %m"), EXIT_FAIL;

#define GET_STRING(prop, var)                                                                               \
        (r = sd_bus_get_property_string(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, prop, &error, &var)) < 0
        if (GET_STRING("Name", dname) || GET_STRING("Need", need) || GET_STRING("Kind", kind) ||
            GET_STRING("DevNum", devnum) || GET_STRING("Desired", desired) ||
            GET_STRING("DesiredSource", source) || GET_STRING("DecisionReason", decision) ||
            GET_STRING("Setting", setting) || GET_STRING("OverrideScope", oscope) ||
            GET_STRING("OverrideBinding", obinding) || GET_STRING("OverrideSource", osource) ||
            GET_STRING("StableId", stable_id))
                return ctl_call_error(argv[0], &error, r);
#undef GET_STRING
        r = sd_bus_get_property_strv(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "Reasons", &error, &reasons);
        if (r >= 0)
                r = sd_bus_get_property_trivial(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "KernelFlag",
                                                &error, 'i', &flag);
        if (r >= 0)
                r = sd_bus_get_property_trivial(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "InForce", &error,
                                                'b', &in_force);
        if (r >= 0)
                r = sd_bus_get_property_trivial(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "DiskSeq", &error,
                                                't', &diskseq);
        if (r >= 0)
                r = sd_bus_get_property(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "Mounts", &error, &mounts,
                                        "a(sssbs)");
        if (r < 0)
                return ctl_call_error(argv[0], &error, r);

        printf("%s (%s, %s): need %s\n", dname, devnum, kind, need);
        print_reasons("because:", reasons);
        printf("  %-9sstable writes %s (queue/stable_writes=%d)\n",
               "kernel:", kernel_state_to_string(flag, in_force), flag);
        printf("  %-9s%s (%s): %s\n", "desired:", desired, source, decision);
        printf("  %-9s%s\n", "setting:", setting);
        print_override(oscope, obinding, osource, diskseq);
        print_stable_id(stable_id);
        r = explain_stalls(bus, path, &error);
        if (r < 0)
                return ctl_call_error(argv[0], &error, r);

        r = sd_bus_message_enter_container(mounts, 'a', "(sssbs)");
        for (bool first = true; r >= 0;) {
                const char *target, *fstype, *effective, *reason;
                int pending;
                r = sd_bus_message_read(mounts, "(sssbs)", &target, &fstype, &effective, &pending, &reason);
                if (r <= 0)
                        break;
                printf("  %-9s%s (%s): effective %s%s%s\n", first ? "mounts:" : "", target, fstype,
                       effective, pending ? ", pending: " : "; ", reason);
                first = false;
        }
        if (r < 0)
                return log_error_errno(r, "Bad reply: %m"), EXIT_FAIL;
        return EXIT_OK;
}
