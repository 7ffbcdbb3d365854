/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* status and explain: from the daemon over D-Bus, or from sysfs when it is not running. */
#include <assert.h>
#include <inttypes.h>
#include <time.h>

#include "bus-api.h"
#include "ctl-consumers.h"
#include "ctl.h"
#include "engine.h"
#include "identity.h"
#include "log.h"
#include "policy.h"
#include "table.h"
#include "util.h"

static const char *const status_header[] = { "DEVICE", "NEED",       "KERNEL",    "DESIRED",
                                             "MOUNTS", "CACHE/SWAP", "STALL-P99", NULL };

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

/* A disk that needs stable writes whose flag is off: what starts on it now (a mount, a swapon, a
 * mapping) would run without them. A warning: what runs on it already is each consumer's, and
 * a consumer that runs without them is said at error level (ctl_say_consumer_hazards()). */
static void say_flag_off(const char *disk, const char *need, const char *reason) {
        log_warning(
                "%s needs stable writes (need %s%s%s) but its flag is off: a filesystem mounted, a swap "
                "area activated or a mapping made on it now would run without them; \"stablepagesd apply "
                "%s\" turns them on.",
                disk, need, reason ? ": " : "", reason ?: "", disk);
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
                        say_flag_off(d->facts->name, need_to_string(d->class.need),
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

static int status_local(int argc, char **argv) {
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
        t = table_new(status_header);
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
        _cleanup_(table_freep) Table *o = table_new(overrides_header);
        OverrideEntry *entries = NULL;
        size_t n = 0;
        if (!o || engine_list_overrides(&e, disks, &entries, &n) < 0)
                return log_oom();
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = overrides_add(o, entries[i].disk, setting_to_string(entries[i].setting),
                                  entries[i].force, entries[i].scope, entries[i].binding, entries[i].source);
        override_entries_free(entries, n);
        if (r < 0)
                return log_oom();
        ctl_pager_open();
        table_print(t, stdout, arg_legend);
        overrides_print(o);
        say_local_hazards(&e, &consumers, disks);
        return 0;
}

int ctl_resolve_names(sd_bus *bus, int argc, char **argv, char ***ret) {
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
                        return log_error_errno(r, "Bad reply: %m");
                r = sd_bus_path_decode(path, BUS_DEVICE_PREFIX, &disk);
                if (r <= 0)
                        return log_error_errno(SYNTHETIC_ERRNO(EBADMSG), "Bad device path %s.", path);
                if (!strv_contains(disks, disk) && strv_extend(&disks, disk) < 0)
                        return log_oom();
        }
        *ret = TAKE_PTR(disks);
        return 0;
}

/* The hazards of the consumers of the disks (every disk when disks is empty), from the daemon. */
static void say_bus_hazards(const ConsumerSet *consumers, char *const *disks) {
        for (size_t i = 0; i < consumers->n; i++)
                if (strv_length(disks) == 0 || strv_contains(disks, consumers->disks[i]))
                        ctl_say_consumer_hazards(consumers->disks[i], &consumers->lists[i]);
}

/* The filesystems an unmount + mount cycle left unmounted: whatever else status shows. */
static void print_unmounted(sd_bus *bus) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *target, *disk, *reason;
        int retrying;

        if (sd_bus_get_property(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "Unmounted", &error, &reply,
                                "a(sssb)") < 0 ||
            sd_bus_message_enter_container(reply, 'a', "(sssb)") < 0)
                return;
        while (sd_bus_message_read(reply, "(sssb)", &target, &disk, &reason, &retrying) > 0)
                printf("\nNOT MOUNTED: %s (%s), left unmounted by an unmount + mount cycle: %s%s\n", target,
                       disk, reason, retrying ? " (being retried)" : " (not retried: mount it by hand)");
}

int ctl_dump_json(sd_bus *bus, const char *verb, char **disks, uint64_t flags) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        const char *json;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "DumpJSON");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, disks);
        if (r >= 0)
                r = sd_bus_message_append(m, "t", flags | (arg_json == JSON_PRETTY ? DUMP_FLAG_PRETTY : 0));
        if (r < 0)
                return log_error_errno(r, "Cannot build the call: %m");
        r = sd_bus_call(bus, m, 0, &error, &reply);
        if (r < 0)
                return ctl_call_error(verb, &error, r);
        r = sd_bus_message_read(reply, "s", &json);
        if (r < 0)
                return log_error_errno(r, "Bad reply: %m");
        fputs(json, stdout);
        if (!*json || json[strlen(json) - 1] != '\n')
                fputc('\n', stdout);
        return 0;
}

/* The P99 column: "none" without waits, "-" when not measured. */
static const char *format_p99(uint64_t p99, char buf[static 32]) {
        if (p99 == 0)
                return "none"; /* no waits: there is no p99 */
        if (p99 == STALL_UNMEASURED_USEC)
                return "-";
        if (p99 >= 10000)
                snprintf(buf, 32, "%" PRIu64 "ms", p99 / 1000);
        else
                snprintf(buf, 32, "%" PRIu64 "us", p99);
        return buf;
}

/* The table of the disks (ListDevices; only those of disks unless it is empty), with the
 * summary of their consumers. */
static int status_devices(sd_bus *bus, char **disks, const ConsumerSet *consumers, Table **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        int r;

        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "ListDevices", &error, &reply,
                               "");
        if (r < 0)
                return ctl_call_error("status", &error, r);
        t = table_new(status_header);
        if (!t)
                return log_oom();
        r = sd_bus_message_enter_container(reply, 'a', "(sossssbt)");
        if (r < 0)
                return log_error_errno(r, "Bad reply: %m");
        for (;;) {
                const char *name, *path, *need, *kernel, *desired, *mounts;
                int pending;
                uint64_t p99;
                char p99s[32];

                r = sd_bus_message_read(reply, "(sossssbt)", &name, &path, &need, &kernel, &desired, &mounts,
                                        &pending, &p99);
                if (r < 0)
                        return log_error_errno(r, "Bad reply: %m");
                if (r == 0)
                        break;
                if (strv_length(disks) > 0 && !strv_contains(disks, name))
                        continue;
                _cleanup_free_ char *summary = consumers_summary(consumer_set_find(consumers, name));
                if (!summary)
                        return log_oom();
                const char *row[] = { name,
                                      need,
                                      kernel,
                                      desired,
                                      isempty(mounts) ? "-" : mounts,
                                      summary,
                                      format_p99(p99, p99s) };
                if (table_add_row(t, row) < 0)
                        return log_oom();
        }
        *ret = TAKE_PTR(t);
        return 0;
}

/* The table of the overrides (ListOverrides; only those of disks unless it is empty), with the
 * identity each is bound to: a disk, not a name. */
static int status_overrides(sd_bus *bus, char **disks, Table **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *list = NULL;
        _cleanup_(table_freep) Table *o = table_new(overrides_header);
        int r;

        if (!o)
                return log_oom();
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
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Bad reply: %m");
        *ret = TAKE_PTR(o);
        return 0;
}

/* "Stall probe: MODE (REASON)", the legend above the table. */
static void print_stall_probe(sd_bus *bus) {
        _cleanup_free_ char *mode = NULL, *why = NULL;

        if (sd_bus_get_property_string(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "StallProbe", NULL,
                                       &mode) >= 0 &&
            sd_bus_get_property_string(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "StallProbeReason",
                                       NULL, &why) >= 0)
                printf("Stall probe: %s (%s)\n\n", mode, why);
}

int verb_status(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(table_freep) Table *t = NULL, *o = NULL;
        _cleanup_strv_free_ char **disks = NULL;
        _cleanup_(consumer_set_done) ConsumerSet consumers = {};
        int r;

        assert(argv);

        if (ctl_bus_open(&bus) < 0 || !ctl_daemon_running(bus))
                return status_local(argc, argv);

        r = ctl_resolve_names(bus, argc, argv, &disks);
        if (r < 0)
                return r;
        if (arg_json != JSON_OFF)
                return ctl_dump_json(bus, "status", disks, 0);

        r = ctl_consumers_from_bus(bus, &consumers);
        if (r < 0)
                return r;
        r = status_devices(bus, disks, &consumers, &t);
        if (r < 0)
                return r;
        if (arg_legend)
                print_stall_probe(bus);
        r = status_overrides(bus, disks, &o);
        if (r < 0)
                return r;
        ctl_pager_open();
        table_print(t, stdout, arg_legend);
        overrides_print(o);
        print_unmounted(bus);
        say_bus_hazards(&consumers, disks);
        return 0;
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
        r = ctl_consumers_local(&e, &consumers);
        if (r < 0)
                return r;
        ctl_print_consumers(consumer_set_find(&consumers, d->facts->name));
        say_local_hazards(&e, &consumers, (char *[]){ d->facts->name, NULL });
        if (d->learned != LEARNED_NONE) {
                char when[64] = "?";
                time_t t = (time_t) (d->learned_since_usec / USEC_PER_SEC);
                struct tm tm;
                if (localtime_r(&t, &tm))
                        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm);
                printf("  %-9s%s since %s: %s\n", "learned:", learned_to_string(d->learned), when,
                       d->learned_reason);
        }
        return 0;
}

/* What explain shows of a disk: its Device properties, from one GetDeviceProperties call. */
typedef struct DeviceView {
        char *name, *need, *kind, *devnum, *desired, *source, *decision, *setting;
        char *stall_reason, *learned, *learned_reason, *cost_on, *cost_off;
        char *override_scope, *override_binding, *override_source, *stable_id;
        char **reasons;
        char **mounts;                     /* one line each */
        char **off_targets, **off_fstypes; /* the mounts running without stable writes */
        DeviceConsumers consumers;
        int flag, in_force, measured, shadows;
        uint64_t count, p99, max, wcount, since, diskseq;
        uint64_t shadow_count, shadow_p99, wshadow_count, direct; /* shadow waits, O_DIRECT writes */
} DeviceView;

static void device_view_done(DeviceView *v) {
        free(v->name);
        free(v->need);
        free(v->kind);
        free(v->devnum);
        free(v->desired);
        free(v->source);
        free(v->decision);
        free(v->setting);
        free(v->stall_reason);
        free(v->learned);
        free(v->learned_reason);
        free(v->cost_on);
        free(v->cost_off);
        free(v->override_scope);
        free(v->override_binding);
        free(v->override_source);
        free(v->stable_id);
        strv_free(v->reasons);
        strv_free(v->mounts);
        device_consumers_done(&v->consumers);
}

static int read_mounts(sd_bus_message *m, DeviceView *v) {
        int r = sd_bus_message_enter_container(m, 'a', "(sssbs)");
        while (r >= 0) {
                const char *target, *fstype, *effective, *reason;
                int pending;
                r = sd_bus_message_read(m, "(sssbs)", &target, &fstype, &effective, &pending, &reason);
                if (r <= 0)
                        break;
                if (strv_extendf(&v->mounts, "%s (%s): effective %s%s%s", target, fstype, effective,
                                 pending ? ", pending: " : "; ", reason) < 0)
                        return -ENOMEM;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

/* Reads the a{sv} of GetDeviceProperties into v; properties it does not know are skipped. */
static int read_device_view(sd_bus_message *m, DeviceView *v) {
        static const struct {
                const char *name;
                char type;
                size_t offset;
        } fields[] = {
#define F(n, t, field) { n, t, offsetof(DeviceView, field) }
                F("Name", 's', name),
                F("Need", 's', need),
                F("Kind", 's', kind),
                F("DevNum", 's', devnum),
                F("Desired", 's', desired),
                F("DesiredSource", 's', source),
                F("DecisionReason", 's', decision),
                F("Setting", 's', setting),
                F("StallReason", 's', stall_reason),
                F("Learned", 's', learned),
                F("LearnedReason", 's', learned_reason),
                F("KernelFlag", 'i', flag),
                F("InForce", 'b', in_force),
                F("StallMeasured", 'b', measured),
                F("StallCount", 't', count),
                F("StallP99USec", 't', p99),
                F("StallMaxUSec", 't', max),
                F("StallWindowCount", 't', wcount),
                F("StallShadowMeasured", 'b', shadows),
                F("StallShadowCount", 't', shadow_count),
                F("StallShadowP99USec", 't', shadow_p99),
                F("StallWindowShadowCount", 't', wshadow_count),
                F("StallDirectWrites", 't', direct),
                F("CostOn", 's', cost_on),
                F("CostOff", 's', cost_off),
                F("LearnedUSec", 't', since),
                F("OverrideScope", 's', override_scope),
                F("OverrideBinding", 's', override_binding),
                F("OverrideSource", 's', override_source),
                F("DiskSeq", 't', diskseq),
                F("StableId", 's', stable_id),
#undef F
        };
        int r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        for (;;) {
                const char *prop, *contents;
                bool known = false;

                r = sd_bus_message_enter_container(m, 'e', "sv");
                if (r <= 0)
                        break;
                r = sd_bus_message_read(m, "s", &prop);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(m, NULL, &contents);
                if (r < 0)
                        return r;
                if (streq(prop, "Reasons") && streq(contents, "as")) {
                        r = sd_bus_message_enter_container(m, 'v', "as");
                        if (r >= 0)
                                r = sd_bus_message_read_strv(m, &v->reasons);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(m);
                        known = true;
                } else if (streq(prop, "Mounts") && streq(contents, "a(sssbs)")) {
                        r = sd_bus_message_enter_container(m, 'v', "a(sssbs)");
                        if (r >= 0)
                                r = read_mounts(m, v);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(m);
                        known = true;
                } else if (streq(prop, "Consumers") && streq(contents, "a(ssssbstbs)")) {
                        r = sd_bus_message_enter_container(m, 'v', "a(ssssbstbs)");
                        if (r >= 0)
                                r = ctl_read_consumers(m, &v->consumers);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(m);
                        known = true;
                }
                for (size_t i = 0; !known && i < ELEMENTSOF(fields); i++) {
                        char sig[2] = { fields[i].type, '\0' };
                        if (!streq(prop, fields[i].name) || !streq(contents, sig))
                                continue;
                        void *p = (char *) v + fields[i].offset;
                        if (fields[i].type == 's') {
                                const char *str;
                                r = sd_bus_message_read(m, "v", "s", &str);
                                if (r >= 0 && !(*(char **) p = strdup(str)))
                                        r = -ENOMEM;
                        } else
                                r = sd_bus_message_read(m, "v", sig, p);
                        known = true;
                }
                if (r >= 0 && !known)
                        r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (!v->name || !v->need || !v->kind || !v->devnum || !v->desired || !v->source || !v->decision ||
            !v->setting || !v->stall_reason || !v->learned || !v->learned_reason || !v->override_scope ||
            !v->override_binding || !v->override_source || !v->stable_id)
                return -EBADMSG; /* a daemon that does not have them all */
        return sd_bus_message_exit_container(m);
}

/* The stall lines of explain: the figures, what the policy made of them, what it learned. */
static void explain_stalls(const DeviceView *v) {
        char a[32], b[32];

        if (!v->measured)
                printf("  %-9snot measured: %s\n", "stalls:", v->stall_reason);
        else if (v->p99 == STALL_UNMEASURED_USEC)
                printf("  %-9s%" PRIu64 " waits since the probe started, %" PRIu64
                       " in the window (no durations)\n",
                       "stalls:", v->count, v->wcount);
        else
                printf("  %-9s%" PRIu64 " waits since the probe started, p99 <= %s, max %s; %" PRIu64
                       " in the window\n",
                       "stalls:", v->count, format_usec(v->p99, a), format_usec(v->max, b), v->wcount);
        if (v->measured && v->shadows && v->shadow_p99 != STALL_UNMEASURED_USEC)
                printf("  %-9s%" PRIu64 " shadow waits since the probe started, shadow p99 <= %s; %" PRIu64
                       " in the window\n",
                       "shadows:", v->shadow_count, format_usec(v->shadow_p99, a), v->wshadow_count);
        else if (v->measured)
                printf("  %-9snot measured by this probe\n", "shadows:");
        if (v->measured && v->direct != STALL_UNMEASURED_USEC && v->direct > 0)
                printf("  %-9s%" PRIu64 " O_DIRECT writes since the probe started\n", "direct:", v->direct);
        if (v->measured && !isempty(v->stall_reason))
                printf("  %-9s%s\n", "cost:", v->stall_reason);
        if (v->cost_on)
                printf("  %-9s%s\n", "on:", v->cost_on);
        if (v->cost_off)
                printf("  %-9s%s\n", "off:", v->cost_off);
        if (!isempty(v->learned)) {
                char when[64] = "?";
                time_t t = (time_t) (v->since / USEC_PER_SEC);
                struct tm tm;
                if (localtime_r(&t, &tm))
                        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm);
                printf("  %-9s%s since %s: %s\n", "learned:", v->learned, when, v->learned_reason);
        }
}

int verb_explain(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(device_view_done) DeviceView v = { .flag = -1 };
        const char *path;
        int r;

        assert(argv);

        /* The disk's record of status --json has all that explain shows (the reasons, the
         * decision, the override, what was learned, the stall figures, the mounts): one schema. */
        if (arg_json != JSON_OFF)
                return verb_status(argc, argv);
        if (ctl_bus_open(&bus) < 0 || !ctl_daemon_running(bus))
                return explain_local(argv[0]);

        /* Every property, StableId included, in one round trip. */
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "GetDeviceProperties", &error,
                               &reply, "s", argv[0]);
        if (r < 0)
                return ctl_call_error(argv[0], &error, r);
        if ((r = sd_bus_message_read(reply, "o", &path)) < 0)
                return log_error_errno(r, "Bad reply: %m");
        r = read_device_view(reply, &v);
        if (r < 0)
                return log_error_errno(r, "Bad reply to GetDeviceProperties of %s: %m", path);

        printf("%s (%s, %s): need %s\n", v.name, v.devnum, v.kind, v.need);
        print_reasons("because:", v.reasons);
        printf("  %-9sstable writes %s (queue/stable_writes=%d)\n",
               "kernel:", kernel_state_to_string(v.flag, v.in_force), v.flag);
        printf("  %-9s%s (%s): %s\n", "desired:", v.desired, v.source, v.decision);
        printf("  %-9s%s\n", "setting:", v.setting);
        print_override(v.override_scope, v.override_binding, v.override_source, v.diskseq);
        print_stable_id(v.stable_id);
        explain_stalls(&v);
        bool first = true;
        STRV_FOREACH (l, v.mounts) {
                printf("  %-9s%s\n", first ? "mounts:" : "", *l);
                first = false;
        }
        ctl_print_consumers(&v.consumers);
        ctl_say_consumer_hazards(v.name, &v.consumers);
        if (need_is_protected(need_from_string(v.need)) && !v.in_force && v.flag != ATTR_ABSENT)
                say_flag_off(v.name, v.need, v.reasons ? v.reasons[0] : NULL);
        return 0;
}
