/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon verb: the Manager and its D-Bus service, started, run until SIGTERM or the loss
 * of the bus, and the exit code that tells systemd which. */
#include "bus.h"
#include "log.h"
#include "manager.h"
#include "verbs.h"

int verb_daemon(const EngineOptions *o) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(bus_service_freep) BusService *bus = NULL;
        int r;

        EngineOptions eo = *o;
        eo.record_history = true; /* the daemon records what it sees of each disk's flag */
        r = manager_new(&eo, &m);
        if (r < 0) {
                log_error_errno(r, "Cannot start: %m");
                return 1;
        }
        /* Without a system bus the daemon still keeps every flag right; only its API is
         * missing, and it says so. Losing the bus later ends the loop with an error. */
        r = bus_service_new(m, &bus);
        if (r < 0)
                log_warning("Running without the D-Bus API: stablepagesctl can only read sysfs.");
        r = manager_start(m);
        if (r < 0)
                return 1;
        /* READY=1 once the name is ours (bus.h), or now when there is no bus. */
        if (bus && bus_service_take_name(bus) < 0)
                return 1;
        if (!bus)
                manager_notify_ready(m);
        r = manager_run(m);
        if (r < 0) {
                log_error_errno(r, "Event loop failed: %m");
                return 1;
        }
        /* SIGTERM ends the loop with 0; a lost bus (sd_bus_set_exit_on_disconnect()) with
         * EXIT_FAILURE, which must reach systemd for Restart=on-failure. */
        if (r > 0) {
                log_error("Lost the connection to the system bus, exiting.");
                return 1;
        }
        return 0;
}
