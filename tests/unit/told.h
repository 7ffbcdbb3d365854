/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a fake (an event handler, a host) was told, one line per call: recorded with told_add(),
 * taken as one string with told_take(), so that a test compares a whole sequence in one check. */

#include <stdarg.h>

#include "tests.h"
#include "util.h"

/* Appends one line to *l. */
static inline void told_add(char ***l, const char *format, ...) _printf_(2, 3);
static inline void told_add(char ***l, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;

        va_start(ap, format);
        CHECK(vasprintf(&s, format, ap) >= 0);
        va_end(ap);
        CHECK(s && strv_extend(l, s) >= 0);
}

/* The lines of *l, each ended by "\n" ("" when none), and *l emptied. Aborts on ENOMEM. */
static inline char *told_take(char ***l) {
        _cleanup_strv_free_ char **lines = TAKE_PTR(*l);
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                abort();
        STRV_FOREACH (line, lines)
                fprintf(f, "%s\n", *line);
        if (fclose(f) != 0)
                abort();
        return buf;
}
