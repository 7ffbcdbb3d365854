/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one JSON form of a disk's stall figures (stall_report_json(), stalls.h). */
#include "json.h"
#include "stalls.h"

static void member_uint_or_null(JsonWriter *w, const char *key, bool known, uint64_t v) {
        json_key(w, key);
        if (known)
                json_uint(w, v);
        else
                json_null(w);
}

/* The q-quantile of s; null without waits. */
static void percentile_json(JsonWriter *w, const char *key, const StallStats *s, double q) {
        uint64_t usec = 0;
        bool known = stall_stats_percentile(s, q, &usec) >= 0;

        member_uint_or_null(w, key, known, usec);
}

static void stats_json(const StallStats *s, JsonWriter *w, bool histogram) {
        json_object_begin(w);
        json_member_uint(w, "count", s->count);
        if (s->has_durations) {
                json_member_uint(w, "sum_usec", s->sum_usec);
                json_member_uint(w, "max_usec", s->max_usec);
                percentile_json(w, "p50_usec", s, 0.5);
                percentile_json(w, "p99_usec", s, 0.99);
                if (histogram) {
                        json_key(w, "hist");
                        json_array_begin(w);
                        for (size_t i = 0; i < STALL_HIST_BUCKETS; i++)
                                json_uint(w, s->hist[i]);
                        json_array_end(w);
                }
        }
        /* Shadow waits, named so wherever they appear (stalls.h): null when not measured. */
        json_member_bool(w, "shadows_measured", s->has_shadows);
        member_uint_or_null(w, "shadow_count", s->has_shadows, s->shadow_count);
        if (s->has_shadows) {
                uint64_t usec = 0;
                json_member_uint(w, "shadow_timed", s->shadow_timed);
                json_member_uint(w, "shadow_sum_usec", s->shadow_sum_usec);
                json_member_uint(w, "shadow_max_usec", s->shadow_max_usec);
                member_uint_or_null(w, "shadow_p50_usec", stall_stats_shadow_percentile(s, 0.5, &usec) >= 0,
                                    usec);
                member_uint_or_null(w, "shadow_p99_usec", stall_stats_shadow_percentile(s, 0.99, &usec) >= 0,
                                    usec);
                if (histogram) {
                        json_key(w, "shadow_hist");
                        json_array_begin(w);
                        for (size_t i = 0; i < STALL_HIST_BUCKETS; i++)
                                json_uint(w, s->shadow_hist[i]);
                        json_array_end(w);
                }
        }
        member_uint_or_null(w, "direct_count", s->has_direct, s->direct_count);
        json_member_bool(w, "classified", s->classified);
        json_member_uint(w, "sync_count", s->sync_count);
        json_member_uint(w, "other_count", s->other_count);
        json_key(w, "comms");
        json_array_begin(w);
        for (size_t i = 0; i < s->n_comms; i++) {
                json_object_begin(w);
                json_member_string(w, "comm", s->comms[i].comm);
                json_member_uint(w, "count", s->comms[i].count);
                json_object_end(w);
        }
        json_array_end(w);
        json_object_end(w);
}

void stall_report_json(const StallReport *r, JsonWriter *w) {
        json_object_begin(w);
        json_member_string(w, "mode", r->mode);
        json_member_bool(w, "measured", r->measured);
        json_member_bool(w, "durations", r->measured && r->total->has_durations);
        if (r->measured) {
                json_member_uint(w, "window_usec", r->window_usec);
                json_key(w, "total");
                stats_json(r->total, w, true);
                json_key(w, "window");
                stats_json(r->window, w, false);
        }
        json_member_string(w, "reason", r->reason);
        member_uint_or_null(w, "probe_lost", r->losses_known, r->lost);
        member_uint_or_null(w, "probe_lost_comms", r->losses_known, r->lost_comms);
        json_object_end(w);
}
