/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test driver for the stall probe: starts a StallProbe, writes its mode to the ready file,
 * waits for SIGTERM/SIGINT (or --duration seconds), reading the probe every second, then
 * prints what it measured as JSON on stdout:
 *   {"mode":"bpf","reason":"...","lost":0,"devices":[{"dev":"7:3","bdi":"7:3",
 *    "durations":true,"classified":true,"count":N,"sync_count":N,"other_count":N,
 *    "sum_usec":..,"max_usec":..,"sync_sum_usec":..,"other_sum_usec":..,"p50_usec":..,
 *    "p99_usec":..,"hist":[..32 buckets..],"comms":[{"comm":"stall-writer","count":N}]}]}
 * count, the percentiles, hist and comms are the stable-pages waits; sync_* are data-integrity
 * waits (fsync...), other_* truncation/reclaim/migration waits; "shadows" says whether shadow
 * waits are measured, shadow_* are they (stalls.h); direct_count the O_DIRECT writes.
 * In mode "unavailable" devices is null (nothing was measured). --no-shadows detaches the
 * programs of shadow waits, as the daemon does while no disk needs them. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "log.h"
#include "stall-probe.h"
#include "util.h"

static uint64_t timeval_usec(const struct timeval *tv) {
        return (uint64_t) tv->tv_sec * 1000000 + (uint64_t) tv->tv_usec;
}

static void print_stats(const StallStats *s) {
        char dev[32];
        uint64_t v;

        printf("{\"dev\":\"%s\",\"bdi\":", format_devnum(s->devnum, dev));
        json_print_string(stdout, s->bdi);
        printf(",\"durations\":%s,\"classified\":%s,\"count\":%" PRIu64 ",\"sync_count\":%" PRIu64
               ",\"other_count\":%" PRIu64,
               s->has_durations ? "true" : "false", s->classified ? "true" : "false", s->count,
               s->sync_count, s->other_count);
        if (s->has_durations) {
                printf(",\"sum_usec\":%" PRIu64 ",\"max_usec\":%" PRIu64 ",\"sync_sum_usec\":%" PRIu64
                       ",\"other_sum_usec\":%" PRIu64,
                       s->sum_usec, s->max_usec, s->sync_sum_usec, s->other_sum_usec);
                if (stall_stats_percentile(s, 0.5, &v) == 0)
                        printf(",\"p50_usec\":%" PRIu64, v);
                if (stall_stats_percentile(s, 0.99, &v) == 0)
                        printf(",\"p99_usec\":%" PRIu64, v);
                printf(",\"hist\":[");
                for (unsigned i = 0; i < STALL_HIST_BUCKETS; i++)
                        printf("%s%" PRIu64, i ? "," : "", s->hist[i]);
                printf("]");
        }
        printf(",\"shadows\":%s,\"shadow_count\":%" PRIu64, s->has_shadows ? "true" : "false",
               s->shadow_count);
        if (s->has_shadows) {
                printf(",\"shadow_timed\":%" PRIu64 ",\"shadow_sum_usec\":%" PRIu64
                       ",\"shadow_max_usec\":%" PRIu64,
                       s->shadow_timed, s->shadow_sum_usec, s->shadow_max_usec);
                if (stall_stats_shadow_percentile(s, 0.5, &v) == 0)
                        printf(",\"shadow_p50_usec\":%" PRIu64, v);
                if (stall_stats_shadow_percentile(s, 0.99, &v) == 0)
                        printf(",\"shadow_p99_usec\":%" PRIu64, v);
        }
        printf(",\"direct\":%s,\"direct_count\":%" PRIu64, s->has_direct ? "true" : "false",
               s->direct_count);
        printf(",\"comms\":[");
        for (size_t i = 0; i < s->n_comms; i++) {
                printf("%s{\"comm\":", i ? "," : "");
                json_print_string(stdout, s->comms[i].comm);
                printf(",\"count\":%" PRIu64 "}", s->comms[i].count);
        }
        printf("]}");
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "ready-file", required_argument, NULL, 'r' },
                { "duration", required_argument, NULL, 'd' },
                { "debug", no_argument, NULL, 'D' },
                { "no-shadows", no_argument, NULL, 'S' },
                {},
        };
        _cleanup_stall_probe_free_ StallProbe *p = NULL;
        _cleanup_free_ StallStats *list = NULL;
        const char *ready = NULL;
        long long duration = -1;
        bool shadows = true;
        sigset_t mask;
        size_t n = 0;
        int c, r;

        log_set_target(LOG_TARGET_STDERR);
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'r':
                        ready = optarg;
                        break;
                case 'd':
                        if (parse_int_range(optarg, 0, 86400, &duration) < 0) {
                                fprintf(stderr, "bad --duration: %s\n", optarg);
                                return 2;
                        }
                        break;
                case 'D':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case 'S':
                        shadows = false;
                        break;
                default:
                        return 2;
                }

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        struct rusage before, after;
        uint64_t wall = now_usec_monotonic();
        (void) getrusage(RUSAGE_SELF, &before);
        r = stall_probe_new(&p);
        if (r < 0)
                return log_error_errno(r, "stall_probe_new: %m"), 1;
        if (!shadows && stall_probe_shadows_available(p) && (r = stall_probe_set_shadows(p, false)) < 0)
                return log_error_errno(r, "detaching the shadow programs: %m"), 1;
        (void) getrusage(RUSAGE_SELF, &after);
        wall = now_usec_monotonic() - wall;
        fprintf(stderr, "stall probe mode %s: %s\n", stall_probe_mode_to_string(stall_probe_mode(p)),
                stall_probe_mode_reason(p));
        /* What starting the probe cost this process (user + system CPU, and wall time). */
        fprintf(stderr,
                "stall probe start-up: cpu_us=%" PRIu64 " user_us=%" PRIu64 " sys_us=%" PRIu64
                " wall_us=%" PRIu64 "\n",
                timeval_usec(&after.ru_utime) + timeval_usec(&after.ru_stime) -
                        timeval_usec(&before.ru_utime) - timeval_usec(&before.ru_stime),
                timeval_usec(&after.ru_utime) - timeval_usec(&before.ru_utime),
                timeval_usec(&after.ru_stime) - timeval_usec(&before.ru_stime), wall);

        if (ready) {
                const char *m = stall_probe_mode_to_string(stall_probe_mode(p));
                r = write_file_atomic(ready, m, strlen(m), 0644);
                if (r < 0)
                        return log_error_errno(r, "writing %s: %m", ready), 1;
        }

        for (long long waited = 0; duration < 0 || waited < duration; waited++) {
                struct timespec one = { .tv_sec = 1 };

                if (sigtimedwait(&mask, NULL, &one) >= 0)
                        break;
                /* Read the figures every second, as the daemon does at least every 5 s: the
                 * probe names the callers it sees when they are read. */
                StallStats *l = NULL;
                size_t k = 0;
                if (stall_probe_list(p, &l, &k) >= 0)
                        free(l);
        }

        printf("{\"mode\":\"%s\",\"reason\":", stall_probe_mode_to_string(stall_probe_mode(p)));
        json_print_string(stdout, stall_probe_mode_reason(p));
        if (stall_probe_mode(p) == STALL_PROBE_UNAVAILABLE) {
                printf(",\"devices\":null}\n");
                return 0;
        }
        printf(",\"lost\":%" PRIu64 ",\"unmatched\":%" PRIu64 ",\"frame_reads\":%" PRIu64
               ",\"frame_mismatches\":%" PRIu64 ",\"devices\":[",
               stall_probe_lost(p), stall_probe_unmatched(p), stall_probe_frame_reads(p),
               stall_probe_frame_mismatches(p));
        r = stall_probe_list(p, &list, &n);
        if (r < 0)
                return log_error_errno(r, "stall_probe_list: %m"), 1;
        for (size_t i = 0; i < n; i++) {
                if (i)
                        printf(",");
                print_stats(&list[i]);
        }
        printf("]}\n");
        return 0;
}
