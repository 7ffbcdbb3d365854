/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/stalls/stalls-window.c and daemon/core/metrics.c: the waits of the last StallWindowSec= are the
 * newest snapshot minus the newest one at least a window old; a disk's first waits count from
 * the poll before; a probe reset counts what came after it. And the Prometheus text: the
 * histogram in seconds, cumulative, +Inf == _count, no stall series where nothing measures. */

#include <sys/sysmacros.h>

#include "metrics.h"
#include "stalls-window.h"
#include "tests.h"
#include "util.h"

#define S USEC_PER_SEC

/* Cumulative stats of disk 7:0 after n waits of usec each. */
static StallStats waits(uint64_t n, uint64_t usec) {
        StallStats s = { .devnum = makedev(7, 0), .has_durations = true, .classified = true };
        strcpy(s.bdi, "7:0");
        for (uint64_t i = 0; i < n; i++)
                stall_stats_add_sample(&s, usec, "writer");
        return s;
}

static void test_window(void) {
        StallWindow w = {};
        StallStats got;
        uint64_t span, p99;

        CHECK_INT(stall_window_get(&w, &got, NULL), -ENODATA);
        StallStats first = waits(10, 100000);
        /* First seen at t=12 s: its waits happened since the previous poll at t=10 s. */
        CHECK_INT(stall_window_push_empty(&w, 10 * S, &first), 0);
        CHECK_INT(stall_window_push(&w, 12 * S, &first, 30 * S), 0);
        CHECK_INT(stall_window_get(&w, &got, &span), 0);
        CHECK_INT(got.count, 10);
        CHECK_INT(span, 2 * S);
        CHECK_INT(stall_stats_percentile(&got, 0.99, &p99), 0);
        CHECK_INT(p99, 100000);

        /* Every 5 s, 10 more waits of 1 ms: after the window has passed, only its waits count. */
        for (uint64_t t = 17, n = 20; t <= 62; t += 5, n += 10) {
                StallStats now = waits(10, 100000);
                StallStats more = waits(n - 10, 1000);
                stall_stats_merge(&now, &more);
                CHECK_INT(stall_window_push(&w, t * S, &now, 30 * S), 0);
        }
        CHECK_INT(stall_window_get(&w, &got, &span), 0);
        CHECK_INT(span, 30 * S);
        CHECK_INT(got.count, 60); /* 6 polls of 10 in (32, 62] */
        CHECK_INT(stall_stats_percentile(&got, 0.99, &p99), 0);
        CHECK(p99 < 2048);
        CHECK(w.n <= 8); /* old snapshots are dropped */

        /* A reset: counters go back; the window counts what came after it. */
        StallStats after = waits(3, 50000);
        CHECK_INT(stall_window_push(&w, 67 * S, &after, 30 * S), 0);
        CHECK_INT(stall_window_get(&w, &got, NULL), 0);
        CHECK_INT(got.count, 3);
        stall_window_done(&w);
        CHECK_INT(w.n, 0);
}

static void test_metrics(void) {
        StallStats s = waits(3, 1500);
        stall_stats_add_sample(&s, 0, "x");
        s.sync_count = 2;
        MetricsDevice devs[] = {
                { .name = "loop7",
                  .flag = 1,
                  .in_force = true,
                  .desired = 0,
                  .need = NEED_RECOMMENDED,
                  .pending = 1,
                  .learned = LEARNED_OFF,
                  .stalls = &s,
                  .over_budget = true },
                { .name = "vda", .flag = -1, .desired = -1, .need = NEED_NONE, .learned = LEARNED_NONE },
        };
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        CHECK(f);
        MetricsProbe probe = { .mode = "bpf", .lost = 5, .lost_comms = 7, .budget_usec = 100000 };
        metrics_write(f, &probe, devs, ELEMENTSOF(devs));
        CHECK_INT(fclose(f), 0);
        fputs(buf, stderr);
        CHECK_CONTAINS(buf, "# TYPE stablepages_stall_wait_seconds histogram\n");
        CHECK_CONTAINS(buf, "stablepages_stall_probe_info{mode=\"bpf\"} 1\n");
        CHECK_CONTAINS(buf, "stablepages_stall_probe_lost_events_total 5\n");
        CHECK_CONTAINS(buf, "# TYPE stablepages_stall_probe_lost_commands_total counter\n");
        CHECK_CONTAINS(buf, "stablepages_stall_probe_lost_commands_total 7\n");
        CHECK_CONTAINS(buf, "stablepages_stall_budget_seconds 0.100000\n");
        CHECK_CONTAINS(buf, "stablepages_stable_writes{device=\"loop7\"} 1\n");
        CHECK_CONTAINS(buf, "stablepages_in_force{device=\"loop7\"} 1\n");
        CHECK_CONTAINS(buf, "stablepages_in_force{device=\"vda\"} 0\n");
        CHECK_CONTAINS(buf, "stablepages_stall_over_budget{device=\"loop7\"} 1\n");
        CHECK(!strstr(buf, "stablepages_stall_over_budget{device=\"vda\"}")); /* not measured */
        CHECK(!strstr(buf, "stablepages_stable_writes{device=\"vda\"}"));     /* no switch: absent */
        CHECK_CONTAINS(buf, "stablepages_desired{device=\"vda\"} -1\n");
        CHECK_CONTAINS(buf, "stablepages_need{device=\"loop7\",need=\"recommended\"} 1\n");
        CHECK_CONTAINS(buf, "stablepages_pending_mounts{device=\"loop7\"} 1\n");
        CHECK_CONTAINS(buf, "stablepages_learned{device=\"loop7\"} 0\n");
        CHECK_CONTAINS(buf, "stablepages_writeback_other_waits_total{device=\"loop7\",cause=\"sync\"} 2\n");
        /* 0 us in bucket 0 (le 1 us); 1500 us in [1024, 2047]. */
        CHECK_CONTAINS(buf, "stablepages_stall_wait_seconds_bucket{device=\"loop7\",le=\"0.000001\"} 1\n");
        CHECK_CONTAINS(buf, "stablepages_stall_wait_seconds_bucket{device=\"loop7\",le=\"0.001023\"} 1\n");
        CHECK_CONTAINS(buf, "stablepages_stall_wait_seconds_bucket{device=\"loop7\",le=\"0.002047\"} 4\n");
        CHECK_CONTAINS(buf,
                       "stablepages_stall_wait_seconds_bucket{device=\"loop7\",le=\"1073.741823\"} 4\n");
        CHECK_CONTAINS(buf, "stablepages_stall_wait_seconds_bucket{device=\"loop7\",le=\"+Inf\"} 4\n");
        CHECK_CONTAINS(buf, "stablepages_stall_wait_seconds_sum{device=\"loop7\"} 0.004500\n");
        CHECK_CONTAINS(buf, "stablepages_stall_wait_seconds_count{device=\"loop7\"} 4\n");
        CHECK(!strstr(buf, "device=\"vda\",le=")); /* not measured: no figures at all */
        CHECK(!strstr(buf, "stablepages_stall_waits_total{device=\"vda\"}"));
}

int main(void) {
        test_window();
        test_metrics();
        return tests_finish();
}
