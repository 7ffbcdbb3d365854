/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* status: the disks, their overrides and consumers, as the daemon reports them. */
#include <assert.h>
#include <inttypes.h>

#include "bus-api.h"
#include "ctl-consumers.h"
#include "ctl-local.h"
#include "ctl-show.h"
#include "ctl.h"
#include "log.h"
#include "policy.h"
#include "table.h"
#include "util.h"

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
        t = table_new(ctl_status_header);
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
        _cleanup_(table_freep) Table *o = table_new(ctl_overrides_header);
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
                r = ctl_overrides_add(o, disk, setting, force, scope, binding, source);
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
                return ctl_status_local(argc, argv);

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
        ctl_overrides_print(o);
        print_unmounted(bus);
        say_bus_hazards(&consumers, disks);
        return 0;
}
