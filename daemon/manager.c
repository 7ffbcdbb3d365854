/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Manager (manager.h): its snapshots of the disks, the one path of every change (scan,
 * apply, reconcile), reload, and its life from manager_new() to manager_free(). */
#include <malloc.h>
#include <signal.h>
#include <systemd/sd-daemon.h>

#include "config-in-force.h"
#include "log.h"
#include "manager-internal.h"
#include "manager-overrides.h"
#include "manager-stalls.h"
#include "message-id.h"
#include "remount.h"
#include "util.h"

void manager_snapshot_done(DeviceSnapshot *s) {
        free(s->name);
        free(s->last_error);
        free(s->need_problem);
        strv_free(s->hazards);
}

/* The index of the first snapshot whose name is not below name (the array is sorted). */
static size_t snapshot_position(const Manager *m, const char *name) {
        size_t lo = 0, hi = m->n_snapshots;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (strcmp(m->snapshots[mid].name, name) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

DeviceSnapshot *manager_snapshot_find(Manager *m, const char *name) {
        size_t i = snapshot_position(m, name);
        return i < m->n_snapshots && streq(m->snapshots[i].name, name) ? &m->snapshots[i] : NULL;
}

/* The snapshot of f, created (as "never published") for a disk seen for the first time. */
static DeviceSnapshot *snapshot_get(Manager *m, const DeviceFacts *f) {
        size_t i = snapshot_position(m, f->name);
        DeviceSnapshot *s;

        if (i < m->n_snapshots && streq(m->snapshots[i].name, f->name))
                return &m->snapshots[i];
        s = realloc(m->snapshots, sizeof(DeviceSnapshot) * (m->n_snapshots + 1));
        if (!s)
                return NULL;
        m->snapshots = s;
        _cleanup_free_ char *name = strdup(f->name);
        if (!name)
                return NULL;
        memmove(&s[i + 1], &s[i], sizeof(DeviceSnapshot) * (m->n_snapshots - i));
        s[i] = (DeviceSnapshot){ .name = TAKE_PTR(name), .diskseq = f->diskseq, .flag = f->stable_writes };
        m->n_snapshots++;
        return &s[i];
}

void manager_emit(Manager *m, ManagerEventType type, const char *device, const ApplyResult *result) {
        if (m->handler)
                m->handler(m, &(ManagerEvent){ .type = type, .device = device, .result = result },
                           m->handler_userdata);
}

/* Logs drift of d: a flag that moved away from what we want since our last look, by someone
 * else. */
static int manager_check_drift(Manager *m, const EngineDevice *d) {
        const DeviceFacts *f = d->facts;
        DeviceSnapshot *s = snapshot_get(m, f);

        if (!s)
                return -ENOMEM;
        if (s->diskseq != f->diskseq) {
                /* Another device under the same name: nothing to compare with. */
                s->diskseq = f->diskseq;
                s->flag = f->stable_writes;
                s->last_error = mfree(s->last_error);
                return 0;
        }
        /* Before our first look (a disk seen for the first time by this run), its history. */
        if (!s->published && f->moved_from != ATTR_ABSENT)
                s->flag = f->moved_from;
        if (s->flag != ATTR_ABSENT && f->stable_writes != ATTR_ABSENT && f->stable_writes != s->flag &&
            (d->decision.desired < 0 || d->decision.desired != f->stable_writes))
                log_struct(LOG_WARNING, d->decision.desired < 0 ? NULL : SP_MESSAGE_DRIFT,
                           LOG_FIELDS("STABLEPAGES_DEVICE", f->name),
                           "%s: queue/stable_writes changed from %d to %d outside this daemon%s", f->name,
                           s->flag, f->stable_writes,
                           d->decision.desired < 0 ? " (left as it is)" : ", correcting it");
        s->flag = f->stable_writes;
        return 0;
}

/* Facts, decisions, then the mount table (new mounts take the device state from before
 * any write of ours in this pass). Logs drift: a flag that moved away from what we want
 * since our last look, by someone else. */
static int manager_scan(Manager *m) {
        Engine *e = &m->engine;
        int r;

        r = engine_scan(e);
        if (r >= 0) {
                /* Runtime overrides follow their disk: gone with it, never another's. */
                r = manager_update_overrides(m);
                if (r > 0)
                        r = engine_scan(e);
        }
        /* A failed scan can leave partial tables behind: show nothing rather than those. */
        m->scanned = r >= 0;
        if (r < 0)
                return r;

        for (size_t i = 0; i < e->table.n; i++) {
                r = manager_check_drift(m, &e->devices[i]);
                if (r < 0)
                        return r;
        }

        r = mount_tracker_refresh(m->mounts, e, NULL);
        if (r < 0)
                log_error_errno(r, "Cannot read the mount table, keeping the last one: %m");
        r = swap_tracker_refresh(m->swaps, e, m->mounts);
        if (r < 0)
                log_error_errno(r, "Cannot read /proc/swaps, keeping the last swap areas: %m");
        return 0;
}

/* Applies d's decision; logs each distinct failure once and tells the handler. */
static int manager_apply_one(Manager *m, EngineDevice *d, ApplyResult *ret) {
        _cleanup_(apply_result_done) ApplyResult res = {};
        DeviceSnapshot *s = snapshot_get(m, d->facts);
        int r;

        if (!s)
                return -ENOMEM;
        r = engine_apply(&m->engine, d, &res);
        if (r == -ENOMEM || !res.message)
                return -ENOMEM;
        s->flag = d->facts->stable_writes;
        if (r < 0) {
                if (!s->last_error || !streq(s->last_error, res.message)) {
                        log_full(r == -EPERM ? LOG_WARNING : LOG_ERR, "%s", res.message);
                        free(s->last_error);
                        s->last_error = strdup(res.message);
                        manager_emit(m, MANAGER_APPLIED, d->facts->name, &res);
                }
        } else {
                s->last_error = mfree(s->last_error);
                if (res.changed)
                        manager_emit(m, MANAGER_APPLIED, d->facts->name, &res);
        }
        if (ret)
                *ret = (ApplyResult){ .changed = res.changed,
                                      .old_value = res.old_value,
                                      .new_value = res.new_value,
                                      .message = TAKE_PTR(res.message) };
        return r;
}

/* Applies the decisions of every disk, or of those with only[i] when only is not NULL. */
static int manager_apply_all(Manager *m, const bool *only) {
        for (size_t i = 0; i < manager_n_devices(m); i++) {
                EngineDevice *d = manager_device(m, i);
                if (only && !only[i])
                        continue;
                if (d->decision.desired < 0)
                        continue; /* observe, unmanaged: nothing to write */
                if (remount_holds(m->remount, d->facts->name))
                        continue; /* a cycle owns the flag until it is over */
                if (manager_apply_one(m, d, NULL) == -ENOMEM)
                        return -ENOMEM;
        }
        return 0;
}

int manager_reconcile(Manager *m) {
        int r = manager_scan(m);
        if (r < 0) {
                manager_publish(m);
                return log_error_errno(r, "Cannot read the block devices: %m");
        }
        r = manager_apply_all(m, NULL);
        manager_publish(m);
        /* A full scan replaced every disk's facts and decisions: give back the heap the old
         * ones leave in pieces (RSS grew from 6 to 14 MiB over ten rescans of 1,024 disks). */
        (void) malloc_trim(0);
        if (r < 0)
                return log_oom();
        if (m->remount && m->engine.config.apply_mounted == APPLY_MOUNTED_REMOUNT_IDLE)
                remount_auto(m->remount);
        return 0;
}

int manager_reconcile_disks(Manager *m, char *const *disks) {
        _cleanup_free_ bool *redone = NULL;
        int r;

        if (!m->scanned)
                return manager_reconcile(m);
        r = engine_rescan_disks(&m->engine, disks, &redone);
        if (r == -ESTALE) {
                log_debug("A disk was added, removed or replaced meanwhile: rescanning every disk.");
                return manager_reconcile(m);
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot re-read the disks of an event, rescanning every disk: %m");
                return manager_reconcile(m);
        }
        for (size_t i = 0; i < manager_n_devices(m); i++)
                if (redone[i] && manager_check_drift(m, manager_device(m, i)) < 0)
                        return log_oom();
        r = manager_apply_all(m, redone);
        manager_publish_devices(m, redone);
        if (r < 0)
                return log_oom();
        if (m->remount && m->engine.config.apply_mounted == APPLY_MOUNTED_REMOUNT_IDLE)
                remount_auto(m->remount);
        return 0;
}

/* Writes the configuration in force where the udev applier finds it while the files have
 * errors, under the lock that says this daemon runs (config-in-force.h). */
static void manager_save_in_force(Manager *m) {
        const char *dir = m->engine.runtime_dir;
        pid_t holder = 0;
        int r;

        if (m->in_force_lock < 0) {
                r = config_in_force_lock(dir, &holder);
                if (r == -EBUSY)
                        log_warning("Another process (pid %d) holds %s/" CONFIG_IN_FORCE_LOCK
                                    ": is another stablepagesd using %s?",
                                    (int) holder, dir, dir);
                else if (r < 0)
                        log_warning_errno(r, "Cannot lock %s/" CONFIG_IN_FORCE_LOCK ": %m", dir);
                else
                        m->in_force_lock = r;
        }
        r = config_in_force_save(dir, &m->engine.config);
        if (r < 0)
                log_warning_errno(r,
                                  "Cannot write the configuration in force to %s/" CONFIG_IN_FORCE_FILE
                                  ": the udev applier reads the files even when they have errors: %m",
                                  dir);
}

static void log_diags(const ConfigDiags *d) {
        for (size_t i = 0; i < d->n; i++) {
                const ConfigDiag *c = &d->items[i];
                if (c->line > 0)
                        log_full(c->level == DIAG_ERROR ? LOG_ERR : LOG_WARNING, "%s:%u: %s", c->file,
                                 c->line, c->message);
                else /* the file as a whole, as config_diags_print() shows it */
                        log_full(c->level == DIAG_ERROR ? LOG_ERR : LOG_WARNING, "%s: %s", c->file,
                                 c->message);
        }
}

int manager_reload(Manager *m, ConfigDiags *ret_diags) {
        Engine *e = &m->engine;
        _cleanup_(config_done) Config c = {};
        ConfigDiags d = {};
        int r;

        (void) sd_notifyf(false, "RELOADING=1\nSTATUS=Reloading configuration...\nMONOTONIC_USEC=%llu",
                          (unsigned long long) now_usec_monotonic());

        r = config_load(e->config_file, e->dropin_dir, &c, &d);
        if (r < 0) {
                config_diags_done(&d);
                manager_notify_status(m, "READY=1\n");
                return log_error_errno(r, "Cannot load the configuration, keeping the one in force: %m");
        }
        log_diags(&d);
        size_t errors = config_diags_errors(&d);
        if (errors > 0) {
                log_error("%s and its drop-ins have %zu error%s, keeping the configuration in force.",
                          e->config_file, errors, errors == 1 ? "" : "s");
                if (ret_diags)
                        *ret_diags = d;
                else
                        config_diags_done(&d);
                manager_notify_status(m, "READY=1\n");
                return -EINVAL;
        }

        engine_set_config(e, &c);
        config_diags_done(&e->diags);
        e->diags = d; /* warnings only */
        manager_save_in_force(m);
        if (ret_diags)
                *ret_diags = (ConfigDiags){};
        log_info("Configuration reloaded: Policy=%s.", policy_mode_to_string(e->config.policy));

        r = manager_arm_rescan(m);
        if (r < 0)
                log_error_errno(r, "Cannot arm the rescan timer: %m");
        if (m->probe) {
                r = manager_arm_stall_timers(m);
                if (r < 0)
                        log_error_errno(r, "Cannot arm the stall and metrics timers: %m");
        }
        (void) manager_reconcile(m);
        manager_emit(m, MANAGER_RELOADED, NULL, NULL);
        manager_notify_status(m, "READY=1\n");
        return 0;
}

EngineDevice *manager_find_device(Manager *m, const char *name) {
        if (!m->scanned || !device_name_is_valid(name))
                return NULL;
        return engine_find(&m->engine, name);
}

int manager_apply_device(Manager *m, const char *name, ApplyResult *ret) {
        EngineDevice *d;
        int r, q;

        *ret = (ApplyResult){};
        if (!device_name_is_valid(name))
                return -EINVAL;
        r = manager_scan(m);
        if (r < 0) {
                manager_publish(m);
                return r;
        }
        d = manager_find_device(m, name);
        if (d && remount_holds(m->remount, d->facts->name)) {
                ret->message = strdup_printf(
                        "%s: an unmount and mount cycle of its filesystem is in progress", d->facts->name);
                r = ret->message ? -EBUSY : -ENOMEM;
        } else
                r = d ? manager_apply_one(m, d, ret) : -ENODEV;
        q = manager_apply_all(m, NULL);
        manager_publish(m);
        return r == -ENOMEM ? r : q < 0 ? q : r;
}

void manager_set_event_handler(Manager *m, manager_event_handler_t handler, void *userdata) {
        m->handler = handler;
        m->handler_userdata = userdata;
}

int manager_get_mounts(Manager *m, const char *disk, const TrackedMount ***ret) {
        const TrackedMount **l = calloc(m->mounts->n + 1, sizeof(TrackedMount *));
        size_t n = 0;

        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < m->mounts->n; i++) {
                const TrackedMount *t = &m->mounts->mounts[i];
                if (!disk || (t->disk && streq(t->disk, disk)))
                        l[n++] = t;
        }
        *ret = l;
        return (int) n;
}

unsigned manager_count_pending(const Manager *m, const char *disk) {
        return m->mounts ? mount_tracker_count_pending(m->mounts, disk) : 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) manager_reload(userdata, NULL);
        return 0;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        log_debug("Received SIG%s, exiting.", sigabbrev_np(si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(m->event, 0);
}

/* A daemon killed between writing and renaming a state file leaves the temp file behind. */
static void remove_stale_temp_files(const Engine *e) {
        _cleanup_free_ char *history = path_join(e->runtime_dir, "history");
        const char *dirs[] = { e->runtime_dir, history, e->dropin_dir };

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                int r = dirs[i] ? unlink_stale_temp_files(dirs[i]) : 0;
                if (r < 0)
                        log_warning_errno(r, "Cannot clean up temp files in %s: %m", dirs[i]);
                else if (r > 0)
                        log_info("Removed %d temp file(s) left in %s by a writer that died", r, dirs[i]);
        }
}

int manager_new(const EngineOptions *options, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        sigset_t mask;
        int r;

        /* Large buffers (a ListDevices reply of a thousand disks, devices.json) straight from
         * mmap() and back to the kernel when freed: glibc otherwise raises this threshold after
         * the first such free and keeps them in the heap for good. */
        (void) mallopt(M_MMAP_THRESHOLD, 64 * 1024);

        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        m->in_force_lock = -EBADF;
        m->shadows_wanted = -1;
        r = engine_init(&m->engine, options);
        if (r < 0)
                return r;
        r = mkdir_p(m->engine.runtime_dir, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s: %m", m->engine.runtime_dir);
        remove_stale_temp_files(&m->engine);

        r = engine_load_config(&m->engine);
        if (r < 0)
                return r;
        log_diags(&m->engine.diags);
        manager_save_in_force(m);
        r = engine_load_overrides(&m->engine);
        if (r < 0)
                log_warning_errno(r, "Cannot read runtime overrides in %s, ignoring: %m",
                                  m->engine.runtime_dir);
        r = engine_load_learned(&m->engine);
        if (r < 0)
                log_warning_errno(r, "Cannot read the learned decisions in %s, ignoring them: %m",
                                  m->engine.state_dir);

        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return r;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        if ((r = sd_event_add_signal(m->event, NULL, SIGTERM, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGINT, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m)) < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
}

static int on_probe_start(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        int r;

        m->probe_start = sd_event_source_disable_unref(m->probe_start);
        r = stall_probe_new(&m->probe);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the stall probe, nothing is measured: %m");
                return 0;
        }
        m->stall_poll_usec = now_usec_boottime();
        log_full(manager_stall_mode(m) == STALL_PROBE_BPF ? LOG_INFO : LOG_WARNING, "Stall probe: %s (%s).",
                 stall_probe_mode_to_string(manager_stall_mode(m)), manager_stall_reason(m));
        if (m->scanned)
                manager_update_shadows(m);
        r = manager_arm_stall_timers(m);
        if (r < 0)
                log_error_errno(r, "Cannot arm the stall and metrics timers, stall figures stop: %m");
        /* Start-up is over: give back what the scan and loading the probe left free in the
         * heap. */
        (void) malloc_trim(0);
        return 0;
}

int manager_start(Manager *m) {
        int r;

        r = udev_watch_new(m->event, manager_on_uevent, m, &m->udev);
        if (r < 0)
                return log_error_errno(r, "Cannot listen for block device events: %m");
        r = mount_tracker_new(m->event, m->engine.runtime_dir, manager_on_mounts_changed, m, &m->mounts);
        if (r < 0)
                return log_error_errno(r, "Cannot follow mount table changes: %m");
        r = swap_tracker_new(m->event, m->engine.runtime_dir, manager_on_swaps_changed, m, &m->swaps);
        if (r < 0)
                return log_error_errno(r, "Cannot follow swap areas: %m");
        r = manager_remount_new(m);
        if (r < 0)
                return log_error_errno(r, "Cannot set up unmount and mount cycles: %m");
        /* The probe loads BPF programs (5-15 ms of CPU, far more under valgrind): after READY=1
         * (manager_notify_ready() enables it), first thing in the event loop then. */
        r = sd_event_add_defer(m->event, &m->probe_start, on_probe_start, m);
        if (r >= 0)
                r = sd_event_source_set_priority(m->probe_start, SD_EVENT_PRIORITY_IMPORTANT);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->probe_start, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Cannot schedule the start of the stall probe: %m");
        (void) sd_event_source_set_description(m->probe_start, "probe-start");

        r = manager_reconcile(m);
        if (r < 0)
                return r;
        r = manager_arm_rescan(m);
        if (r < 0)
                return log_error_errno(r, "Cannot arm the rescan timer: %m");

        log_info("Started: Policy=%s, %zu disks, %zu filesystems tracked, %s uevents.",
                 policy_mode_to_string(m->engine.config.policy), manager_n_devices(m), m->mounts->n,
                 udev_watch_source(m->udev));
        return 0;
}

void manager_notify_ready(Manager *m) {
        manager_notify_status(m, "READY=1\n");
        if (m->probe_start)
                (void) sd_event_source_set_enabled(m->probe_start, SD_EVENT_ONESHOT);
}

int manager_run(Manager *m) {
        return sd_event_loop(m->event);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        remount_free(m->remount); /* first: waits for a cycle in progress */
        sd_event_source_disable_unref(m->uevent_delay);
        sd_event_source_disable_unref(m->rescan);
        sd_event_source_disable_unref(m->probe_start);
        sd_event_source_disable_unref(m->stall_timer);
        sd_event_source_disable_unref(m->metrics_timer);
        stall_probe_free(m->probe);
        manager_stalls_done(m);
        mount_tracker_free(m->mounts);
        swap_tracker_free(m->swaps);
        manager_consumers_free(m);
        udev_watch_free(m->udev);
        sd_event_unref(m->event);
        for (size_t i = 0; i < m->n_snapshots; i++)
                manager_snapshot_done(&m->snapshots[i]);
        free(m->snapshots);
        strv_free(m->uevent_disks);
        free(m->status);
        if (m->in_force_lock >= 0)
                close(m->in_force_lock);
        engine_done(&m->engine);
        return mfree(m);
}
