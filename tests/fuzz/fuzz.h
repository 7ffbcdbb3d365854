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

#include "json.h"
#include "utf8.h"
#include "util.h"

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

/* An independent check (RFC 3629's table, not utf8.c's code) that s[0..n) is valid UTF-8. */
static inline int fuzz_valid_utf8(const unsigned char *s, size_t n) {
        for (size_t i = 0; i < n;) {
                unsigned char c = s[i];
                size_t len;
                unsigned char lo = 0x80, hi = 0xbf;

                if (c < 0x80) {
                        i++;
                        continue;
                }
                if (c >= 0xc2 && c <= 0xdf)
                        len = 2;
                else if (c >= 0xe0 && c <= 0xef) {
                        len = 3;
                        if (c == 0xe0)
                                lo = 0xa0;
                        if (c == 0xed)
                                hi = 0x9f;
                } else if (c >= 0xf0 && c <= 0xf4) {
                        len = 4;
                        if (c == 0xf0)
                                lo = 0x90;
                        if (c == 0xf4)
                                hi = 0x8f;
                } else
                        return 0;
                if (i + len > n || s[i + 1] < lo || s[i + 1] > hi)
                        return 0;
                for (size_t k = 2; k < len; k++)
                        if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                                return 0;
                i += len;
        }
        return 1;
}

/* Every target also feeds its input to the escaping of strings at the D-Bus and JSON boundary
 * (utf8.h): what comes out is valid UTF-8 without control characters but tab and newline, the
 * same as the input when the input was already such, and a JSON string of it is valid UTF-8. */
static inline void fuzz_check_escaping(const uint8_t *data, size_t size) {
        char *s = fuzz_string(data, size), *e = utf8_escape(s), *json = NULL;
        size_t json_size = 0;
        FILE *f;

        FUZZ_ASSERT(e);
        FUZZ_ASSERT(fuzz_valid_utf8((const unsigned char *) e, strlen(e)));
        for (const char *p = e; *p; p++)
                FUZZ_ASSERT((unsigned char) *p >= 0x20 || *p == '\t' || *p == '\n');
        if (fuzz_valid_utf8((const unsigned char *) s, strlen(s)) && utf8_is_clean(s))
                FUZZ_ASSERT(strcmp(s, e) == 0);
        for (size_t max = 0; max <= strlen(e); max += 1 + max / 8)
                FUZZ_ASSERT(fuzz_valid_utf8((const unsigned char *) e, utf8_prefix_length(e, max)));
        f = open_memstream(&json, &json_size);
        FUZZ_ASSERT(f);
        json_print_string(f, s);
        FUZZ_ASSERT(fclose(f) == 0);
        FUZZ_ASSERT(fuzz_valid_utf8((const unsigned char *) json, json_size));
        free(json);
        free(e);
        free(s);
}
