/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "fault.h"

int __real_open64(const char *path, int flags, ...);
int __real_openat64(int dirfd, const char *path, int flags, ...);
FILE *__real_fopen64(const char *path, const char *mode);
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __real_read(int fd, void *buf, size_t n);

int __wrap_open64(const char *path, int flags, ...);
int __wrap_openat64(int dirfd, const char *path, int flags, ...);
FILE *__wrap_fopen64(const char *path, const char *mode);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
ssize_t __wrap_read(int fd, void *buf, size_t n);

static char fault_suffix[PATH_MAX];
static fault_action_t fault_before_open;
static void *fault_userdata;
static fault_action_t fault_mid_read;
static int fault_write_errno; /* -1: swallow */
static unsigned fault_count;
static bool fault_running; /* an action's own opens do not fire */

static bool path_matches(const char *path) {
        size_t n = strlen(path), k = strlen(fault_suffix);
        return k > 0 && n >= k && strcmp(path + n - k, fault_suffix) == 0;
}

static void fire_open(const char *path) {
        if (!fault_before_open || fault_running || !path || !path_matches(path))
                return;
        fault_running = true;
        fault_count++;
        fault_before_open(path, fault_userdata);
        fault_running = false;
}

void fault_arm_open(const char *suffix, fault_action_t before_open, void *userdata) {
        fault_disarm();
        snprintf(fault_suffix, sizeof fault_suffix, "%s", suffix);
        fault_before_open = before_open;
        fault_userdata = userdata;
}

void fault_arm_write(const char *suffix, int write_errno) {
        fault_disarm();
        snprintf(fault_suffix, sizeof fault_suffix, "%s", suffix);
        fault_write_errno = write_errno;
}

void fault_arm_write_swallow(const char *suffix) {
        fault_arm_write(suffix, -1);
}

void fault_arm_read(const char *suffix, fault_action_t mid_read, void *userdata) {
        fault_disarm();
        snprintf(fault_suffix, sizeof fault_suffix, "%s", suffix);
        fault_mid_read = mid_read;
        fault_userdata = userdata;
}

void fault_disarm(void) {
        fault_suffix[0] = '\0';
        fault_mid_read = NULL;
        fault_before_open = NULL;
        fault_userdata = NULL;
        fault_write_errno = 0;
        fault_count = 0;
}

unsigned fault_hits(void) {
        return fault_count;
}

/* The mode argument of open() and openat(), there only with O_CREAT or O_TMPFILE. */
static mode_t open_mode(int flags, va_list ap) {
        return flags & (O_CREAT | __O_TMPFILE) ? (mode_t) va_arg(ap, int) : 0;
}

int __wrap_open64(const char *path, int flags, ...) {
        va_list ap;
        va_start(ap, flags);
        mode_t mode = open_mode(flags, ap);
        va_end(ap);

        fire_open(path);
        return __real_open64(path, flags, mode);
}

static bool fd_path(int fd, char *target);

int __wrap_openat64(int dirfd, const char *path, int flags, ...) {
        char full[PATH_MAX];
        va_list ap;
        va_start(ap, flags);
        mode_t mode = open_mode(flags, ap);
        va_end(ap);

        /* Relative to a directory: match the path it stands for. */
        if (dirfd != AT_FDCWD && path[0] != '/' && fd_path(dirfd, full)) {
                size_t k = strlen(full);
                snprintf(full + k, sizeof full - k, "/%s", path);
                fire_open(full);
        } else
                fire_open(path);
        return __real_openat64(dirfd, path, flags, mode);
}

FILE *__wrap_fopen64(const char *path, const char *mode) {
        fire_open(path);
        return __real_fopen64(path, mode);
}

/* The path fd is open on, into target (PATH_MAX bytes). */
static bool fd_path(int fd, char *target) {
        char link[64];
        ssize_t k;

        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        k = readlink(link, target, PATH_MAX - 1);
        if (k <= 0)
                return false;
        target[k] = '\0';
        return true;
}

ssize_t __wrap_read(int fd, void *buf, size_t n) {
        char target[PATH_MAX];

        if (fault_mid_read && !fault_running && fault_count == 0 && fd_path(fd, target) &&
            path_matches(target)) {
                ssize_t k = __real_read(fd, buf, n < 16 ? n : 16);
                fault_running = true;
                fault_count++;
                fault_mid_read(target, fault_userdata);
                fault_running = false;
                return k;
        }
        return __real_read(fd, buf, n);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n) {
        if (fault_write_errno != 0) {
                char target[PATH_MAX];

                if (fd_path(fd, target)) {
                        if (path_matches(target)) {
                                fault_count++;
                                if (fault_write_errno < 0)
                                        return (ssize_t) n;
                                errno = fault_write_errno;
                                return -1;
                        }
                }
        }
        return __real_write(fd, buf, n);
}
