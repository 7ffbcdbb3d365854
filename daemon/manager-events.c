/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Manager's event sources: uevents (collected, then one rescan), mount table and swap
 * changes, the periodic rescan. */
#include "log.h"
#include "manager-internal.h"
#include "util.h"

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

void manager_on_uevent(UdevWatch *w, const char *action, const char *sysname, const char *devtype,
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

void manager_on_mounts_changed(MountTracker *t, void *userdata) {
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

void manager_on_swaps_changed(SwapTracker *t, void *userdata) {
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

int manager_arm_rescan(Manager *m) {
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
