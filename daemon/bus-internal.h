/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the D-Bus service share (bus.c: the vtables and getters; bus-service.c:
 * the connection and signals; bus-devices.c, bus-policy.c, bus-apply.c, bus-stalls.c: the
 * method handlers; bus-util.c: replies and argument checks). Not for the rest of the daemon:
 * its interface is bus.h. */

#include <systemd/sd-bus.h>

#include "bus-polkit.h"
#include "bus.h"
#include "mirror.h"
#include "stalls.h"
#include "utf8.h"

/* A disk's stall figures as the API reports them: STALL_UNMEASURED_USEC for what is not
 * measured. */
typedef struct StallFigures {
        bool measured;  /* a probe runs */
        bool durations; /* ... and measures how long each wait lasts */
        StallStats total, window;
        uint64_t p50_usec, p99_usec, window_p99_usec;
        uint64_t shadow_p99_usec, window_shadow_p99_usec; /* STALL_UNMEASURED_USEC without shadows */
        char *reason;             /* why not measured, or what limits the figures; "" when nothing does */
        char *cost_on, *cost_off; /* what turning stable writes on and off would cost */
        bool mirror;              /* an md mirror whose figures are in fig */
        MirrorFigures fig;
} StallFigures;

struct BusService {
        Manager *manager;
        sd_bus *bus;
        bool named; /* owns BUS_NAME: before, nobody can address our objects or care for signals */
        BusAuth *auth;
        sd_event_source *drain, *trim;
        /* The stall figures of the disk whose Stall* properties the current request reads (a
         * GetAll, or GetManagedObjects, reads seven of each disk): computed once per request and
         * disk. */
        sd_bus_message *stall_request;
        dev_t stall_devnum;
        StallFigures stall_figures;
};

/* An error whose message may quote strings from the kernel or from users: made valid UTF-8
 * (utf8.h), which sd-bus needs to send it at all. */
int bus_reply_error(sd_bus_error *error, const char *name, const char *format, ...) _printf_(3, 4);

/* Strings from the kernel and from users that go out in one message, made valid UTF-8: the
 * escaped copies live until the set is freed. A failed copy makes the string "" and sets
 * error: the message must not be sent then. */
typedef struct BusStrings {
        char **copies;
        size_t n;
        int error;
} BusStrings;

/* text, or its escaped copy held by s; "" for NULL. */
const char *bus_string(BusStrings *s, const char *text);
void bus_strings_done(BusStrings *s);

/* Appends text, escaped, as an "s". */
int bus_append_string_escaped(sd_bus_message *reply, const char *text);
/* Appends the strings of l, escaped, as an "as". */
int bus_append_strv_escaped(sd_bus_message *reply, char *const *l);

/* Closes the array a reply ends with and sends the reply, unless r (how building it went) or the
 * error of strings (NULL: none) is negative. Returns what a method handler returns. */
int bus_reply_send_array(sd_bus_message *reply, const BusStrings *strings, int r);

/* The first bytes of a caller's string for an error message: at most max bytes, cut on a
 * character boundary, "…" when cut. */
#define QUOTE_LENGTH(s, max) (int) utf8_prefix_length((s), (max))
#define QUOTE_MORE(s, max) (strlen(s) > (max) ? "…" : "")

/* The object path of the disk of that name; NULL on ENOMEM. */
char *bus_device_path(const char *name);

/* Validates a caller's device name and finds its disk. */
int bus_find_device(BusService *b, const char *name, EngineDevice **ret, sd_bus_error *error);

/* Reads a device name (the "s" at the current position of m), validates it and finds its disk.
 * Returns 0, or what a method handler returns. */
int bus_read_device(sd_bus_message *m, BusService *b, EngineDevice **ret, sd_bus_error *error);

/* Reads the disks and flags of a call (the "as" and "t" at the current position) and refuses,
 * in this order, more names than disks (answered at once, the rest of the array unread), flags
 * outside known_flags, an invalid name, a name of no disk. *ret_disks gets each disk's name
 * once, in the order given: NULL when the call names none. Returns 0, or what a method handler
 * returns. */
int bus_read_disks(sd_bus_message *m, BusService *b, uint64_t known_flags, char ***ret_disks,
                   uint64_t *ret_flags, sd_bus_error *error);

/* The polkit actions of the calls (bus-util.c). */
extern const char *const bus_actions_runtime[];
extern const char *const bus_actions_persistent[];
extern const char *const bus_actions_runtime_force[];
extern const char *const bus_actions_persistent_force[];
extern const char *const bus_actions_remount[];

/* The q-quantile of the waits of s: 0 without waits, STALL_UNMEASURED_USEC when durations are
 * not measured. */
uint64_t stall_percentile(const StallStats *s, double q);

/* Frees what f holds. */
void stall_figures_done(StallFigures *f);

/* Reads the stall figures of d once, for every figure a request reports. */
int stall_figures_compute(Manager *m, const EngineDevice *d, StallFigures *ret);

/* The method handlers of the Manager, as the vtable in bus.c names them. */
int method_list_devices(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_list_filesystems(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_list_consumers(sd_bus_message *m, void *userdata, sd_bus_error *error);

/* Appends one consumer (consumers.h) as the members of a "(ssssbstbs)" struct: kind, name, type,
 * captured, in force, origin, since (usec, 0 unknown), hazard, note; strings escaped. */
int append_consumer(sd_bus_message *reply, const Consumer *c);
int method_list_overrides(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_get_device(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_get_device_properties(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_dump_json(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_set_device_policy(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_reset_device_policy(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_apply(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_reload(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_get_stalls(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_reset_stalls(sd_bus_message *m, void *userdata, sd_bus_error *error);
int method_get_config(sd_bus_message *m, void *userdata, sd_bus_error *error);

/* The objects (bus.c): the Manager at BUS_PATH, a Device per disk under BUS_DEVICE_PREFIX,
 * found and listed by the Manager's disks, with the service as userdata. */
extern const sd_bus_vtable manager_vtable[];
extern const sd_bus_vtable device_vtable[];
int device_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                sd_bus_error *error);
int device_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error);
