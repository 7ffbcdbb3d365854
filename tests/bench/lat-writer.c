/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The writers and the flusher of tests/bench/run, section 1 (writer tail latency).
 *
 *   lat-writer append FILE SECONDS OUT [INTERVAL_US]
 *       A log appender: appends a 100-byte line to FILE with write(), sleeps INTERVAL_US
 *       (default 1000) and again, for SECONDS; times every write().
 *   lat-writer mmap FILE SECONDS OUT [INTERVAL_US]
 *       An mmap writer: maps the first page of FILE (which must hold one page) shared and
 *       copies 100 bytes into it at a moving offset, every INTERVAL_US, for SECONDS; times
 *       every copy (a store to a page that writeback write-protected takes a write fault,
 *       which waits for the writeback when stable writes are in force).
 *   lat-writer flush FILE [PAUSE_US]
 *       The flusher: until SIGTERM, waits for the writeback of FILE to end and starts the
 *       writeback of its dirty pages (sync_file_range(WAIT_BEFORE | WRITE)), pausing PAUSE_US
 *       (default 1000) between rounds, so that the writer's page is under writeback most of
 *       the time. Run it in a blkio-throttled cgroup: its writeback is throttled.
 *
 * The writers write one latency per line, in nanoseconds, to OUT and print
 *   writes=N seconds=S p50_us=.. p99_us=.. max_us=.. over10ms=K
 * Exit status 0 on success, 1 on failure, 2 on usage errors. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define LINE 100

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
        stop = 1;
}

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void sleep_us(long us) {
        struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

        if (us > 0)
                nanosleep(&ts, NULL);
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

typedef struct Samples {
        uint64_t *v;
        size_t n, size;
} Samples;

static int samples_add(Samples *s, uint64_t ns) {
        if (s->n == s->size) {
                size_t size = s->size ? s->size * 2 : 8192;
                uint64_t *v = realloc(s->v, size * sizeof(uint64_t));
                if (!v)
                        return -ENOMEM;
                s->v = v;
                s->size = size;
        }
        s->v[s->n++] = ns;
        return 0;
}

/* Writes the samples to path, one per line, and prints the summary. */
static int samples_report(Samples *s, const char *path, double seconds) {
        FILE *f = fopen(path, "we");
        size_t over = 0;

        if (!f) {
                fprintf(stderr, "%s: %m\n", path);
                return -errno;
        }
        for (size_t i = 0; i < s->n; i++) {
                fprintf(f, "%" PRIu64 "\n", s->v[i]);
                if (s->v[i] > 10000000)
                        over++;
        }
        if (fclose(f) != 0)
                return -errno;
        if (s->n == 0) {
                fprintf(stderr, "no writes\n");
                return -ENODATA;
        }
        qsort(s->v, s->n, sizeof(uint64_t), cmp_u64);
        printf("writes=%zu seconds=%.3f p50_us=%" PRIu64 " p99_us=%" PRIu64 " max_us=%" PRIu64
               " over10ms=%zu\n",
               s->n, seconds, s->v[(s->n - 1) / 2] / 1000,
               s->v[(size_t) ((double) (s->n - 1) * 0.99)] / 1000, s->v[s->n - 1] / 1000, over);
        return 0;
}

static int run_append(const char *path, long seconds, const char *out, long interval_us) {
        char line[LINE];
        Samples s = {};
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

        if (fd < 0) {
                fprintf(stderr, "%s: %m\n", path);
                return 1;
        }
        memset(line, 'x', sizeof line);
        line[LINE - 1] = '\n';
        uint64_t start = now_ns(), end = start + (uint64_t) seconds * 1000000000ULL, t0, t1 = start;
        for (unsigned long i = 0; !stop && t1 < end; i++) {
                snprintf(line, 24, "%020lu", i);
                line[20] = ' ';
                t0 = now_ns();
                if (write(fd, line, sizeof line) != (ssize_t) sizeof line) {
                        fprintf(stderr, "write: %m\n");
                        return 1;
                }
                t1 = now_ns();
                if (samples_add(&s, t1 - t0) < 0)
                        return 1;
                sleep_us(interval_us);
        }
        close(fd);
        int r = samples_report(&s, out, (now_ns() - start) / 1e9);
        free(s.v);
        return r < 0;
}

static int run_mmap(const char *path, long seconds, const char *out, long interval_us) {
        char line[LINE];
        Samples s = {};
        int fd = open(path, O_RDWR | O_CLOEXEC);

        if (fd < 0) {
                fprintf(stderr, "%s: %m\n", path);
                return 1;
        }
        char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
                fprintf(stderr, "mmap: %m\n");
                return 1;
        }
        memset(line, 'y', sizeof line);
        p[0] = 'y'; /* fault the page in once: the loop times updates, not the first read */
        uint64_t start = now_ns(), end = start + (uint64_t) seconds * 1000000000ULL, t0, t1 = start;
        for (unsigned long i = 0; !stop && t1 < end; i++) {
                line[0] = (char) ('a' + i % 26);
                t0 = now_ns();
                memcpy(p + (i * LINE) % (PAGE - LINE), line, LINE);
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                t1 = now_ns();
                if (samples_add(&s, t1 - t0) < 0)
                        return 1;
                sleep_us(interval_us);
        }
        munmap(p, PAGE);
        close(fd);
        int r = samples_report(&s, out, (now_ns() - start) / 1e9);
        free(s.v);
        return r < 0;
}

static int run_flush(const char *path, long pause_us) {
        unsigned long rounds = 0;
        int fd = open(path, O_RDWR | O_CLOEXEC);

        if (fd < 0) {
                fprintf(stderr, "%s: %m\n", path);
                return 1;
        }
        while (!stop) {
                if (sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE) < 0 &&
                    errno != EINTR) {
                        fprintf(stderr, "sync_file_range: %m\n");
                        return 1;
                }
                rounds++;
                sleep_us(pause_us);
        }
        close(fd);
        printf("flush_rounds=%lu\n", rounds);
        return 0;
}

int main(int argc, char *argv[]) {
        struct sigaction sa = { .sa_handler = on_signal };

        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        if (argc >= 5 && argc <= 6 && (strcmp(argv[1], "append") == 0 || strcmp(argv[1], "mmap") == 0)) {
                long seconds = strtol(argv[3], NULL, 10),
                     interval = argc == 6 ? strtol(argv[5], NULL, 10) : 1000;
                if (seconds <= 0 || interval < 0)
                        return 2;
                return argv[1][0] == 'a' ? run_append(argv[2], seconds, argv[4], interval)
                                         : run_mmap(argv[2], seconds, argv[4], interval);
        }
        if (argc >= 3 && argc <= 4 && strcmp(argv[1], "flush") == 0)
                return run_flush(argv[2], argc == 4 ? strtol(argv[3], NULL, 10) : 1000);
        fprintf(stderr,
                "usage: %s append|mmap FILE SECONDS OUT [INTERVAL_US]\n"
                "       %s flush FILE [PAUSE_US]\n",
                argv[0], argv[0]);
        return 2;
}
