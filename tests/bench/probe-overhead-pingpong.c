/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Context-switch micro-benchmark for the stall probe's sched_switch program: two processes
 * bounce one byte over two pipes for SECONDS (each round trip is two context switches when
 * both share a CPU) and print "round_trips=N seconds=S round_trips_per_sec=R".
 * Usage: probe-overhead-pingpong SECONDS */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int main(int argc, char *argv[]) {
        int ab[2], ba[2];
        double seconds, start, t;
        uint64_t trips = 0;
        cpu_set_t cpus;
        pid_t pid;
        char c = 0;

        if (argc != 2 || (seconds = atof(argv[1])) <= 0) {
                fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
                return 2;
        }
        /* One CPU for both: every hand-over is a context switch. */
        CPU_ZERO(&cpus);
        CPU_SET(0, &cpus);
        (void) sched_setaffinity(0, sizeof(cpus), &cpus);
        if (pipe(ab) < 0 || pipe(ba) < 0) {
                perror("pipe");
                return 1;
        }
        pid = fork();
        if (pid < 0) {
                perror("fork");
                return 1;
        }
        if (pid == 0) {
                close(ab[1]);
                close(ba[0]);
                while (read(ab[0], &c, 1) == 1)
                        if (write(ba[1], &c, 1) != 1)
                                _exit(1);
                _exit(0);
        }
        close(ab[0]);
        close(ba[1]);
        start = now();
        do {
                for (int i = 0; i < 1000; i++) {
                        if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) {
                                perror("pipe i/o");
                                return 1;
                        }
                }
                trips += 1000;
        } while ((t = now()) - start < seconds);
        close(ab[1]);
        waitpid(pid, NULL, 0);
        printf("round_trips=%llu seconds=%.3f round_trips_per_sec=%.1f\n", (unsigned long long) trips,
               t - start, (double) trips / (t - start));
        return 0;
}
