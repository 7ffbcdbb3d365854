/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Minimal assertions for the unit tests: each failed check prints file:line and the
 * values, and the test exits 1 at the end of main (tests_finish()). */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int tests_failed;
int tests_failed;

#define CHECK(expr)                                                                                         \
        do {                                                                                                \
                if (!(expr)) {                                                                              \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr);            \
                        tests_failed++;                                                                     \
                }                                                                                           \
        } while (0)

#define CHECK_INT(a, b)                                                                                     \
        do {                                                                                                \
                long long _a = (long long) (a), _b = (long long) (b);                                       \
                if (_a != _b) {                                                                             \
                        fprintf(stderr, "%s:%d: %s == %s: %lld != %lld\n", __FILE__, __LINE__, #a, #b, _a,  \
                                _b);                                                                        \
                        tests_failed++;                                                                     \
                }                                                                                           \
        } while (0)

#define CHECK_STR(a, b)                                                                                     \
        do {                                                                                                \
                const char *_a = (a), *_b = (b);                                                            \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                                                    \
                        fprintf(stderr, "%s:%d: %s == %s: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b,  \
                                _a ? _a : "(null)", _b ? _b : "(null)");                                    \
                        tests_failed++;                                                                     \
                }                                                                                           \
        } while (0)

/* Checks that haystack contains needle. */
#define CHECK_CONTAINS(haystack, needle)                                                                    \
        do {                                                                                                \
                const char *_h = (haystack), *_n = (needle);                                                \
                if (!_h || !strstr(_h, _n)) {                                                               \
                        fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,      \
                                _h ? _h : "(null)", _n);                                                    \
                        tests_failed++;                                                                     \
                }                                                                                           \
        } while (0)

static inline int tests_finish(void) {
        if (tests_failed) {
                fprintf(stderr, "%d check(s) failed\n", tests_failed);
                return 1;
        }
        return 0;
}
