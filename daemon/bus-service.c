/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The service on the system bus: the connection, the objects of bus.c registered on it, the
 * name, and the signals that follow the Manager's events. */
#include <inttypes.h>
#include <malloc.h>
#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "bus-internal.h"
#include "log.h"
#include "remount.h"
#include "util.h"

/* Messages handled per event loop iteration beyond sd-bus's one (see on_drain). */
#define BUS_DRAIN_MAX 64
/* After a burst of calls, how long the bus must be quiet before memory goes back (on_trim). */
#define BUS_TRIM_DELAY_USEC (1 * USEC_PER_SEC)

static void on_manager_event(Manager *m, const ManagerEvent *ev, void *userdata) {
        BusService *b = userdata;
        _cleanup_free_ char *path = ev->device ? bus_device_path(ev->device) : NULL;
        _cleanup_(bus_strings_done) BusStrings strings = {};
        int r = 0;

        switch (ev->type) {
        case MANAGER_DEVICE_ADDED:
                /* The disks of the first scan are there when the name is taken: announcing each
                 * (a thousand GetAll-sized signals) would only slow the start. */
                if (path && b->named)
                        r = sd_bus_emit_object_added(b->bus, path);
                break;
        case MANAGER_DEVICE_REMOVED:
                if (path)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, "org.freedesktop.DBus.ObjectManager",
                                               "InterfacesRemoved", "oas", path, 1, BUS_DEVICE_INTERFACE);
                break;
        case MANAGER_DEVICE_CHANGED:
                if (path)
                        r = sd_bus_emit_properties_changed_strv(b->bus, path, BUS_DEVICE_INTERFACE, NULL);
                break;
        case MANAGER_APPLIED: {
                EngineDevice *d = manager_find_device(m, ev->device);
                if (ev->result && ev->result->changed)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Applied", "sbbs",
                                               ev->device, ev->result->old_value == 1,
                                               ev->result->new_value == 1,
                                               bus_string(&strings, d ? d->decision.reason : NULL));
                else if (d && d->decision.refused)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Refused", "ss",
                                               ev->device, bus_string(&strings, d->decision.reason));
                break;
        }
        case MANAGER_REMOUNT_FINISHED:
                if (ev->remount)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "RemountFinished",
                                               "ssbts", bus_string(&strings, ev->remount->target),
                                               ev->remount->disk, ev->remount->ok,
                                               ev->remount->duration_usec,
                                               bus_string(&strings, ev->remount->message));
                if (r >= 0)
                        r = sd_bus_emit_properties_changed(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE,
                                                           "Unmounted", NULL);
                break;
        case MANAGER_BUDGET_EXCEEDED:
                if (ev->window)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "BudgetExceeded",
                                               "sttt", ev->device, ev->p99_usec,
                                               m->engine.config.stall_budget_usec, ev->window->count);
                break;
        case MANAGER_RELOADED:
                r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Reloaded", "bas", true, 0);
                if (r >= 0)
                        r = sd_bus_emit_properties_changed(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Policy",
                                                           "ApplyMounted", "StallBudgetUSec",
                                                           "ConfigProblems", NULL);
                break;
        default:
                break;
        }
        if (r < 0)
                log_debug_errno(r, "Cannot send a D-Bus signal: %m");
}

/* sd-bus handles one message per event loop iteration and re-arms its timeout timer around each
 * (a timer reprogramming, which in a virtual machine traps to the hypervisor: 45% of the
 * daemon's CPU in a storm of 10,000 calls). After each event, handle up to BUS_DRAIN_MAX more
 * that are already queued. */
static int on_drain(sd_event_source *s, void *userdata) {
        BusService *b = userdata;
        unsigned n = 0;

        while (n < BUS_DRAIN_MAX && sd_bus_process(b->bus, NULL) > 0)
                n++;              /* stops when nothing is queued; an error is the io callback's to handle */
        if (n == BUS_DRAIN_MAX && /* a burst: give the memory back once it is over */
            sd_event_source_set_time_relative(b->trim, BUS_TRIM_DELAY_USEC) >= 0)
                (void) sd_event_source_set_enabled(b->trim, SD_EVENT_ONESHOT);
        return 0;
}

/* A burst of calls faster than dbus-daemon reads the answers queues them in sd-bus (10,000
 * refused calls: 7 MiB), and the allocator keeps what was freed between live blocks: give it
 * back to the system once the bus is quiet again. */
static int on_trim(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) malloc_trim(0);
        return 0;
}

int bus_service_new(Manager *m, BusService **ret) {
        _cleanup_(bus_service_freep) BusService *b = calloc(1, sizeof(BusService));
        int r;

        if (!b)
                return -ENOMEM;
        b->manager = m;
        r = sd_bus_open_system_with_description(&b->bus, "stablepagesd");
        if (r < 0)
                return log_warning_errno(r, "Cannot connect to the system bus: %m");
        r = bus_auth_new(b->bus, &b->auth);
        if (r < 0)
                return r;
        r = sd_bus_add_object_vtable(b->bus, NULL, BUS_PATH, BUS_MANAGER_INTERFACE, manager_vtable, b);
        if (r >= 0)
                r = sd_bus_add_fallback_vtable(b->bus, NULL, BUS_DEVICE_PREFIX, BUS_DEVICE_INTERFACE,
                                               device_vtable, device_find, b);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(b->bus, NULL, BUS_DEVICE_PREFIX, device_enumerate, b);
        if (r >= 0)
                r = sd_bus_add_object_manager(b->bus, NULL, BUS_PATH);
        if (r < 0)
                return log_error_errno(r, "Cannot register the D-Bus objects: %m");
        r = sd_bus_attach_event(b->bus, m->event, 0);
        if (r >= 0)
                r = sd_event_add_post(m->event, &b->drain, on_drain, b);
        if (r >= 0)
                r = sd_event_add_time(m->event, &b->trim, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_SEC, on_trim,
                                      b);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop: %m");
        /* A lost bus ends the event loop with an error: systemd restarts us (Restart=on-failure). */
        (void) sd_bus_set_exit_on_disconnect(b->bus, true);
        manager_set_event_handler(m, on_manager_event, b);
        log_debug("Serving %s on the system bus.", BUS_NAME);
        *ret = TAKE_PTR(b);
        return 0;
}

static int on_request_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BusService *b = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t result = 0;
        int r;

        if (e)
                r = -sd_bus_error_get_errno(e);
        else {
                r = sd_bus_message_read(reply, "u", &result);
                /* 1: we own it now; 4: we did already. Anything else: someone else owns it. */
                if (r >= 0)
                        r = result == 1 || result == 4 ? 0 : -EEXIST;
        }
        if (r < 0) {
                log_error_errno(r, "Cannot take the name %s on the system bus: %s", BUS_NAME,
                                e              ? e->message ?: e->name
                                : r == -EEXIST ? "another process owns it"
                                               : strerror(-r));
                return sd_event_exit(b->manager->event, r);
        }
        log_debug("%s taken on the system bus.", BUS_NAME);
        b->named = true;
        manager_notify_ready(b->manager);
        return 1;
}

int bus_service_take_name(BusService *b) {
        int r = sd_bus_request_name_async(b->bus, NULL, BUS_NAME, 0, on_request_name, b);
        if (r < 0)
                return log_error_errno(r, "Cannot ask for the name %s on the system bus: %m", BUS_NAME);
        return 0;
}

BusService *bus_service_free(BusService *b) {
        if (!b)
                return NULL;
        if (b->manager)
                manager_set_event_handler(b->manager, NULL, NULL);
        sd_event_source_disable_unref(b->drain);
        sd_event_source_disable_unref(b->trim);
        sd_bus_message_unref(b->stall_request);
        stall_figures_done(&b->stall_figures);
        bus_auth_free(b->auth);
        sd_bus_flush_close_unref(b->bus);
        free(b);
        return NULL;
}
