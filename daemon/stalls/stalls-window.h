/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Windowed stall figures of one disk: the probe's counters only grow, so the waits of the
 * last StallWindowSec= are the newest snapshot minus the newest one taken at least a window
 * earlier. Pure: snapshots in, figures out. */

#include "stalls.h"

typedef struct StallSnapshot {
        uint64_t usec; /* when it was taken (any one clock) */
        StallStats stats;
} StallSnapshot;

typedef struct StallWindow {
        StallSnapshot *snaps; /* oldest first */
        size_t n;
} StallWindow;

/* Appends the cumulative stats s of the disk taken at now_usec, and drops the snapshots that
 * a window of window_usec no longer needs (all but the newest one at or before
 * now_usec - window_usec). A disk seen for the first time should first get an empty snapshot
 * (stall_window_push_empty) at the time of the previous poll, so that its first waits count.
 * Returns 0 or -ENOMEM. */
int stall_window_push(StallWindow *w, uint64_t now_usec, const StallStats *s, uint64_t window_usec);

/* Appends a snapshot of no waits of the disk of s (same bdi, devnum and modes) at usec.
 * Returns 0 or -ENOMEM. */
int stall_window_push_empty(StallWindow *w, uint64_t usec, const StallStats *s);

/* The waits within the window: newest minus oldest snapshot; *ret_span_usec is the time
 * between them (shorter than the window while the history is). Returns 0, -ENODATA when
 * there is no snapshot. A probe reset in between counts everything since the reset. */
int stall_window_get(const StallWindow *w, StallStats *ret, uint64_t *ret_span_usec);

/* Forgets every snapshot. */
void stall_window_done(StallWindow *w);
