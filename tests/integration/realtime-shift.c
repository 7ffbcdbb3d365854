/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A preloaded library that steps the wall clock of one process, to test what a clock step
 * does to it without touching the machine's clock:
 *
 *   LD_PRELOAD=realtime-shift.so SP_REALTIME_SHIFT_FILE=PATH program...
 *
 * clock_gettime(CLOCK_REALTIME[_COARSE]) returns the real time plus the number of seconds PATH
 * holds (signed; read at every call, so a test can step the clock while the program runs; a
 * missing or unreadable file is 0). Other clocks are untouched. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long shift_seconds(void) {
        const char *path = getenv("SP_REALTIME_SHIFT_FILE");
        char buf[32];
        ssize_t n;
        int fd;

        if (!path || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                return 0;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        return strtol(buf, NULL, 10);
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
        static int (*real)(clockid_t, struct timespec *);
        int r;

        if (!real)
                real = (int (*)(clockid_t, struct timespec *)) dlsym(RTLD_NEXT, "clock_gettime");
        if (!real)
                return -1;
        r = real(clock, ts);
        if (r == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE))
                ts->tv_sec += shift_seconds();
        return r;
}
