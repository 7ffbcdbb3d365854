/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by the fuzz targets: each defines LLVMFuzzerTestOneInput(), which libFuzzer calls
 * (build-fuzz, -Dfuzz=true) or fuzz-main.c calls for every file of the seed corpus (the
 * regular builds, where the corpus runs as a unit test, under ASan+UBSan in
 * build-sanitize). A target aborts when an invariant of the code under test breaks. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (it may hold NUL bytes: C code sees the first
 * piece). Caller frees. */
static inline char *fuzz_string(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/* Aborts with a message when cond is false: the fuzzer records the input as a crash. */
#define FUZZ_ASSERT(cond)                                                                                   \
        do {                                                                                                \
                if (!(cond)) {                                                                              \
                        fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);        \
                        abort();                                                                            \
                }                                                                                           \
        } while (0)

/* A FILE that discards what is written to it (output paths are exercised too). */
static inline FILE *fuzz_null(void) {
        static FILE *f;
        if (!f)
                f = fopen("/dev/null", "we");
        if (!f)
                abort();
        return f;
}
