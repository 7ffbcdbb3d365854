/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stall figures of one disk's last StallWindowSec=, from the probe's growing counters
 * (stalls-window.h). Pure. */
#include <stdlib.h>
#include <string.h>

#include "stalls-window.h"

static int append(StallWindow *w, uint64_t usec, const StallStats *s) {
        StallSnapshot *snaps = realloc(w->snaps, sizeof(StallSnapshot) * (w->n + 1));

        if (!snaps)
                return -ENOMEM;
        w->snaps = snaps;
        w->snaps[w->n++] = (StallSnapshot){ .usec = usec, .stats = *s };
        return 0;
}

int stall_window_push(StallWindow *w, uint64_t now_usec, const StallStats *s, uint64_t window_usec) {
        size_t keep = 0;
        int r = append(w, now_usec, s);

        if (r < 0)
                return r;
        /* The newest snapshot at or before the window's start is the base; older ones go. */
        for (size_t i = 0; i + 1 < w->n && now_usec >= window_usec; i++)
                if (w->snaps[i].usec <= now_usec - window_usec)
                        keep = i;
        if (keep > 0) {
                memmove(w->snaps, w->snaps + keep, sizeof(StallSnapshot) * (w->n - keep));
                w->n -= keep;
        }
        return 0;
}

int stall_window_push_empty(StallWindow *w, uint64_t usec, const StallStats *s) {
        StallStats empty = { .devnum = s->devnum,
                             .has_durations = s->has_durations,
                             .classified = s->classified,
                             .has_shadows = s->has_shadows,
                             .shadow_epoch = s->shadow_epoch,
                             .has_direct = s->has_direct };

        memcpy(empty.bdi, s->bdi, sizeof(empty.bdi));
        return append(w, usec, &empty);
}

int stall_window_get(const StallWindow *w, StallStats *ret, uint64_t *ret_span_usec) {
        if (w->n == 0)
                return -ENODATA;
        const StallSnapshot *first = &w->snaps[0], *last = &w->snaps[w->n - 1];
        int r = stall_stats_subtract(&last->stats, &first->stats, ret);
        if (r < 0)
                return r;
        if (ret_span_usec)
                *ret_span_usec = last->usec - first->usec;
        return 0;
}

void stall_window_done(StallWindow *w) {
        free(w->snaps);
        *w = (StallWindow){};
}
