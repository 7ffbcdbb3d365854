/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio_ext.h>
#include <systemd/sd-daemon.h>

#include "config-in-force.h"
#include "history.h"
#include "learned.h"
#include "log.h"
#include "manager-stalls.h"
#include "manager.h"
#include "message-id.h"
#include "openers.h"
#include "remount.h"
#include "util.h"

static void manager_snapshot_done(DeviceSnapshot *s) {
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

static DeviceSnapshot *manager_snapshot_find(Manager *m, const char *name) {
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

/* FNV-1a: what the Manager keeps of a content it only compares with the next one. */
static uint64_t fnv1a(const char *buf, size_t size) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (size_t i = 0; i < size; i++)
                h = (h ^ (unsigned char) buf[i]) * UINT64_C(1099511628211);
        return h;
}

static void manager_emit(Manager *m, ManagerEventType type, const char *device, const ApplyResult *result) {
        if (m->handler)
                m->handler(m, &(ManagerEvent){ .type = type, .device = device, .result = result },
                           m->handler_userdata);
}

/* Replaces the runtime overrides by *o (taken) once saved: on failure nothing changed. */
static int manager_save_overrides(Manager *m, RuntimeOverrides *o) {
        Engine *e = &m->engine;
        int r = state_save_overrides(e->runtime_dir, o);
        if (r < 0)
                return log_error_errno(r, "Cannot save runtime overrides to %s: %m", e->runtime_dir);
        runtime_overrides_done(&e->overrides);
        e->overrides = *o;
        *o = (RuntimeOverrides){};
        return 0;
}

/* A copy of the runtime overrides in force, to change and save. */
static int manager_copy_overrides(Manager *m, RuntimeOverrides *ret) {
        const RuntimeOverrides *o = &m->engine.overrides;
        RuntimeOverrides copy = {};

        for (size_t i = 0; i < o->n; i++) {
                int r = runtime_overrides_set(&copy, o->items[i].diskseq, o->items[i].disk,
                                              o->items[i].setting, o->items[i].force);
                if (r < 0) {
                        runtime_overrides_done(&copy);
                        return r;
                }
        }
        *ret = copy;
        return 0;
}

/* Drops the runtime overrides of disks that are gone and binds those an earlier version
 * keyed by name to the disk of that name, each change logged. Needs the table of every disk.
 * Returns > 0 when decisions must be made again, 0, or -ENOMEM. */
static int manager_update_overrides(Manager *m) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides copy = {};
        _cleanup_strv_free_ char **changes = NULL;
        int r, bound;

        r = manager_copy_overrides(m, &copy);
        if (r < 0)
                return r;
        bound = runtime_overrides_update(&copy, &m->engine.table, &changes);
        if (bound < 0)
                return bound;
        if (!changes)
                return 0;
        STRV_FOREACH (c, changes)
                log_info("%s.", *c);
        r = state_save_overrides(m->engine.runtime_dir, &copy);
        if (r < 0)
                log_error_errno(r,
                                "Cannot save runtime overrides to %s, the change holds until a restart: %m",
                                m->engine.runtime_dir);
        runtime_overrides_done(&m->engine.overrides);
        m->engine.overrides = copy;
        copy = (RuntimeOverrides){};
        return bound;
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

/* Everything shown about a disk, to tell whether anything changed. */
static char *device_signature(Manager *m, const EngineDevice *d) {
        const DeviceFacts *f = d->facts;
        char *buf = NULL;
        size_t size = 0;
        FILE *s = open_memstream(&buf, &size);

        if (!s)
                return NULL;
        (void) __fsetlocking(s, FSETLOCKING_BYCALLER);
        fprintf(s, "%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%s|%s|", f->stable_writes, d->class.in_force,
                d->class.integrity_enforced, d->class.need, d->decision.desired, d->decision.source,
                d->decision.refused, d->decision.forced, d->managed, d->setting, d->decision.reason ?: "",
                strv_length(d->class.reasons) > 0 ? d->class.reasons[0] : "");
        STRV_FOREACH (r, d->class.reasons)
                fprintf(s, "%s;", *r);
        fprintf(s, "|%" PRIu64 "|%s|%s|%s", f->diskseq, d->override_scope ?: "", d->override_binding ?: "",
                d->override_source ?: "");
        for (size_t i = 0; i < m->mounts->n; i++) {
                const TrackedMount *t = &m->mounts->mounts[i];
                if (t->disk && streq(t->disk, f->name))
                        fprintf(s, "|%d:%s:%d:%d:%d:%s", t->id, t->target, t->read_only, t->effective,
                                t->pending, t->reason ?: "");
        }
        const DeviceConsumers *c = manager_device_consumers(m, (size_t) (d - m->engine.devices));
        for (size_t i = 0; c && i < c->n; i++)
                fprintf(s, "|%d:%s:%d:%d:%" PRIu64 ":%s", c->items[i].kind, c->items[i].name,
                        c->items[i].captured, c->items[i].hazard, c->items[i].since_usec, c->items[i].note);
        if (fclose(s) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

void manager_dump_json(Manager *m, FILE *f, bool pretty) {
        JsonWriter w;

        json_init(&w, f, pretty);
        json_object_begin(&w);
        json_key(&w, "policy");
        json_string(&w, policy_mode_to_string(m->engine.config.policy));
        json_key(&w, "apply_mounted");
        json_string(&w, apply_mounted_to_string(m->engine.config.apply_mounted));
        json_key(&w, "uevent_source");
        json_string(&w, m->udev ? udev_watch_source(m->udev) : NULL);
        json_key(&w, "stall_probe");
        json_string(&w, stall_probe_mode_to_string(manager_stall_mode(m)));
        json_key(&w, "stall_probe_reason");
        json_string(&w, manager_stall_reason(m));
        uint64_t lost_waits, lost_comms;
        bool measured = manager_stall_losses(m, &lost_waits, &lost_comms) >= 0;
        json_key(&w, "stall_probe_lost");
        if (measured)
                json_uint(&w, lost_waits);
        else
                json_null(&w);
        json_key(&w, "stall_probe_lost_comms");
        if (measured)
                json_uint(&w, lost_comms);
        else
                json_null(&w);
        json_key(&w, "devices");
        json_array_begin(&w);
        for (size_t i = 0; i < manager_n_devices(m); i++) {
                json_object_begin(&w);
                engine_device_json_members(&m->engine, &m->engine.devices[i], &w);
                manager_device_stalls_json(m, &m->engine.devices[i], &w);
                consumers_json(manager_device_consumers(m, i), &w);
                json_object_end(&w);
        }
        json_array_end(&w);
        json_key(&w, "filesystems");
        json_array_begin(&w);
        for (size_t i = 0; m->mounts && i < m->mounts->n; i++)
                tracked_mount_json(&m->mounts->mounts[i], &w);
        json_array_end(&w);
        json_key(&w, "unmounted");
        remount_unmounted_json(m->remount, &w);
        json_object_end(&w);
        fputc('\n', f);
}

int manager_write_dump(Manager *m) {
        _cleanup_free_ char *buf = NULL, *path = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        int r;

        if (!f)
                return -ENOMEM;
        (void) __fsetlocking(f, FSETLOCKING_BYCALLER); /* one thread: no lock per character */
        manager_dump_json(m, f, true);
        if (fclose(f) != 0)
                return -ENOMEM;
        /* A digest of the last content, not a copy of it (a MiB with a thousand disks). */
        uint64_t digest = fnv1a(buf, size);
        if (m->dump_written && m->dump_digest == digest)
                return 0;
        path = path_join(m->engine.runtime_dir, "devices.json");
        if (!path)
                return -ENOMEM;
        r = write_file_atomic(path, buf, size, 0644);
        if (r < 0)
                return r;
        m->dump_digest = digest;
        m->dump_written = true;
        return 0;
}

static void manager_notify_status(Manager *m, const char *extra) {
        unsigned stable = 0;
        _cleanup_free_ char *status = NULL;

        for (size_t i = 0; i < manager_n_devices(m); i++)
                stable += m->engine.devices[i].class.in_force;
        status = strdup_printf("%zu devices, %u stable, %u pending", manager_n_devices(m), stable,
                               manager_count_pending(m, NULL));
        if (!status)
                return;
        if (!extra && m->status && streq(m->status, status))
                return;
        (void) sd_notifyf(false, "%sSTATUS=%s", extra ?: "", status);
        free(m->status);
        m->status = TAKE_PTR(status);
}

const DeviceConsumers *manager_device_consumers(const Manager *m, size_t i) {
        return i < m->n_consumers ? &m->consumers[i] : NULL;
}

static void manager_consumers_free(Manager *m) {
        for (size_t i = 0; i < m->n_consumers; i++)
                device_consumers_done(&m->consumers[i]);
        m->consumers = mfree(m->consumers);
        m->n_consumers = 0;
}

/* Works out what every consumer of every disk took (consumers.h), from the tracked mounts and
 * swap areas. Returns 0 or -ENOMEM (then no disk has consumers). */
static int manager_update_consumers(Manager *m) {
        size_t n = manager_n_devices(m), nm = m->mounts->n, ns = m->swaps ? m->swaps->areas.n : 0, k = 0;
        _cleanup_free_ ConsumerMount *mounts = calloc(nm + 1, sizeof(ConsumerMount));
        _cleanup_free_ ConsumerSwap *swaps = calloc(ns + 1, sizeof(ConsumerSwap));
        int r = 0;

        manager_consumers_free(m);
        if (!mounts || !swaps)
                return -ENOMEM;
        for (size_t i = 0; i < nm; i++) {
                const TrackedMount *t = &m->mounts->mounts[i];
                mounts[i] = (ConsumerMount){ .disk = t->disk,
                                             .target = t->target,
                                             .fstype = t->fstype,
                                             .read_only = t->read_only,
                                             .effective = t->effective,
                                             .origin = t->origin,
                                             .since_usec = t->since_usec,
                                             .own_reason = t->own_reason };
        }
        for (size_t i = 0; i < ns; i++) {
                const SwapArea *a = &m->swaps->areas.items[i];
                if (a->disk)
                        swaps[k++] = (ConsumerSwap){ .disk = a->disk,
                                                     .path = a->path,
                                                     .file = a->file,
                                                     .captured = a->captured,
                                                     .origin = a->origin,
                                                     .since_usec = a->since_usec };
        }
        ConsumerInputs in = { .mounts = mounts, .n_mounts = nm, .swaps = swaps, .n_swaps = k };
        m->consumers = calloc(n + 1, sizeof(DeviceConsumers));
        if (!m->consumers)
                return -ENOMEM;
        m->n_consumers = n;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = consumers_of(&m->engine, manager_device(m, i), &in, &m->consumers[i]);
        if (r < 0)
                manager_consumers_free(m);
        return r;
}

/* The processes with disk d (or a partition of it) open for writing, as far as the daemon may
 * see them. NULL on -ENOMEM. */
static char *manager_describe_openers(const EngineDevice *d) {
        const DeviceFacts *f = d->facts;
        _cleanup_free_ dev_t *devnums = calloc(f->n_partitions + 1, sizeof(dev_t));
        _cleanup_(openers_done) Openers o = {};
        int r;

        if (!devnums)
                return NULL;
        devnums[0] = f->devnum;
        for (size_t i = 0; i < f->n_partitions; i++)
                devnums[i + 1] = f->partitions[i].devnum;
        r = openers_scan(NULL, devnums, f->n_partitions + 1, &o);
        if (r < 0)
                return r == -ENOMEM ? NULL
                                    : strdup_printf("cannot list the processes in /proc: %s", strerror(-r));
        _cleanup_free_ char *seen = openers_describe(&o, f->name);
        if (!seen || o.uninspectable == 0)
                return TAKE_PTR(seen);
        return strdup_printf("%s (the daemon lacks CAP_SYS_PTRACE, which its service's sandbox drops unless "
                             "remount.conf adds it; \"stablepagesctl explain %s\" run as root lists them)",
                             seen, f->name);
}

/* Logs, once each, the hazards of the consumers of disk i at error level (for the page cache
 * with the processes that write through it), and remembers them in s. */
static void manager_log_hazards(Manager *m, size_t i, DeviceSnapshot *s) {
        const DeviceConsumers *c = manager_device_consumers(m, i);
        _cleanup_strv_free_ char **now = NULL;

        for (size_t j = 0; c && j < c->n; j++) {
                const Consumer *x = &c->items[j];
                if (!x->hazard)
                        continue;
                if (!strv_contains(s->hazards, x->note)) {
                        const char *disk = manager_device(m, i)->facts->name;
                        _cleanup_free_ char *who = x->kind == CONSUMER_PAGE_CACHE
                                                           ? manager_describe_openers(manager_device(m, i))
                                                           : NULL;
                        log_struct(LOG_ERR,
                                   x->kind == CONSUMER_PAGE_CACHE ? SP_MESSAGE_HAZARD_PAGE_CACHE
                                   : x->kind == CONSUMER_SWAP     ? SP_MESSAGE_HAZARD_SWAP
                                                                  : SP_MESSAGE_HAZARD,
                                   x->kind == CONSUMER_FILESYSTEM ? LOG_FIELDS("STABLEPAGES_DEVICE", disk,
                                                                               "STABLEPAGES_MOUNT", x->name)
                                                                  : LOG_FIELDS("STABLEPAGES_DEVICE", disk),
                                   "%s%s%s", x->note, who ? " Now: " : "", who ?: "");
                }
                if (strv_extend(&now, x->note) < 0) {
                        log_oom();
                        return;
                }
        }
        strv_free(s->hazards);
        s->hazards = TAKE_PTR(now);
}

/* Pending mounts, device events, status, devices.json: everything derived, in that order.
 * Device events only for the disks with only[i] when only is not NULL (the others did not
 * change). */
static void manager_publish_devices(Manager *m, const bool *only) {
        bool any_changed = false;
        int r;

        if (m->scanned) {
                mount_tracker_update_pending(m->mounts, &m->engine);
                if (m->remount)
                        remount_annotate(m->remount, m->mounts);
                r = manager_update_consumers(m);
                if (r < 0)
                        log_error_errno(r, "Cannot work out what each consumer of the disks took: %m");
        }

        for (size_t i = 0; i < manager_n_devices(m); i++) {
                const EngineDevice *d = &m->engine.devices[i];
                if (only && !only[i])
                        continue;
                DeviceSnapshot *s = manager_snapshot_find(m, d->facts->name);
                char *sig = device_signature(m, d);

                if (!s || !sig) {
                        free(sig);
                        log_oom();
                        continue;
                }
                uint64_t digest = fnv1a(sig, strlen(sig));
                free(sig);
                bool added = !s->published, changed = added || s->signature != digest;
                s->published = true;
                s->signature = digest;
                if (added)
                        log_debug("%s: new %s disk, need %s, stable writes %s, desired %s.", d->facts->name,
                                  device_kind_to_string(d->facts->kind), need_to_string(d->class.need),
                                  d->class.in_force ? "on" : "off", desired_to_string(d->decision.desired));
                if (changed)
                        manager_emit(m, added ? MANAGER_DEVICE_ADDED : MANAGER_DEVICE_CHANGED,
                                     d->facts->name, NULL);
                any_changed = any_changed || changed;
                if (d->need_problem && (!s->need_problem || !streq(s->need_problem, d->need_problem)))
                        log_warning("%s", d->need_problem);
                free(s->need_problem);
                s->need_problem = d->need_problem ? strdup(d->need_problem) : NULL;
                manager_log_hazards(m, i, s);
        }

        /* Disks that are gone: forget them and what we recorded about them. */
        for (size_t i = 0; m->scanned && !only && i < m->n_snapshots;) {
                DeviceSnapshot *s = &m->snapshots[i];
                if (engine_find_disk(&m->engine, s->name)) {
                        i++;
                        continue;
                }
                log_debug("%s: removed.", s->name);
                r = history_forget(m->engine.runtime_dir, s->name, s->diskseq);
                if (r < 0)
                        log_warning_errno(r, "%s: cannot remove its record in %s: %m", s->name,
                                          m->engine.runtime_dir);
                if (s->published)
                        manager_emit(m, MANAGER_DEVICE_REMOVED, s->name, NULL);
                manager_snapshot_done(s);
                memmove(s, s + 1, sizeof(DeviceSnapshot) * (--m->n_snapshots - i));
        }

        manager_notify_status(m, NULL);
        if (only && !any_changed)
                return; /* the disks of an event are as they were: so is devices.json */
        r = manager_write_dump(m);
        if (r < 0)
                log_warning_errno(r, "Cannot write %s/devices.json: %m", m->engine.runtime_dir);
}

static void manager_publish(Manager *m) {
        manager_publish_devices(m, NULL);
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

static int on_uevent_delay(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        _cleanup_strv_free_ char **disks = TAKE_PTR(m->uevent_disks);
        bool full = m->uevent_full;

        m->uevent_full = false;
        if (full || strv_length(disks) == 0)
                (void) manager_reconcile(m);
        else
                (void) manager_reconcile_disks(m, disks);
        return 0;
}

/* Remembers which disk a uevent was about; anything but a "change" of a disk we know (or of
 * one of its partitions) asks for a full rescan. */
static void manager_note_uevent(Manager *m, const char *action, const char *sysname) {
        const EngineDevice *d;

        if (m->uevent_full)
                return;
        if (!action || !streq(action, "change") || !m->scanned) {
                m->uevent_full = true;
                return;
        }
        d = engine_find(&m->engine, sysname);
        if (!d) {
                m->uevent_full = true;
                return;
        }
        if (!strv_contains(m->uevent_disks, d->facts->name) &&
            strv_extend(&m->uevent_disks, d->facts->name) < 0)
                m->uevent_full = true;
}

static void manager_on_uevent(UdevWatch *w, const char *action, const char *sysname, const char *devtype,
                              void *userdata) {
        Manager *m = userdata;
        int r;

        manager_note_uevent(m, action, sysname);

        /* Events come in bursts (a disk and its partitions, add then change): one rescan shortly
         * after the first handles them all. A "change" re-reads only the disks concerned and
         * what stacks with them (engine_rescan_disks()); anything else, every disk. */
        if (m->uevent_delay) {
                int enabled;
                if (sd_event_source_get_enabled(m->uevent_delay, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                        return;
                r = sd_event_source_set_time_relative(m->uevent_delay, MANAGER_UEVENT_DELAY_USEC);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->uevent_delay, SD_EVENT_ONESHOT);
        } else {
                r = sd_event_add_time_relative(m->event, &m->uevent_delay, CLOCK_MONOTONIC,
                                               MANAGER_UEVENT_DELAY_USEC, 1, on_uevent_delay, m);
                if (r >= 0)
                        (void) sd_event_source_set_description(m->uevent_delay, "uevent-delay");
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot arm the uevent timer, rescanning now: %m");
                m->uevent_disks = strv_free(m->uevent_disks);
                m->uevent_full = false;
                (void) manager_reconcile(m);
        }
}

static void manager_on_mounts_changed(MountTracker *t, void *userdata) {
        Manager *m = userdata;
        unsigned unresolved = 0;
        int r;

        if (!m->scanned) {
                (void) manager_reconcile(m);
                return;
        }
        r = mount_tracker_refresh(t, &m->engine, &unresolved);
        if (r < 0)
                log_error_errno(r, "Cannot read the mount table, keeping the last one: %m");
        if (unresolved > 0) {
                /* Mounted from a disk we have not heard of yet (its uevent is still on the way):
                 * rescan, which reads the mount table again. */
                (void) manager_reconcile(m);
                return;
        }
        manager_publish(m);
}

static void manager_on_swaps_changed(SwapTracker *t, void *userdata) {
        Manager *m = userdata;
        int r;

        if (!m->scanned) {
                (void) manager_reconcile(m);
                return;
        }
        r = swap_tracker_refresh(t, &m->engine, m->mounts);
        if (r < 0)
                log_error_errno(r, "Cannot read /proc/swaps, keeping the last swap areas: %m");
        manager_publish(m);
}

static int on_rescan(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r;

        (void) manager_reconcile(m);
        r = sd_event_source_set_time_relative(s, m->engine.config.rescan_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                log_error_errno(r, "Cannot re-arm the rescan timer, periodic rescans stop: %m");
        return 0;
}

/* Arms (or, with RescanSec=0, disarms) the periodic rescan per the configuration. */
static int manager_arm_rescan(Manager *m) {
        uint64_t usec = m->engine.config.rescan_usec;
        int r;

        if (usec == 0)
                return m->rescan ? sd_event_source_set_enabled(m->rescan, SD_EVENT_OFF) : 0;
        if (!m->rescan) {
                r = sd_event_add_time_relative(m->event, &m->rescan, CLOCK_MONOTONIC, usec, USEC_PER_SEC,
                                               on_rescan, m);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(m->rescan, "rescan");
                return 0;
        }
        r = sd_event_source_set_time_relative(m->rescan, usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(m->rescan, SD_EVENT_ONESHOT);
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

int manager_set_override(Manager *m, const char *name, Setting setting, bool force) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides copy = {};
        _cleanup_free_ char *disk = NULL;
        EngineDevice *d;
        uint64_t diskseq;
        int r;

        if (!device_name_is_valid(name) || setting < 0 || setting >= _SETTING_MAX)
                return -EINVAL;
        d = manager_find_device(m, name);
        if (!d)
                return -ENODEV;
        /* The override is for this disk: without a diskseq it could not be told apart from
         * the next disk that takes its name. */
        diskseq = d->facts->diskseq;
        if (diskseq == 0)
                return -EOPNOTSUPP;
        disk = strdup(d->facts->name);
        if (!disk)
                return -ENOMEM;

        r = manager_copy_overrides(m, &copy);
        if (r >= 0)
                r = runtime_overrides_set(&copy, diskseq, disk, setting, force);
        if (r >= 0)
                r = manager_save_overrides(m, &copy);
        if (r < 0)
                return r;
        if (setting == SETTING_AUTO && !force)
                log_info("%s: runtime override removed.", disk);
        else
                log_info("%s: runtime override set to %s%s, bound to this disk (diskseq %" PRIu64 ").", disk,
                         setting_to_string(setting), force ? " (force)" : "", diskseq);
        return manager_reconcile(m);
}

int manager_reset_override(Manager *m, const char *name, char **ret_removed) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides copy = {};
        const RuntimeOverride *o;
        EngineDevice *d;
        char what[32];
        int r;

        if (ret_removed)
                *ret_removed = NULL;
        if (!device_name_is_valid(name))
                return -EINVAL;
        d = manager_find_device(m, name);
        if (!d)
                return -ENODEV;
        o = runtime_overrides_find(&m->engine.overrides, d->facts->diskseq);
        if (!o)
                return 0;
        _cleanup_free_ char *removed = strdup_printf("runtime override %s of %s, bound to diskseq %" PRIu64,
                                                     runtime_override_format(o, what), o->disk, o->diskseq);
        if (!removed)
                return -ENOMEM;
        r = manager_copy_overrides(m, &copy);
        if (r >= 0)
                (void) runtime_overrides_remove(&copy, d->facts->diskseq, "");
        if (r >= 0)
                r = manager_save_overrides(m, &copy);
        if (r < 0)
                return r;
        log_info("%s: removed the %s.", d->facts->name, removed);
        if (ret_removed)
                *ret_removed = TAKE_PTR(removed);
        r = manager_reconcile(m);
        return r < 0 ? r : 1;
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

/* The Remounter's host (RemountHost): the Manager's side of the unmount + mount cycle. */

static void remount_disk_of(const EngineDevice *d, RemountDisk *ret) {
        *ret = (RemountDisk){
                .name = d->facts->name,
                .diskseq = d->facts->diskseq,
                .need = d->class.need,
                .forced = d->decision.forced,
                .managed = d->managed && d->decision.desired >= 0,
                .flag = d->facts->stable_writes,
                .reason = d->decision.reason,
        };
}

static int remount_host_find_disk(void *userdata, const char *name, RemountDisk *ret) {
        const EngineDevice *d = manager_find_device(userdata, name);

        if (!d)
                return -ENODEV;
        remount_disk_of(d, ret);
        return 0;
}

static int remount_host_apply(void *userdata, const char *disk, char **ret_message) {
        _cleanup_(apply_result_done) ApplyResult res = {};
        int r = manager_apply_device(userdata, disk, &res);

        *ret_message = TAKE_PTR(res.message);
        return r;
}

static void remount_host_mounted(void *userdata, int old_id, int new_id, const char *target, int effective) {
        Manager *m = userdata;
        int r;

        /* The tracker must observe the new mount anew, even when the kernel gave it the same id. */
        mount_tracker_forget(m->mounts, old_id, target);
        r = mount_tracker_refresh(m->mounts, &m->engine, NULL);
        if (r < 0)
                log_warning_errno(r, "Cannot read the mount table: %m");
        if (effective >= 0)
                (void) mount_tracker_set_effective(m->mounts, new_id, target, effective);
        mount_tracker_update_pending(m->mounts, &m->engine);
}

static void remount_host_flag_written(void *userdata, const char *disk, int flag) {
        Manager *m = userdata;

        /* The cycle's process wrote it: the next scan must not take it for somebody else's. */
        for (size_t i = 0; i < m->n_snapshots; i++)
                if (streq(m->snapshots[i].name, disk))
                        m->snapshots[i].flag = flag;
}

static void remount_host_finished(void *userdata, const RemountResult *result) {
        Manager *m = userdata;

        if (m->handler)
                m->handler(m,
                           &(ManagerEvent){ .type = MANAGER_REMOUNT_FINISHED,
                                            .device = result->disk,
                                            .remount = result },
                           m->handler_userdata);
}

static void remount_host_reconcile(void *userdata) {
        (void) manager_reconcile(userdata);
}

/* Creates the Remounter, with the Manager as its host. Returns 0 or -errno. */
static int manager_remount_new(Manager *m) {
        return remount_new(&(RemountHost){ .event = m->event,
                                           .engine = &m->engine,
                                           .mounts = m->mounts,
                                           .userdata = m,
                                           .find_disk = remount_host_find_disk,
                                           .apply = remount_host_apply,
                                           .mounted = remount_host_mounted,
                                           .flag_written = remount_host_flag_written,
                                           .finished = remount_host_finished,
                                           .reconcile = remount_host_reconcile },
                           &m->remount);
}

int manager_remount_device(Manager *m, const char *name, remount_done_t done, void *userdata) {
        const EngineDevice *d;
        RemountDisk disk;

        if (!device_name_is_valid(name))
                return -EINVAL;
        d = manager_find_device(m, name);
        if (!d || !m->remount)
                return -ENODEV;
        remount_disk_of(d, &disk);
        return remount_request(m->remount, &disk, done, userdata);
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
