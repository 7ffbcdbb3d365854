/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Prometheus text of metrics.h: one family after the other, each with its HELP and TYPE. */
#include <inttypes.h>

#include "config-build.h"
#include "metrics.h"
#include "util.h"

#define PREFIX "stablepages_"

static void family(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP " PREFIX "%s %s\n# TYPE " PREFIX "%s %s\n", name, help, name, type);
}

/* Microseconds as exact decimal seconds. */
static void seconds(FILE *f, uint64_t usec) {
        fprintf(f, "%" PRIu64 ".%06" PRIu64, usec / 1000000, usec % 1000000);
}

/* The series of one disk's histogram name (in seconds): its cumulative buckets, +Inf, sum and
 * count. */
static void histogram(FILE *f, const char *name, const char *device, const uint64_t *hist, uint64_t count,
                      uint64_t sum_usec) {
        uint64_t cumulative = 0;

        for (unsigned b = 0; b + 1 < STALL_HIST_BUCKETS; b++) {
                cumulative += hist[b];
                fprintf(f, PREFIX "%s_bucket{device=\"%s\",le=\"", name, device);
                seconds(f, stall_hist_bucket_upper_usec(b));
                fprintf(f, "\"} %" PRIu64 "\n", cumulative);
        }
        fprintf(f, PREFIX "%s_bucket{device=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, device, count);
        fprintf(f, PREFIX "%s_sum{device=\"%s\"} ", name, device);
        seconds(f, sum_usec);
        fprintf(f, "\n" PREFIX "%s_count{device=\"%s\"} %" PRIu64 "\n", name, device, count);
}

/* The shadow waits (what stable writes would cost where they are off) of the disks that had
 * some, and the O_DIRECT writes counted. */
static void metrics_write_shadows(FILE *f, const MetricsDevice *devs, size_t n) {
        family(f, "stall_shadow_waits_total", "counter",
               "Shadow waits: pages written under writeback without stable writes, each a write that "
               "would have waited with stable writes (BPF probe with the writeback tracepoints only), "
               "since the probe started.");
        for (size_t i = 0; i < n; i++) {
                const StallStats *s = devs[i].stalls;

                if (s && s->has_shadows && s->shadow_count > 0)
                        fprintf(f, PREFIX "stall_shadow_waits_total{device=\"%s\"} %" PRIu64 "\n",
                                devs[i].name, s->shadow_count);
        }
        family(f, "stall_shadow_wait_seconds", "histogram",
               "Timed shadow waits, each from the page's write until its file's writeback ended: how "
               "long writers would have waited with stable writes. All of them, or a sample where they "
               "come faster than one per CPU and clock tick (stall_shadow_waits_total counts all).");
        for (size_t i = 0; i < n; i++) {
                const StallStats *s = devs[i].stalls;

                if (s && s->has_shadows && s->shadow_timed > 0)
                        histogram(f, "stall_shadow_wait_seconds", devs[i].name, s->shadow_hist,
                                  s->shadow_timed, s->shadow_sum_usec);
        }

        family(f, "direct_writes_total", "counter",
               "O_DIRECT writes of ext4, xfs and btrfs since the probe started (before 6.2: their bios): "
               "on a mirror, a writer that changes its buffer in flight makes the legs differ whatever "
               "stable writes say.");
        for (size_t i = 0; i < n; i++)
                if (devs[i].stalls && devs[i].stalls->has_direct)
                        fprintf(f, PREFIX "direct_writes_total{device=\"%s\"} %" PRIu64 "\n", devs[i].name,
                                devs[i].stalls->direct_count);
}

/* The md mirrors' checks and what could diverge since the last one. */
static void metrics_write_mirrors(FILE *f, const MetricsDevice *devs, size_t n) {
        family(f, "mirror_mismatch_sectors", "gauge",
               "md/mismatch_cnt after the last check of the mirror (absent before one was seen).");
        for (size_t i = 0; i < n; i++)
                if (devs[i].mirror && devs[i].mirror->check_usec > 0)
                        fprintf(f, PREFIX "mirror_mismatch_sectors{device=\"%s\"} %" PRIu64 "\n",
                                devs[i].name, devs[i].mirror->mismatch_cnt);

        family(f, "mirror_shadow_pages", "gauge",
               "Pages of the mirror written under writeback while stable writes were off, since its last "
               "check: pages whose legs may differ.");
        for (size_t i = 0; i < n; i++)
                if (devs[i].mirror)
                        fprintf(f, PREFIX "mirror_shadow_pages{device=\"%s\"} %" PRIu64 "\n", devs[i].name,
                                devs[i].mirror->shadow_pages);

        family(f, "mirror_diverged", "gauge",
               "1 when a check found the mirror's mismatch count grown while stable writes were off "
               "(stable writes turned on for it), else 0.");
        for (size_t i = 0; i < n; i++)
                if (devs[i].mirror)
                        fprintf(f, PREFIX "mirror_diverged{device=\"%s\"} %d\n", devs[i].name,
                                devs[i].mirror->diverged);
}

/* The build and the probe: its mode, what it lost, the budget. */
static void metrics_write_probe(FILE *f, const MetricsProbe *probe) {
        family(f, "build_info", "gauge", "The version of stablepagesd writing these metrics.");
        fprintf(f, PREFIX "build_info{version=\"%s\"} 1\n", PACKAGE_VERSION);

        family(f, "stall_probe_info", "gauge", "The stall probe's mode (bpf, tracefs or unavailable).");
        fprintf(f, PREFIX "stall_probe_info{mode=\"%s\"} 1\n", probe->mode);

        family(f, "stall_probe_lost_events_total", "counter",
               "Waits the probe saw but could not record (a full map, an overrun trace buffer): "
               "the stall counts are lower bounds when it grows.");
        fprintf(f, PREFIX "stall_probe_lost_events_total %" PRIu64 "\n", probe->lost);

        family(f, "stall_probe_lost_commands_total", "counter",
               "Waits the probe recorded without their command (its table of commands was full).");
        fprintf(f, PREFIX "stall_probe_lost_commands_total %" PRIu64 "\n", probe->lost_comms);

        family(f, "stall_budget_seconds", "gauge", "StallBudgetMSec=: the p99 wait a window may reach.");
        fprintf(f, PREFIX "stall_budget_seconds ");
        seconds(f, probe->budget_usec);
        fputc('\n', f);
}

/* What the daemon knows and wants of each disk: the flag, in force, desired, need, pending mounts,
 * consumers at risk, what was learned. */
static void metrics_write_state(FILE *f, const MetricsDevice *devs, size_t n) {
        family(f, "stable_writes", "gauge", "queue/stable_writes of the disk (absent: no such switch).");
        for (size_t i = 0; i < n; i++)
                if (devs[i].flag >= 0)
                        fprintf(f, PREFIX "stable_writes{device=\"%s\"} %d\n", devs[i].name, devs[i].flag);

        family(f, "in_force", "gauge",
               "Stable writes in force on the disk now: 1 or 0 (the flag, or a checksum integrity profile "
               "on 6.11+).");
        for (size_t i = 0; i < n; i++)
                fprintf(f, PREFIX "in_force{device=\"%s\"} %d\n", devs[i].name, devs[i].in_force);

        family(f, "desired", "gauge", "The desired stable writes: 1 on, 0 off, -1 left alone.");
        for (size_t i = 0; i < n; i++)
                fprintf(f, PREFIX "desired{device=\"%s\"} %d\n", devs[i].name,
                        devs[i].desired < 0 ? -1 : devs[i].desired);

        family(f, "need", "gauge", "The disk's need for stable writes: 1 for the need it has.");
        for (size_t i = 0; i < n; i++)
                fprintf(f, PREFIX "need{device=\"%s\",need=\"%s\"} 1\n", devs[i].name,
                        need_to_string(devs[i].need));

        family(f, "pending_mounts", "gauge",
               "Mounted filesystems that did not capture the desired state yet.");
        for (size_t i = 0; i < n; i++)
                fprintf(f, PREFIX "pending_mounts{device=\"%s\"} %u\n", devs[i].name, devs[i].pending);

        family(f, "consumer_hazards", "gauge",
               "Consumers of the disk (its page cache, filesystems, swap areas) that run without the stable "
               "writes it needs (absent: none).");
        for (size_t i = 0; i < n; i++)
                if (devs[i].hazards > 0)
                        fprintf(f, PREFIX "consumer_hazards{device=\"%s\"} %u\n", devs[i].name,
                                devs[i].hazards);

        family(f, "learned", "gauge",
               "What Policy=balanced learned from stalls: 0 off, 1 on again, -1 nothing.");
        for (size_t i = 0; i < n; i++)
                fprintf(f, PREFIX "learned{device=\"%s\"} %d\n", devs[i].name, (int) devs[i].learned);
}

/* The waits the probe measured: stable writes' and the others', the budget's verdict, the
 * histogram. */
static void metrics_write_stalls(FILE *f, const MetricsDevice *devs, size_t n) {
        family(f, "stall_waits_total", "counter",
               "Writers' waits for a page under writeback that stable writes cause, since the probe "
               "started.");
        for (size_t i = 0; i < n; i++)
                if (devs[i].stalls)
                        fprintf(f, PREFIX "stall_waits_total{device=\"%s\"} %" PRIu64 "\n", devs[i].name,
                                devs[i].stalls->count);

        family(f, "writeback_other_waits_total", "counter",
               "Waits for writeback with other causes (sync: fsync and friends; other: truncation, "
               "reclaim), which happen whatever stable writes say.");
        for (size_t i = 0; i < n; i++)
                if (devs[i].stalls && devs[i].stalls->classified) {
                        fprintf(f,
                                PREFIX "writeback_other_waits_total{device=\"%s\",cause=\"sync\"} %" PRIu64
                                       "\n",
                                devs[i].name, devs[i].stalls->sync_count);
                        fprintf(f,
                                PREFIX "writeback_other_waits_total{device=\"%s\",cause=\"other\"} %" PRIu64
                                       "\n",
                                devs[i].name, devs[i].stalls->other_count);
                }

        family(f, "stall_over_budget", "gauge",
               "1 when the p99 wait of the last StallWindowSec= (with at least StallMinWaits= waits) "
               "exceeded StallBudgetMSec=, else 0 (BPF probe only).");
        for (size_t i = 0; i < n; i++)
                if (devs[i].stalls && devs[i].stalls->has_durations)
                        fprintf(f, PREFIX "stall_over_budget{device=\"%s\"} %d\n", devs[i].name,
                                devs[i].over_budget);

        family(f, "stall_wait_seconds", "histogram",
               "Durations of the waits stable writes cause (BPF probe only), since the probe started; "
               "only for disks with waits.");
        for (size_t i = 0; i < n; i++) {
                const StallStats *s = devs[i].stalls;

                /* 34 series a disk: only where there is something to show (stall_waits_total
                 * says 0 for the others), not 34,000 zeros on a host of 1,000 disks. */
                if (s && s->has_durations && s->count > 0)
                        histogram(f, "stall_wait_seconds", devs[i].name, s->hist, s->count, s->sum_usec);
        }
}

void metrics_write(FILE *f, const MetricsProbe *probe, const MetricsDevice *devs, size_t n) {
        metrics_write_probe(f, probe);
        metrics_write_state(f, devs, n);
        metrics_write_stalls(f, devs, n);
        metrics_write_shadows(f, devs, n);
        metrics_write_mirrors(f, devs, n);
}
