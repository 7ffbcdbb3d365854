/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* monitor: the daemon's signals as lines of text, or as one JSON object per event. */
#include <assert.h>
#include <inttypes.h>
#include <signal.h>

#include "bus-api.h"
#include "ctl.h"
#include "log.h"
#include "util.h"

/* monitor --json: starts the object of one event. */
static void event_begin(JsonWriter *w, const char *event) {
        ctl_json_begin(w);
        json_object_begin(w);
        json_member_string(w, "event", event);
}

static void event_end(JsonWriter *w) {
        json_object_end(w);
        ctl_json_end(w);
}

/* Prints one signal of the daemon: a line of text, or with --json one JSON object per event. */
static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *member = sd_bus_message_get_member(m);
        const char *path = sd_bus_message_get_path(m);
        const char *name = "", *s = "", *target = "", *device = "";
        _cleanup_free_ char *dev = NULL;
        uint64_t usec = 0, p99 = 0, budget = 0, count = 0;
        bool json = arg_json != JSON_OFF;
        int a = 0, b = 0;
        JsonWriter w;

        if (streq(member, "Applied") && sd_bus_message_read(m, "sbbs", &name, &a, &b, &s) >= 0) {
                if (!json)
                        printf("applied  %s: stable writes %s -> %s: %s\n", name, a ? "on" : "off",
                               b ? "on" : "off", s);
                else {
                        event_begin(&w, "applied");
                        json_member_string(&w, "device", name);
                        json_member_bool(&w, "before", a);
                        json_member_bool(&w, "after", b);
                        json_member_string(&w, "message", s);
                        event_end(&w);
                }
        } else if (streq(member, "Refused") && sd_bus_message_read(m, "ss", &name, &s) >= 0) {
                if (!json)
                        printf("refused  %s: %s\n", name, s);
                else {
                        event_begin(&w, "refused");
                        json_member_string(&w, "device", name);
                        json_member_string(&w, "message", s);
                        event_end(&w);
                }
        } else if (streq(member, "RemountFinished") &&
                   sd_bus_message_read(m, "ssbts", &target, &device, &a, &usec, &s) >= 0) {
                if (!json)
                        printf("remount  %s on %s: %s (%.1f ms): %s\n", target, device, a ? "ok" : "FAILED",
                               (double) usec / 1000.0, s);
                else {
                        event_begin(&w, "remount");
                        json_member_string(&w, "target", target);
                        json_member_string(&w, "device", device);
                        json_member_bool(&w, "ok", a);
                        json_member_uint(&w, "duration_usec", usec);
                        json_member_string(&w, "message", s);
                        event_end(&w);
                }
        } else if (streq(member, "BudgetExceeded") &&
                   sd_bus_message_read(m, "sttt", &name, &p99, &budget, &count) >= 0) {
                if (!json)
                        printf("budget   %s: p99 wait %.1f ms over the budget of %.1f ms (%" PRIu64
                               " waits): stable writes off\n",
                               name, (double) p99 / 1000.0, (double) budget / 1000.0, count);
                else {
                        event_begin(&w, "budget-exceeded");
                        json_member_string(&w, "device", name);
                        json_member_uint(&w, "p99_usec", p99);
                        json_member_uint(&w, "budget_usec", budget);
                        json_member_uint(&w, "count", count);
                        event_end(&w);
                }
        } else if (streq(member, "Reloaded") && sd_bus_message_read(m, "b", &a) >= 0) {
                if (!json)
                        printf("reloaded %s\n", a ? "ok" : "with errors, kept the last good configuration");
                else {
                        event_begin(&w, "reloaded");
                        json_member_bool(&w, "ok", a);
                        event_end(&w);
                }
        } else if (streq(member, "PropertiesChanged") &&
                   sd_bus_path_decode(path, BUS_DEVICE_PREFIX, &dev) > 0) {
                if (!json)
                        printf("changed  %s\n", dev);
                else {
                        event_begin(&w, "changed");
                        json_member_string(&w, "device", dev);
                        event_end(&w);
                }
        }
        fflush(stdout);
        return 0;
}

int verb_monitor(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        int r;

        assert(argv);

        r = ctl_daemon_bus("monitor", &bus);
        if (r < 0)
                return r;
        r = sd_bus_match_signal(bus, NULL, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, NULL, on_signal, NULL);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL,
                                     "type='signal',sender='" BUS_NAME
                                     "',interface='org.freedesktop.DBus.Properties',"
                                     "member='PropertiesChanged',path_namespace='" BUS_DEVICE_PREFIX "'",
                                     on_signal, NULL);
        if (r < 0)
                return log_error_errno(r, "Cannot subscribe to signals: %m");
        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, 0);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the event loop: %m");
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        (void) sd_event_add_signal(event, NULL, SIGINT, NULL, NULL);
        (void) sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL);
        fprintf(stderr, "Monitoring %s; press ^C to stop.\n", BUS_NAME);
        r = sd_event_loop(event);
        return r < 0 ? -EIO : 0;
}
