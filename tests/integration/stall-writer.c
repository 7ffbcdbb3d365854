/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A writer that rewrites a page under writeback, and times the rewrite.
 *
 *   stall-writer [--iterations N] [--slow-usec U] [--verbose] FILE
 *     N times: write page 0, start its writeback with sync_file_range(SYNC_FILE_RANGE_WRITE),
 *     rewrite it at once and time that write(); then prints one line
 *       rewrites=N slow=K slow_usec=U median_usec=M p99_usec=P max_usec=X mean_usec=A
 *     where slow counts rewrites that took more than U microseconds (default 1000).
 *
 *     --comm-cycle: before each rewrite, the process renames itself (PR_SET_NAME) "cN" for the
 *     Nth: one command name per wait, as a user can do to fill the probe's table of commands.
 *     --fsync: each iteration writes page 0 and fdatasync()s it instead (a data-integrity wait,
 *     not a stable-pages one); prints "fsyncs=N".
 *
 *   stall-writer --bench SECONDS FILE
 *     the same loop without timing each step, for SECONDS; prints
 *       loops=N seconds=S loops_per_sec=R
 *
 * With stable writes in force on the file's filesystem, the rewrite waits until the writeback
 * completes; run from a blkio-throttled cgroup, that is the throttle's delay. */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static int write_page(int fd, char *buf, char fill) {
        memset(buf, fill, PAGE);
        if (pwrite(fd, buf, PAGE, 0) != PAGE) {
                perror("pwrite");
                return -1;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "iterations", required_argument, NULL, 'n' },
                { "slow-usec", required_argument, NULL, 's' },
                { "bench", required_argument, NULL, 'b' },
                { "verbose", no_argument, NULL, 'v' },
                { "comm-cycle", no_argument, NULL, 'c' },
                { "fsync", no_argument, NULL, 'f' },
                {},
        };
        long iterations = 20, slow_usec = 1000, bench = 0;
        int verbose = 0, comm_cycle = 0, do_fsync = 0, c, fd;
        static char buf[PAGE] __attribute__((aligned(PAGE)));

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'n':
                        iterations = strtol(optarg, NULL, 10);
                        break;
                case 's':
                        slow_usec = strtol(optarg, NULL, 10);
                        break;
                case 'b':
                        bench = strtol(optarg, NULL, 10);
                        break;
                case 'v':
                        verbose = 1;
                        break;
                case 'c':
                        comm_cycle = 1;
                        break;
                case 'f':
                        do_fsync = 1;
                        break;
                default:
                        return 2;
                }
        if (optind != argc - 1 || iterations <= 0 || slow_usec < 0 || bench < 0) {
                fprintf(stderr,
                        "usage: %s [--iterations N] [--slow-usec U] [--comm-cycle] [--fsync] [--bench "
                        "SECONDS] FILE\n",
                        argv[0]);
                return 2;
        }

        fd = open(argv[optind], O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
                perror(argv[optind]);
                return 1;
        }
        /* Allocate the block once, so that the loop measures rewrites, not allocation. */
        if (write_page(fd, buf, 'x') < 0 || fsync(fd) < 0)
                return 1;

        if (bench > 0) {
                uint64_t start = now_ns(), end = start + (uint64_t) bench * 1000000000ULL, loops = 0, t;

                do {
                        if (write_page(fd, buf, 'a') < 0 ||
                            sync_file_range(fd, 0, PAGE, SYNC_FILE_RANGE_WRITE) < 0 ||
                            write_page(fd, buf, 'b') < 0)
                                return 1;
                        loops++;
                } while ((t = now_ns()) < end);
                printf("loops=%" PRIu64 " seconds=%.3f loops_per_sec=%.1f\n", loops, (t - start) / 1e9,
                       loops / ((t - start) / 1e9));
                return 0;
        }

        if (do_fsync) {
                for (long i = 0; i < iterations; i++) {
                        char name[32]; /* PR_SET_NAME keeps 15 bytes */
                        snprintf(name, sizeof name, "c%ld", i);
                        if ((comm_cycle && prctl(PR_SET_NAME, name) < 0) ||
                            write_page(fd, buf, 'a' + (char) (i % 26)) < 0 || fdatasync(fd) < 0) {
                                perror("fsync loop");
                                return 1;
                        }
                }
                printf("fsyncs=%ld\n", iterations);
                return 0;
        }

        uint64_t *lat = calloc((size_t) iterations, sizeof(uint64_t)), sum = 0;
        long slow = 0;
        if (!lat)
                return 1;
        for (long i = 0; i < iterations; i++) {
                uint64_t t0, t1;

                if (write_page(fd, buf, 'a' + (char) (i % 26)) < 0)
                        return 1;
                if (sync_file_range(fd, 0, PAGE, SYNC_FILE_RANGE_WRITE) < 0) {
                        perror("sync_file_range");
                        return 1;
                }
                if (comm_cycle) {
                        char name[32]; /* PR_SET_NAME keeps 15 bytes */
                        snprintf(name, sizeof name, "c%ld", i);
                        (void) prctl(PR_SET_NAME, name);
                }
                t0 = now_ns();
                if (write_page(fd, buf, 'A' + (char) (i % 26)) < 0)
                        return 1;
                t1 = now_ns();
                lat[i] = (t1 - t0) / 1000;
                sum += lat[i];
                if (lat[i] > (uint64_t) slow_usec)
                        slow++;
                if (verbose)
                        fprintf(stderr, "rewrite %ld: %" PRIu64 " us\n", i, lat[i]);
        }
        if (fsync(fd) < 0) {
                perror("fsync");
                return 1;
        }

        qsort(lat, (size_t) iterations, sizeof(uint64_t), cmp_u64);
        printf("rewrites=%ld slow=%ld slow_usec=%ld median_usec=%" PRIu64 " p99_usec=%" PRIu64
               " max_usec=%" PRIu64 " mean_usec=%" PRIu64 "\n",
               iterations, slow, slow_usec, lat[(iterations - 1) / 2],
               lat[(size_t) ((iterations * 99 + 99) / 100) - 1], lat[iterations - 1],
               sum / (uint64_t) iterations);
        free(lat);
        return 0;
}
