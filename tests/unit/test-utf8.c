/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/utf8.c, the escaping of strings from the kernel and from users at the D-Bus and JSON
 * boundary: valid UTF-8 passes unchanged; invalid bytes, overlong forms, surrogates, code points
 * above U+10FFFF, cut sequences and control characters (but tab and newline) become \xNN; the
 * result is always valid UTF-8; a cut by bytes never splits a character; the JSON writer
 * escapes the same way. And util.c's strv_extend_with_size(): appending 200,000 names is
 * linear (what made sd_bus_message_read_strv() block the daemon for seconds was the length
 * counted at every append), and stays so where realloc() copies every time (ASan). */

#include <time.h>

#include "json.h"
#include "tests.h"
#include "utf8.h"
#include "util.h"

static void check_escape(const char *in, const char *want) {
        _cleanup_free_ char *out = utf8_escape(in);
        CHECK_STR(out, want);
        CHECK(utf8_is_clean(out));
        CHECK_INT(utf8_is_clean(in), streq(in, want));
}

static void test_escape(void) {
        check_escape("", "");
        check_escape("/mnt/data", "/mnt/data");
        check_escape("café ☃ 𝄞", "café ☃ 𝄞");                   /* 2, 3 and 4 byte characters */
        check_escape("tab\tand\nnewline", "tab\tand\nnewline"); /* kept: messages have lines */
        check_escape("\xff\xfe-writer", "\\xff\\xfe-writer");
        check_escape("caf\xe9.img", "caf\\xe9.img");              /* Latin-1 */
        check_escape("\xc3\xa9\xc3\xa9\xc3", "éé\\xc3");          /* cut by the kernel */
        check_escape("\xc0\xaf", "\\xc0\\xaf");                   /* overlong '/' */
        check_escape("\xe0\x80\xaf", "\\xe0\\x80\\xaf");          /* overlong, 3 bytes */
        check_escape("\xed\xa0\x80", "\\xed\\xa0\\x80");          /* a surrogate */
        check_escape("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
        check_escape("\x80 alone", "\\x80 alone");                /* a stray continuation */
        check_escape("\x1b]0;owned\x07", "\\x1b]0;owned\\x07");   /* a terminal sequence */
        check_escape("del\x7f", "del\\x7f");
        check_escape("\xf0\x9d\x84", "\\xf0\\x9d\\x84"); /* 4 bytes, cut */
        check_escape("\xf0\x9d\x84\x9e", "𝄞");
        _cleanup_free_ char *empty = utf8_escape(NULL);
        CHECK_STR(empty, "");

        CHECK_INT(utf8_char_length("a"), 1);
        CHECK_INT(utf8_char_length("é"), 2);
        CHECK_INT(utf8_char_length("☃"), 3);
        CHECK_INT(utf8_char_length("𝄞"), 4);
        CHECK_INT(utf8_char_length(""), 0);
        CHECK_INT(utf8_char_length("\xc3"), 0);
}

static void test_prefix(void) {
        const char *s = "xéé"; /* 1 + 2 + 2 bytes */

        CHECK_INT(utf8_prefix_length(s, 10), 5); /* shorter than max: whole */
        CHECK_INT(utf8_prefix_length(s, 5), 5);
        CHECK_INT(utf8_prefix_length(s, 4), 3); /* would cut the second é: before it */
        CHECK_INT(utf8_prefix_length(s, 3), 3);
        CHECK_INT(utf8_prefix_length(s, 2), 1);
        CHECK_INT(utf8_prefix_length(s, 0), 0);
        CHECK_INT(utf8_prefix_length("a𝄞b", 4), 1);
        CHECK_INT(utf8_prefix_length("a𝄞b", 5), 5);

        /* Every cut of a long name of 2-byte characters is valid UTF-8. */
        char name[200], cut[200];
        size_t n = 0;
        name[n++] = 'x';
        while (n + 2 < sizeof name) {
                name[n++] = (char) 0xc3;
                name[n++] = (char) 0xa9;
        }
        name[n] = '\0';
        for (size_t max = 0; max < n; max++) {
                size_t k = utf8_prefix_length(name, max);
                CHECK(k <= max && max - k <= 1);
                memcpy(cut, name, k);
                cut[k] = '\0';
                CHECK(utf8_is_clean(cut));
        }
}

static void test_json(void) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        JsonWriter w;

        CHECK(f);
        json_init(&w, f, false);
        json_strv(&w,
                  (char *[]){ (char *) "\xff\xfe-writer", (char *) "a\"b\\c", (char *) "\x1b[2J", NULL });
        CHECK_INT(fclose(f), 0);
        CHECK_STR(buf, "[\"\\\\xff\\\\xfe-writer\",\"a\\\"b\\\\c\",\"\\\\x1b[2J\"]");
        CHECK(utf8_is_clean(buf));
}

static void test_strv_linear(void) {
        _cleanup_strv_free_ char **l = NULL;
        struct timespec a, b;
        size_t n = 0;

        clock_gettime(CLOCK_MONOTONIC, &a);
        for (size_t i = 0; i < 200000; i++)
                CHECK_INT(strv_extend_with_size(&l, &n, "loop0"), 0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double s = (double) (b.tv_sec - a.tv_sec) + (double) (b.tv_nsec - a.tv_nsec) / 1e9;
        CHECK_INT(n, 200000);
        CHECK_INT(strv_length(l), 200000);
        CHECK_STR(l[199999], "loop0");
        CHECK(l[200000] == NULL);
        /* Counting the length at each append takes about 10 s here; linear, about 20 ms (also
         * under ASan, whose realloc() always copies: growing by one, 30 s and more). */
        printf("200,000 appends: %.3f s\n", s);
        CHECK(s < 2.0);

        /* Without the size, the same result (for short lists). */
        _cleanup_strv_free_ char **m = NULL;
        CHECK_INT(strv_extend(&m, "a"), 0);
        CHECK_INT(strv_extend(&m, "b"), 0);
        CHECK_INT(strv_length(m), 2);
        CHECK_STR(m[1], "b");
}

int main(void) {
        test_escape();
        test_prefix();
        test_json();
        test_strv_linear();
        return tests_finish();
}
