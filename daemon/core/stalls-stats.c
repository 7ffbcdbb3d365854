/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure statistics of stall figures (stalls.h): histogram buckets, top commands, merging,
 * percentiles and windows. In the core library, for stablepagesctl too: no probe here. */
#include <stdlib.h>
#include <string.h>

#include "stalls.h"

unsigned stall_hist_bucket(uint64_t usec) {
        unsigned i = 0;

        while (usec > 1 && i < STALL_HIST_BUCKETS - 1) {
                usec >>= 1;
                i++;
        }
        return i;
}

uint64_t stall_hist_bucket_lower_usec(unsigned i) {
        if (i == 0)
                return 0;
        if (i >= STALL_HIST_BUCKETS)
                return UINT64_MAX;
        return UINT64_C(1) << i;
}

uint64_t stall_hist_bucket_upper_usec(unsigned i) {
        if (i >= STALL_HIST_BUCKETS - 1)
                return UINT64_MAX;
        return (UINT64_C(1) << (i + 1)) - 1;
}

static int comm_compare(const void *a, const void *b) {
        const StallComm *x = a, *y = b;

        if (x->count != y->count)
                return x->count < y->count ? 1 : -1;
        return strncmp(x->comm, y->comm, sizeof(x->comm));
}

void stall_stats_add_comm(StallStats *s, const char *comm, uint64_t count) {
        char name[STALL_BPF_COMM_LEN] = {};

        if (count == 0)
                return;
        strncpy(name, comm ?: "?", sizeof(name) - 1);

        for (size_t i = 0; i < s->n_comms; i++)
                if (strneq(s->comms[i].comm, name, sizeof(name))) {
                        s->comms[i].count += count;
                        goto sort;
                }
        if (s->n_comms < STALL_TOP_COMMS)
                s->n_comms++;
        else if (s->comms[s->n_comms - 1].count >= count)
                return;
        memcpy(s->comms[s->n_comms - 1].comm, name, sizeof(name));
        s->comms[s->n_comms - 1].count = count;
sort:
        qsort(s->comms, s->n_comms, sizeof(s->comms[0]), comm_compare);
}

void stall_stats_add_sample(StallStats *s, uint64_t usec, const char *comm) {
        s->count++;
        s->sum_usec += usec;
        s->max_usec = MAX(s->max_usec, usec);
        s->hist[stall_hist_bucket(usec)]++;
        if (comm)
                stall_stats_add_comm(s, comm, 1);
}

void stall_stats_merge(StallStats *a, const StallStats *b) {
        a->sync_count += b->sync_count;
        a->sync_sum_usec += b->sync_sum_usec;
        a->other_count += b->other_count;
        a->other_sum_usec += b->other_sum_usec;
        a->count += b->count;
        a->sum_usec += b->sum_usec;
        a->max_usec = MAX(a->max_usec, b->max_usec);
        for (size_t i = 0; i < STALL_HIST_BUCKETS; i++)
                a->hist[i] += b->hist[i];
        for (size_t i = 0; i < b->n_comms; i++)
                stall_stats_add_comm(a, b->comms[i].comm, b->comms[i].count);
        a->shadow_count += b->shadow_count;
        a->shadow_timed += b->shadow_timed;
        a->shadow_sum_usec += b->shadow_sum_usec;
        a->shadow_max_usec = MAX(a->shadow_max_usec, b->shadow_max_usec);
        for (size_t i = 0; i < STALL_HIST_BUCKETS; i++)
                a->shadow_hist[i] += b->shadow_hist[i];
        a->direct_count += b->direct_count;
}

/* The q-quantile of count waits in hist, at most max_usec. */
static uint64_t hist_percentile(const uint64_t *hist, uint64_t count, uint64_t max_usec, double q) {
        uint64_t rank, seen = 0;

        /* ceil(q * count), at least 1 */
        rank = (uint64_t) (q * (double) count);
        if ((double) rank < q * (double) count)
                rank++;
        rank = MAX(rank, UINT64_C(1));

        for (unsigned i = 0; i < STALL_HIST_BUCKETS; i++) {
                seen += hist[i];
                if (seen >= rank)
                        return MIN(stall_hist_bucket_upper_usec(i), max_usec);
        }
        /* Buckets hold fewer waits than count (not possible with consistent stats). */
        return max_usec;
}

int stall_stats_percentile(const StallStats *s, double q, uint64_t *ret_usec) {
        if (!(q > 0.0 && q <= 1.0))
                return -EINVAL;
        if (!s->has_durations)
                return -EOPNOTSUPP;
        if (s->count == 0)
                return -ENODATA;
        *ret_usec = hist_percentile(s->hist, s->count, s->max_usec, q);
        return 0;
}

int stall_stats_shadow_percentile(const StallStats *s, double q, uint64_t *ret_usec) {
        if (!(q > 0.0 && q <= 1.0))
                return -EINVAL;
        if (!s->has_shadows)
                return -EOPNOTSUPP;
        if (s->shadow_timed == 0)
                return -ENODATA;
        *ret_usec = hist_percentile(s->shadow_hist, s->shadow_timed, s->shadow_max_usec, q);
        return 0;
}

int stall_stats_subtract(const StallStats *now, const StallStats *before, StallStats *ret) {
        StallStats d = {};
        bool reset = false;
        int top = -1;

        if (now->devnum != before->devnum || !strneq(now->bdi, before->bdi, sizeof(now->bdi)))
                return -EINVAL;

        if (now->count < before->count || now->sum_usec < before->sum_usec ||
            now->sync_count < before->sync_count || now->sync_sum_usec < before->sync_sum_usec ||
            now->other_count < before->other_count || now->other_sum_usec < before->other_sum_usec ||
            now->shadow_count < before->shadow_count || now->shadow_timed < before->shadow_timed ||
            now->shadow_sum_usec < before->shadow_sum_usec || now->direct_count < before->direct_count)
                reset = true;
        for (size_t i = 0; i < STALL_HIST_BUCKETS && !reset; i++)
                if (now->hist[i] < before->hist[i] || now->shadow_hist[i] < before->shadow_hist[i])
                        reset = true;
        if (reset) {
                *ret = *now;
                return 1;
        }

        d.devnum = now->devnum;
        memcpy(d.bdi, now->bdi, sizeof(d.bdi));
        d.has_durations = now->has_durations && before->has_durations;
        d.classified = now->classified && before->classified;
        d.sync_count = now->sync_count - before->sync_count;
        d.sync_sum_usec = now->sync_sum_usec - before->sync_sum_usec;
        d.other_count = now->other_count - before->other_count;
        d.other_sum_usec = now->other_sum_usec - before->other_sum_usec;
        d.count = now->count - before->count;
        d.sum_usec = now->sum_usec - before->sum_usec;
        for (size_t i = 0; i < STALL_HIST_BUCKETS; i++) {
                d.hist[i] = now->hist[i] - before->hist[i];
                if (d.hist[i] > 0)
                        top = (int) i;
        }
        if (d.has_durations && top >= 0)
                d.max_usec = MIN(now->max_usec, stall_hist_bucket_upper_usec((unsigned) top));
        d.has_shadows = now->has_shadows && before->has_shadows && now->shadow_epoch == before->shadow_epoch;
        d.shadow_epoch = now->shadow_epoch;
        d.shadow_count = now->shadow_count - before->shadow_count;
        d.shadow_timed = now->shadow_timed - before->shadow_timed;
        d.shadow_sum_usec = now->shadow_sum_usec - before->shadow_sum_usec;
        top = -1;
        for (size_t i = 0; i < STALL_HIST_BUCKETS; i++) {
                d.shadow_hist[i] = now->shadow_hist[i] - before->shadow_hist[i];
                if (d.shadow_hist[i] > 0)
                        top = (int) i;
        }
        if (top >= 0)
                d.shadow_max_usec = MIN(now->shadow_max_usec, stall_hist_bucket_upper_usec((unsigned) top));
        d.has_direct = now->has_direct && before->has_direct;
        d.direct_count = now->direct_count - before->direct_count;

        for (size_t i = 0; i < now->n_comms; i++) {
                uint64_t c = now->comms[i].count;

                for (size_t j = 0; j < before->n_comms; j++)
                        if (strneq(now->comms[i].comm, before->comms[j].comm, sizeof(now->comms[i].comm))) {
                                c = c >= before->comms[j].count ? c - before->comms[j].count : 0;
                                break;
                        }
                stall_stats_add_comm(&d, now->comms[i].comm, c);
        }

        *ret = d;
        return 0;
}
