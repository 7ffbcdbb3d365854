/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/metrics.c: the exposition of 1,024 disks measured by the BPF probe without a
 * wait (how many lines: printed), and of a disk with waits (its histogram, cumulative, with
 * +Inf, sum and count), in the Prometheus text format. */

#include "config-build.h"
#include "metrics.h"
#include "tests.h"
#include "util.h"

#define N_DISKS 1024

/* The exposition of n disks; each has durations measured and waits[i] waits of 100 us.
 * New string, NULL on ENOMEM. */
static char *exposition(size_t n, const uint64_t *waits) {
        MetricsProbe probe = { .mode = "bpf", .budget_usec = 100000 };
        MetricsDevice *devs = calloc(n, sizeof(MetricsDevice));
        StallStats *stats = calloc(n, sizeof(StallStats));
        char(*names)[16] = calloc(n, sizeof *names);
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!devs || !stats || !names || !f)
                abort();
        for (size_t i = 0; i < n; i++) {
                snprintf(names[i], sizeof names[i], "loop%zu", i);
                stats[i] = (StallStats){ .has_durations = true, .classified = true };
                if (waits[i] > 0) {
                        stats[i].count = waits[i];
                        stats[i].sum_usec = 100 * waits[i];
                        stats[i].max_usec = 100;
                        stats[i].hist[stall_hist_bucket(100)] = waits[i];
                }
                devs[i] = (MetricsDevice){ .name = names[i],
                                           .flag = 0,
                                           .desired = 0,
                                           .need = NEED_NONE,
                                           .learned = LEARNED_NONE,
                                           .stalls = &stats[i] };
        }
        metrics_write(f, &probe, devs, n);
        if (fclose(f) != 0)
                abort();
        free(devs);
        free(stats);
        free(names);
        return text;
}

static size_t count_lines(const char *s, const char *prefix) {
        size_t n = 0;

        for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (!prefix || strncmp(p, prefix, strlen(prefix)) == 0)
                        n++;
        return n;
}

static void test_no_waits(void) {
        uint64_t *waits = calloc(N_DISKS, sizeof(uint64_t));
        _cleanup_free_ char *text = NULL;
        size_t lines, samples;

        if (!waits)
                abort();
        text = exposition(N_DISKS, waits);
        lines = count_lines(text, NULL);
        samples = lines - count_lines(text, "#");
        printf("%d disks measured by the BPF probe, no waits: %zu lines, %zu samples (%.1f per disk)\n",
               N_DISKS, lines, samples, (double) samples / N_DISKS);
        /* Without waits a disk has no histogram: what it has is its state and its counters. */
        CHECK_INT(count_lines(text, "stablepages_stall_wait_seconds_"), 0);
        CHECK_INT(count_lines(text, "stablepages_stall_waits_total{"), N_DISKS);
        CHECK_INT(count_lines(text, "stablepages_stall_over_budget{"), N_DISKS);
        CHECK(samples <= 11 * N_DISKS);
        /* The family is still declared: a scraper knows it, and the rules may name it. */
        CHECK_CONTAINS(text, "# TYPE stablepages_stall_wait_seconds histogram\n");
        free(waits);
}

static void test_one_disk_waited(void) {
        uint64_t waits[3] = { 0, 7, 0 };
        _cleanup_free_ char *text = exposition(3, waits);

        CHECK_INT(count_lines(text, "stablepages_stall_wait_seconds_bucket{device=\"loop1\","), 32);
        CHECK_INT(count_lines(text, "stablepages_stall_wait_seconds_bucket{device=\"loop0\","), 0);
        CHECK_INT(count_lines(text, "stablepages_stall_wait_seconds_bucket{device=\"loop2\","), 0);
        /* 100 us is in the bucket up to 127 us: 0 below it, 7 from it on. */
        CHECK_CONTAINS(text, "stablepages_stall_wait_seconds_bucket{device=\"loop1\",le=\"0.000063\"} 0\n");
        CHECK_CONTAINS(text, "stablepages_stall_wait_seconds_bucket{device=\"loop1\",le=\"0.000127\"} 7\n");
        CHECK_CONTAINS(text, "stablepages_stall_wait_seconds_bucket{device=\"loop1\",le=\"+Inf\"} 7\n");
        CHECK_CONTAINS(text, "stablepages_stall_wait_seconds_sum{device=\"loop1\"} 0.000700\n");
        CHECK_CONTAINS(text, "stablepages_stall_wait_seconds_count{device=\"loop1\"} 7\n");
        CHECK_CONTAINS(text, "stablepages_stall_waits_total{device=\"loop0\"} 0\n");
}

/* A disk with 900 shadow waits of which 3 were timed (40 ms each): the counter says 900, the
 * histogram holds the 3. */
static void test_shadows(void) {
        MetricsProbe probe = { .mode = "bpf", .budget_usec = 100000 };
        StallStats s = { .has_durations = true, .classified = true, .has_shadows = true };
        MetricsDevice dev = { .name = "md1", .need = NEED_RECOMMENDED, .stalls = &s };
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                abort();
        s.shadow_count = 900;
        s.shadow_timed = 3;
        s.shadow_sum_usec = 3 * 40000;
        s.shadow_max_usec = 40000;
        s.shadow_hist[stall_hist_bucket(40000)] = 3;
        metrics_write(f, &probe, &dev, 1);
        if (fclose(f) != 0)
                abort();
        CHECK_CONTAINS(text, "# TYPE stablepages_stall_shadow_waits_total counter\n");
        CHECK_CONTAINS(text, "stablepages_stall_shadow_waits_total{device=\"md1\"} 900\n");
        CHECK_INT(count_lines(text, "stablepages_stall_shadow_wait_seconds_bucket{device=\"md1\","), 32);
        CHECK_CONTAINS(text,
                       "stablepages_stall_shadow_wait_seconds_bucket{device=\"md1\",le=\"0.032767\"} 0\n");
        CHECK_CONTAINS(text,
                       "stablepages_stall_shadow_wait_seconds_bucket{device=\"md1\",le=\"0.065535\"} 3\n");
        CHECK_CONTAINS(text, "stablepages_stall_shadow_wait_seconds_bucket{device=\"md1\",le=\"+Inf\"} 3\n");
        CHECK_CONTAINS(text, "stablepages_stall_shadow_wait_seconds_sum{device=\"md1\"} 0.120000\n");
        CHECK_CONTAINS(text, "stablepages_stall_shadow_wait_seconds_count{device=\"md1\"} 3\n");
}

static void test_build_info(void) {
        uint64_t waits[1] = { 0 };
        _cleanup_free_ char *text = exposition(1, waits);

        CHECK_CONTAINS(text, "# TYPE stablepages_build_info gauge\n");
        CHECK_CONTAINS(text, "stablepages_build_info{version=\"" PACKAGE_VERSION "\"} 1\n");
}

/* A disk with consumers that run without the stable writes it needs has the count; the others
 * have no such series. */
static void test_consumer_hazards(void) {
        MetricsProbe probe = { .mode = "bpf", .budget_usec = 100000 };
        MetricsDevice devs[] = { { .name = "dm-3", .flag = 1, .need = NEED_REQUIRED, .hazards = 2 },
                                 { .name = "loop0", .flag = 0, .need = NEED_NONE } };
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                abort();
        metrics_write(f, &probe, devs, 2);
        if (fclose(f) != 0)
                abort();
        CHECK_CONTAINS(text, "# TYPE stablepages_consumer_hazards gauge\n");
        CHECK_CONTAINS(text, "stablepages_consumer_hazards{device=\"dm-3\"} 2\n");
        CHECK(!strstr(text, "stablepages_consumer_hazards{device=\"loop0\"}"));
}

int main(void) {
        test_no_waits();
        test_one_disk_waited();
        test_shadows();
        test_build_info();
        test_consumer_hazards();
        return tests_finish();
}
