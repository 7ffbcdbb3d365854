/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the Manager shows after each reconcile: device events, the consumers of each disk and
 * their hazards, the service status and devices.json. */
#include <inttypes.h>
#include <stdio_ext.h>
#include <systemd/sd-daemon.h>

#include "history.h"
#include "log.h"
#include "manager-internal.h"
#include "message-id.h"
#include "openers.h"
#include "remount.h"
#include "util.h"

/* FNV-1a: what the Manager keeps of a content it only compares with the next one. */
static uint64_t fnv1a(const char *buf, size_t size) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (size_t i = 0; i < size; i++)
                h = (h ^ (unsigned char) buf[i]) * UINT64_C(1099511628211);
        return h;
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

void manager_notify_status(Manager *m, const char *extra) {
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

void manager_consumers_free(Manager *m) {
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

void manager_publish_devices(Manager *m, const bool *only) {
        bool any_changed = false;
        int r;

        if (m->scanned) {
                mount_tracker_update_pending(m->mounts, &m->engine);
                if (m->remount)
                        remount_annotate(m->remount, m->mounts);
                r = manager_update_consumers(m);
                if (r < 0)
                        log_error_errno(r, "Cannot work out what each consumer of the disks took: %m");
                manager_update_shadows(m);
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

void manager_publish(Manager *m) {
        manager_publish_devices(m, NULL);
}
