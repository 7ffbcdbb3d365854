/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Active swap areas and what each took at swapon (swap-areas.h): /proc/swaps is followed
 * (POLLPRI on the open file after each swapon and swapoff), an area that appears gets the
 * state in force on its disk at that moment ("observed"); those older than the daemon get an
 * earlier run's record (RUNTIME_DIR/swaps) or the state when first seen ("assumed", which
 * consumers.h dates by the disk's flag history). A swap file is resolved to the disk of its
 * filesystem; a btrfs one through the mount it is on. */

#include <systemd/sd-event.h>

#include "engine.h"
#include "mounts.h"
#include "swap-areas.h"

typedef struct SwapTracker SwapTracker;

/* Called (from the event loop) after a swapon or swapoff. */
typedef void (*swap_tracker_handler_t)(SwapTracker *t, void *userdata);

struct SwapTracker {
        char *runtime_dir;
        int fd; /* /proc/swaps, polled for changes; -1 without swap support */
        sd_event_source *io;
        swap_tracker_handler_t handler;
        void *userdata;
        SwapAreas areas;   /* active now */
        SwapAreas records; /* an earlier run's, used by the first refresh */
        bool initialized;
};

/* Starts following swap changes on e and loads the records of an earlier run. Does not read
 * the table: call swap_tracker_refresh(). Returns 0 and *ret, or -errno. */
int swap_tracker_new(sd_event *e, const char *runtime_dir, swap_tracker_handler_t handler, void *userdata,
                     SwapTracker **ret);

SwapTracker *swap_tracker_free(SwapTracker *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(SwapTracker *, swap_tracker_free);

/* Re-reads /proc/swaps: areas seen before keep what they took, new ones get the state of their
 * disk now (re-read from sysfs), vanished ones are dropped; saves the records when the set
 * changed. mounts (may be NULL) resolves btrfs swap files. Returns 0 or -errno (the set is then
 * unchanged). */
int swap_tracker_refresh(SwapTracker *t, const Engine *e, const MountTracker *mounts);
