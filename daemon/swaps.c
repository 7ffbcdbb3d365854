/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Active swap areas and the state each took at swapon (swaps.h): /proc/swaps followed, and the
 * areas refreshed against the engine's disks and the mounts. */
#include <fcntl.h>

#include "consumers.h"
#include "log.h"
#include "swaps.h"
#include "util.h"

#define PROC_SWAPS "/proc/swaps"

static int on_swaps_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        SwapTracker *t = userdata;

        t->handler(t, t->userdata);
        return 0;
}

int swap_tracker_new(sd_event *e, const char *runtime_dir, swap_tracker_handler_t handler, void *userdata,
                     SwapTracker **ret) {
        _cleanup_(swap_tracker_freep) SwapTracker *t = calloc(1, sizeof(SwapTracker));
        int r;

        if (!t)
                return -ENOMEM;
        t->fd = -EBADF;
        t->handler = handler;
        t->userdata = userdata;
        t->runtime_dir = strdup(runtime_dir);
        if (!t->runtime_dir)
                return -ENOMEM;
        t->fd = open(PROC_SWAPS, O_RDONLY | O_CLOEXEC);
        if (t->fd < 0)
                log_debug_errno(errno, "Cannot open %s, no swap areas followed: %m", PROC_SWAPS);
        else {
                r = sd_event_add_io(e, &t->io, t->fd, EPOLLPRI, on_swaps_event, t);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(t->io, "swap-monitor");
        }
        r = swap_records_load(runtime_dir, &t->records);
        if (r < 0)
                log_warning_errno(r,
                                  "Cannot read %s/swaps, what existing swap areas took will be assumed: %m",
                                  runtime_dir);
        *ret = TAKE_PTR(t);
        return 0;
}

SwapTracker *swap_tracker_free(SwapTracker *t) {
        if (!t)
                return NULL;
        sd_event_source_disable_unref(t->io);
        if (t->fd >= 0)
                close(t->fd);
        swap_areas_done(&t->areas);
        swap_areas_done(&t->records);
        free(t->runtime_dir);
        return mfree(t);
}

/* The block device of the mount with the anonymous device number devnum (btrfs). */
static dev_t mount_source(dev_t devnum, void *userdata) {
        const MountTracker *m = userdata;

        for (size_t i = 0; m && i < m->n; i++)
                if (m->mounts[i].devnum == devnum)
                        return m->mounts[i].source_devnum;
        return 0;
}

static bool sets_equal(const SwapAreas *a, const SwapAreas *b) {
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++) {
                const SwapArea *o = swap_areas_find(b, &a->items[i]);
                if (!o || !streq(o->disk ?: "", a->items[i].disk ?: ""))
                        return false;
        }
        return true;
}

int swap_tracker_refresh(SwapTracker *t, const Engine *e, const MountTracker *mounts) {
        _cleanup_(swap_areas_done) SwapAreas next = {};
        _cleanup_free_ char *text = NULL;
        uint64_t now = now_usec_realtime();
        int r;

        if (t->fd < 0)
                return 0;
        r = read_full_file(PROC_SWAPS, 1024 * 1024, &text, NULL);
        if (r < 0)
                return r;
        r = swap_areas_parse(text, &next);
        if (r < 0)
                return r;
        for (size_t i = 0; i < next.n; i++) {
                SwapArea *a = &next.items[i];
                const DeviceFacts *f;
                const SwapArea *old;

                r = swap_area_resolve(a, mount_source, (void *) mounts);
                if (r < 0)
                        log_debug_errno(r, "Cannot find the device of swap area %s: %m", a->path);
                f = a->devnum ? device_table_find_devnum(&e->table, a->devnum) : NULL;
                if (f && !(a->disk = strdup(f->name)))
                        return -ENOMEM;
                if ((old = swap_areas_find(&t->areas, a)) && (old->disk || !f)) {
                        a->captured = old->captured;
                        a->origin = old->origin;
                        a->since_usec = old->since_usec;
                } else if (!t->initialized && (old = swap_areas_find(&t->records, a))) {
                        a->captured = old->captured;
                        a->origin = old->origin;
                        a->since_usec = old->since_usec;
                } else {
                        /* Its disk's state now; an area whose disk was not known yet is dated now. */
                        a->captured = f && disk_in_force_now(e, f);
                        a->origin = t->initialized && !old ? EFFECTIVE_OBSERVED : EFFECTIVE_ASSUMED;
                        a->since_usec = now;
                        if (t->initialized && f)
                                log_debug("Swap area %s on %s activated with stable writes %s.", a->path,
                                          f->name, a->captured ? "on" : "off");
                }
        }
        bool changed = !t->initialized || !sets_equal(&next, &t->areas);
        swap_areas_done(&t->areas);
        t->areas = next;
        next = (SwapAreas){};
        if (!t->initialized) {
                t->initialized = true;
                swap_areas_done(&t->records);
        }
        if (changed) {
                r = swap_records_save(t->runtime_dir, &t->areas);
                if (r < 0)
                        log_error_errno(r, "Cannot save what swap areas took to %s/swaps: %m",
                                        t->runtime_dir);
        }
        return 0;
}
