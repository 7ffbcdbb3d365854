/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The daemon's state and its one event loop. The Manager owns the engine (config, facts,
 * decisions), the uevent and mount monitors, the tracked mounts and the timers, and runs
 * every change through one path, reconcile:
 *
 *     scan (facts -> need -> desired)  ->  mounts (new ones get their effective state)
 *       ->  apply (write the flag where it differs)  ->  publish (pending, events, status)
 *
 * What the Manager hands out (EngineDevice, TrackedMount pointers) stays valid until the
 * next reconcile, that is until the caller returns to the event loop or calls one of the
 * mutating functions below. Everything runs in the event loop's thread. */

#include <systemd/sd-event.h>

#include "consumers.h"
#include "engine.h"
#include "mounts.h"
#include "remount.h"
#include "stall-probe.h"
#include "stalls-window.h"
#include "swaps.h"
#include "udev.h"

/* How long uevents are collected before one rescan handles them all. */
#define MANAGER_UEVENT_DELAY_USEC (50 * USEC_PER_MSEC)

typedef struct Manager Manager;

typedef enum ManagerEventType {
        MANAGER_DEVICE_ADDED,     /* a disk appeared (device) */
        MANAGER_DEVICE_CHANGED,   /* anything shown about it changed: facts, need, desired,
                                   * kernel state, mounts (device) */
        MANAGER_DEVICE_REMOVED,   /* the disk is gone (device) */
        MANAGER_APPLIED,          /* we wrote queue/stable_writes, or tried and failed
                                   * (device, result) */
        MANAGER_RELOADED,         /* a new configuration is in force (no device) */
        MANAGER_REMOUNT_FINISHED, /* an unmount + mount cycle of a filesystem ended, or was
                                   * refused (device, remount) */
        MANAGER_BUDGET_EXCEEDED,  /* Policy=balanced learned off for a recommended disk whose
                                   * stall p99 exceeded the budget (device, stalls) */
        _MANAGER_EVENT_TYPE_MAX,
} ManagerEventType;

typedef struct ManagerEvent {
        ManagerEventType type;
        const char *device;           /* kernel name of the disk, NULL for MANAGER_RELOADED */
        const ApplyResult *result;    /* MANAGER_APPLIED only */
        const RemountResult *remount; /* MANAGER_REMOUNT_FINISHED only */
        const StallStats *window;     /* MANAGER_BUDGET_EXCEEDED only: the waits of the window */
        uint64_t p99_usec;            /* MANAGER_BUDGET_EXCEEDED only */
} ManagerEvent;

/* Told about each event after the Manager's state is updated; may read the Manager but
 * must not call its mutating functions. */
typedef void (*manager_event_handler_t)(Manager *m, const ManagerEvent *event, void *userdata);

/* What the Manager remembers of a disk between two reconciles. */
typedef struct DeviceSnapshot {
        char *name;
        uint64_t diskseq;
        int flag;           /* queue/stable_writes after our last look */
        uint64_t signature; /* digest of everything shown about it, to detect changes */
        bool published;     /* its MANAGER_DEVICE_ADDED was emitted */
        char *last_error;   /* the last apply failure logged, to log each one once */
        char *need_problem; /* the last Need= problem logged, to log each one once */
        char **hazards;     /* the consumers' hazards logged, to log each one once */
} DeviceSnapshot;

typedef struct MirrorWatch MirrorWatch; /* manager-mirror.c */

/* The stall figures of one disk (by devnum, as the probe keys them). */
typedef struct DeviceStalls {
        dev_t devnum;
        StallWindow window;      /* snapshots for StallWindowSec= */
        StallStats total;        /* since the probe started or was last reset */
        StallStats last;         /* the waits of the window at the last poll */
        uint64_t last_over_usec; /* CLOCK_BOOTTIME of the last window over the budget, 0 never */
        bool over;               /* the last window was over the budget */
        char *reason;            /* policy_adapt()'s sentence at the last poll */
        bool unkeyed_logged;     /* said that nothing is learned for a disk without a key */
        MirrorWatch *mirror;     /* an md raid1/raid10: its checks and what could diverge */
} DeviceStalls;

struct Manager {
        Engine engine; /* config (the last good one), overrides, facts, decisions */
        sd_event *event;
        UdevWatch *udev;
        MountTracker *mounts;
        SwapTracker *swaps;
        DeviceConsumers *consumers; /* parallel to the engine's devices: what each consumer took */
        size_t n_consumers;
        Remounter *remount; /* unmount + mount cycles; holds a disk's flag while one runs */
        sd_event_source *uevent_delay, *rescan;
        char **uevent_disks; /* disks with a "change" uevent since the delay was armed */
        bool uevent_full;    /* another kind of uevent came: rescan every disk */

        DeviceSnapshot *snapshots;
        size_t n_snapshots;

        manager_event_handler_t handler;
        void *handler_userdata;

        StallProbe *probe;  /* the stall observatory (mode may be "unavailable") */
        int shadows_wanted; /* what manager_update_shadows() last set and logged: -1 nothing yet,
                             * 0 off, 1 on, 2 attaching failed */
        sd_event_source *probe_start, *stall_timer, *metrics_timer;
        int metrics_error;    /* of the last MetricsFile= write: logged when it changes */
        DeviceStalls *stalls; /* disks the probe or the policy looked at */
        size_t n_stalls;
        uint64_t stall_poll_usec; /* CLOCK_BOOTTIME of the last poll, 0 before the first */
        StallStats *live;         /* the probe's counts read in the event loop iteration */
        size_t n_live;            /* live_usec (CLOCK_MONOTONIC of that iteration) */
        uint64_t live_usec;
        bool live_valid;
        uint64_t stall_lost, stall_lost_comms; /* the probe's losses at the last poll (logged) */
        uint64_t stall_frame_mismatches;       /* the probe's failed audits at the last poll (logged) */

        int in_force_lock;    /* holds the lock of config-in-force.h while the daemon runs */
        char *status;         /* the last STATUS= sent */
        uint64_t dump_digest; /* FNV-1a of the last content of devices.json */
        bool dump_written;
        bool scanned; /* the engine's tables are complete (the last scan succeeded) */
};

/* Creates the Manager: runtime dir, engine, configuration (problems logged), runtime
 * overrides, event loop with signal handlers and watchdog. Returns 0 and *ret, or -errno. */
int manager_new(const EngineOptions *options, Manager **ret);

Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Starts the monitors, reconciles once and arms the rescan timer; the stall probe starts
 * first thing in the event loop after manager_notify_ready(). Returns 0 or -errno. */
int manager_start(Manager *m);

/* Tells the service manager READY=1 (and the status) and lets the stall probe start: call
 * when the daemon serves, that is once it owns its bus name. */
void manager_notify_ready(Manager *m);

/* Runs the event loop until SIGTERM/SIGINT. Returns 0 or -errno. */
int manager_run(Manager *m);

/* Re-reads facts and mounts, applies every decision that differs from the flag, then
 * recomputes pending mounts, emits events and updates the status and devices.json.
 * Returns 0 or -errno (only for failures that left nothing applied, e.g. -ENOMEM). */
int manager_reconcile(Manager *m);

/* The same for the named disks (disk names, all known) and everything stacked with them
 * (engine_rescan_disks()): what a "change" uevent needs. Falls back to manager_reconcile()
 * when a disk was added, removed or replaced meanwhile. Returns 0 or -errno. */
int manager_reconcile_disks(Manager *m, char *const *disks);

/* Re-reads the configuration. When it has errors, the configuration in force is kept,
 * each problem is logged as file:line, -EINVAL is returned and, when ret_diags is not
 * NULL, the diagnostics are moved to *ret_diags (the caller frees them). Otherwise the new
 * configuration is installed (its warnings in m->engine.diags, *ret_diags empty) and
 * reconciled, MANAGER_RELOADED emitted, and 0 returned. Tells the service manager
 * RELOADING=1 and READY=1 around it. */
int manager_reload(Manager *m, ConfigDiags *ret_diags);

/* Re-reads the facts and applies the decision for one disk (or partition: its disk) now,
 * then reconciles the rest. *ret as engine_apply() for that disk. Returns what
 * engine_apply() returns, -EINVAL/-ENODEV for a bad or unknown name, or -EBUSY (with a
 * message) while an unmount + mount cycle holds the disk. */
int manager_apply_device(Manager *m, const char *name, ApplyResult *ret);

/* Queues an unmount + mount cycle for each filesystem on one disk (or partition: its disk),
 * whatever ApplyMounted= says; see remount.h for the checks. done gets one result per
 * filesystem. Returns 0, -EINVAL/-ENODEV for a bad or unknown name, or -ENOMEM. */
int manager_remount_device(Manager *m, const char *name, remount_done_t done, void *userdata);

/* Sets the function told about device and apply events (NULL to stop). */
void manager_set_event_handler(Manager *m, manager_event_handler_t handler, void *userdata);

/* The disks, in kernel name order: index i < manager_n_devices(). */
static inline size_t manager_n_devices(const Manager *m) {
        return m->scanned ? m->engine.table.n : 0;
}
static inline EngineDevice *manager_device(Manager *m, size_t i) {
        return &m->engine.devices[i];
}

/* The disk of that name (or of which it is a partition), or NULL. */
EngineDevice *manager_find_device(Manager *m, const char *name);

/* The tracked filesystems on disk (all of them, NFS included, when disk is NULL) as a
 * NULL-terminated array of borrowed pointers; the caller frees the array only. Returns the
 * number of entries or -ENOMEM. */
int manager_get_mounts(Manager *m, const char *disk, const TrackedMount ***ret);

/* Number of pending mounts on disk, or on every disk when disk is NULL. */
unsigned manager_count_pending(const Manager *m, const char *disk);

/* The consumers of disk i (consumers.h: its page cache, filesystems, swap areas, the disks
 * stacked on it), as of the last publish; NULL before the first. */
const DeviceConsumers *manager_device_consumers(const Manager *m, size_t i);

/* The stall probe's mode, and why: "unavailable" before the probe is started. */
StallProbeMode manager_stall_mode(const Manager *m);
const char *manager_stall_reason(const Manager *m);

/* Why shadow waits are not measured: their programs are detached (no disk that may need stable
 * writes runs without them), or the probe's mode reason. */
const char *manager_shadows_reason(const Manager *m);

/* Attaches the probe's shadow programs while some disk that may need stable writes runs without
 * them (disk_wants_shadows()), detaches them otherwise (they cost every writer of a page under
 * writeback); logs each change. */
void manager_update_shadows(Manager *m);

/* The stall figures of disk d: *ret_total since the probe started or was reset, as the probe
 * counts them now (read once per event loop iteration), *ret_window over the last
 * StallWindowSec= as of the last poll (either may be NULL), *ret_reason what the adaptive policy
 * made of them (may be NULL). A disk without waits reads count 0. Returns 0, or -EOPNOTSUPP
 * when nothing measures (probe mode "unavailable"): never zeros that look measured. */
int manager_device_stalls(Manager *m, const EngineDevice *d, StallStats *ret_total, StallStats *ret_window,
                          const char **ret_reason);

/* Forgets the measured waits of one disk (or partition: its disk), or of all when name is
 * NULL or empty. Returns 0, -EINVAL/-ENODEV for a bad or unknown name, -EOPNOTSUPP when
 * nothing measures, or -errno. */
int manager_reset_stalls(Manager *m, const char *name);

/* What the probe could not record since it started: waits (*ret_waits) and commands of waits
 * (*ret_comms). Returns 0, or -EOPNOTSUPP when nothing measures. */
int manager_stall_losses(Manager *m, uint64_t *ret_waits, uint64_t *ret_comms);

/* Writes the stall members of d ("stalls": {...}) into an open JSON object. */
void manager_device_stalls_json(Manager *m, const EngineDevice *d, JsonWriter *w);

/* Writes the daemon's view (policy, devices, filesystems) as one JSON object to f. This
 * is also what runtime_dir/devices.json holds after each reconcile. */
void manager_dump_json(Manager *m, FILE *f, bool pretty);

/* Rewrites runtime_dir/devices.json (manager_dump_json()) when its content changed. Returns 0
 * or -errno. */
int manager_write_dump(Manager *m);
