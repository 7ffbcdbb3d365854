/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strings made valid UTF-8 for D-Bus and JSON where they leave the daemon (utf8.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

size_t utf8_char_length(const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        uint32_t c;
        size_t n;

        if (p[0] < 0x80)
                return p[0] ? 1 : 0;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                n = 2, c = p[0] & 0x1f;
        else if (p[0] >= 0xe0 && p[0] <= 0xef)
                n = 3, c = p[0] & 0x0f;
        else if (p[0] >= 0xf0 && p[0] <= 0xf4)
                n = 4, c = p[0] & 0x07;
        else
                return 0; /* a continuation byte, 0xc0/0xc1 (overlong), or above U+10FFFF */
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0; /* cut short (the NUL ends here too) */
                c = (c << 6) | (p[i] & 0x3f);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
            (c >= 0xd800 && c <= 0xdfff))
                return 0; /* overlong, above U+10FFFF, or a surrogate */
        return n;
}

/* Whether the character of length n at s is kept as it is. */
static bool keep(const char *s, size_t n) {
        unsigned char c = (unsigned char) *s;
        return n > 1 || (n == 1 && (c >= 0x20 || c == '\t' || c == '\n') && c != 0x7f);
}

bool utf8_is_clean(const char *s) {
        for (size_t n; s && *s; s += n) {
                n = utf8_char_length(s);
                if (!keep(s, n))
                        return false;
        }
        return true;
}

char *utf8_escape(const char *s) {
        size_t size = 0;
        char *buf = NULL;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t n; s && *s; s += n) {
                n = utf8_char_length(s);
                if (keep(s, n))
                        fwrite(s, 1, n, f);
                else {
                        fprintf(f, "\\x%02x", (unsigned char) *s);
                        n = 1;
                }
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

size_t utf8_prefix_length(const char *s, size_t max) {
        size_t len = strnlen(s, max + 1);

        if (len <= max)
                return len;
        /* s[max] is the first byte cut off: back up over the bytes of the character it is in. */
        len = max;
        while (len > 0 && ((unsigned char) s[len] & 0xc0) == 0x80 && max - len < 3)
                len--;
        return len;
}
