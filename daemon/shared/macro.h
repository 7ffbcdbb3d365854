/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _noreturn_ __attribute__((noreturn))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)
#define isempty(s) (!(s) || (s)[0] == '\0')

/* An error that is made up rather than returned by a call (as in systemd): log_*_errno() logs
 * it with its errno for %m but without ERRNO= in the journal, and returns -errno, so that
 * "return log_error_errno(SYNTHETIC_ERRNO(EINVAL), ...)" logs why and fails. */
#define SYNTHETIC_ERRNO(num) (1 << 30 | (num))
#define IS_SYNTHETIC_ERRNO(val) ((((val) >= 0 ? (val) : -(val)) & (1 << 30)) != 0)
#define ERRNO_VALUE(val) (((val) >= 0 ? (val) : -(val)) & ~(1 << 30))

#define USEC_PER_SEC 1000000ULL
#define USEC_PER_MSEC 1000ULL
#define NSEC_PER_USEC 1000ULL

/* Frees *p and sets it to NULL; returns NULL for use in assignments. */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void freep(void *p) {
        free(*(void **) p);
}

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}

static inline void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Returns the pointer and clears the variable, to hand ownership on. */
#define TAKE_PTR(p)                                                                                         \
        ({                                                                                                  \
                __typeof__(p) _p = (p);                                                                     \
                (p) = NULL;                                                                                 \
                _p;                                                                                         \
        })

#define TAKE_FD(fd)                                                                                         \
        ({                                                                                                  \
                int _fd = (fd);                                                                             \
                (fd) = -EBADF;                                                                              \
                _fd;                                                                                        \
        })

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                             \
        static inline void func##p(type *p) {                                                               \
                if (*p)                                                                                     \
                        func(*p);                                                                           \
        }

/* For a table "static const char *const name##_table[]" of the names of an enum's values
 * (indexed by value), defines name##_to_string(type) (NULL for a value out of range) and
 * name##_from_string(const char *) (the value, or -EINVAL for NULL or an unknown name), in
 * the manner of systemd's DEFINE_STRING_TABLE_LOOKUP. */
#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                                    \
        const char *name##_to_string(type i) {                                                              \
                /* A negative value converts to a huge size_t: out of range too. */                         \
                if ((size_t) i >= ELEMENTSOF(name##_table))                                                 \
                        return NULL;                                                                        \
                return name##_table[i];                                                                     \
        }

#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)                                                  \
        type name##_from_string(const char *s) {                                                            \
                if (!s)                                                                                     \
                        return (type) -EINVAL;                                                              \
                for (size_t i = 0; i < ELEMENTSOF(name##_table); i++)                                       \
                        if (name##_table[i] && streq(name##_table[i], s))                                   \
                                return (type) i;                                                            \
                return (type) -EINVAL;                                                                      \
        }

#define DEFINE_STRING_TABLE_LOOKUP(name, type)                                                              \
        DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                                    \
        DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)
