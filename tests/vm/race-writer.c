/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stable-pages hazard as a workload: pages modified while they are under writeback.
 *
 *   race-writer [--pages N] [--seconds S] FILE
 *     Creates FILE with N pages (default 256), writes it back once, maps it shared and, for S
 *     seconds (default 5), lets one thread store into every page without pause while the main
 *     thread writes the file back again and again (sync_file_range WAIT_BEFORE|WRITE|WAIT_AFTER,
 *     which reports write errors). Without stable writes in force the stores land in pages
 *     whose writeback has started; with them, each store waits for the page's writeback.
 *     Prints one line
 *       syncs=N errors=K first_error=STRING stores=M
 *     where errors counts write-backs that failed (EIO from the kernel: the device rejected
 *     the data, e.g. a PI guard check), then fsyncs and exits 0; 1 on setup failures only.
 *
 * The caller reads the kernel log and the device afterwards: this program only makes the
 * race happen and reports what the kernel returned to it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static atomic_bool stop;
static atomic_ulong stores;

typedef struct Region {
        volatile unsigned char *p;
        size_t size;
} Region;

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Stores into every 64th byte of every page, round after round, until told to stop. */
static void *dirtier(void *arg) {
        const Region *r = arg;
        unsigned long n = 0;

        for (unsigned char v = 1; !atomic_load_explicit(&stop, memory_order_relaxed); v++)
                for (size_t off = 0; off < r->size; off += 64, n++)
                        r->p[off] = (unsigned char) (v + off / PAGE);
        atomic_store(&stores, n);
        return NULL;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "pages", required_argument, NULL, 'p' },
                { "seconds", required_argument, NULL, 's' },
                {},
        };
        long pages = 256;
        double seconds = 5;
        unsigned long syncs = 0, errors = 0;
        char first_error[64] = "none";
        pthread_t t;
        int c, fd;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'p':
                        pages = strtol(optarg, NULL, 10);
                        break;
                case 's':
                        seconds = strtod(optarg, NULL);
                        break;
                default:
                        return 2;
                }
        if (optind != argc - 1 || pages <= 0 || seconds <= 0) {
                fprintf(stderr, "usage: %s [--pages N] [--seconds S] FILE\n", argv[0]);
                return 2;
        }

        Region r = { .size = (size_t) pages * PAGE };
        fd = open(argv[optind], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || posix_fallocate(fd, 0, (off_t) r.size) != 0) {
                perror(argv[optind]);
                return 1;
        }
        r.p = mmap(NULL, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (r.p == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        memset((void *) r.p, 'x', r.size);
        if (fsync(fd) < 0) {
                perror("fsync");
                return 1;
        }

        if (pthread_create(&t, NULL, dirtier, &r) != 0) {
                fprintf(stderr, "pthread_create failed\n");
                return 1;
        }
        for (double end = now() + seconds; now() < end; syncs++)
                if (sync_file_range(fd, 0, 0,
                                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                            SYNC_FILE_RANGE_WAIT_AFTER) < 0) {
                        if (errors++ == 0)
                                snprintf(first_error, sizeof(first_error), "%s", strerrorname_np(errno) ?: "?");
                }
        atomic_store(&stop, true);
        pthread_join(t, NULL);
        if (fsync(fd) < 0 && errors++ == 0)
                snprintf(first_error, sizeof(first_error), "%s", strerrorname_np(errno) ?: "?");
        printf("syncs=%lu errors=%lu first_error=%s stores=%lu\n", syncs, errors, first_error,
               atomic_load(&stores));
        return 0;
}
