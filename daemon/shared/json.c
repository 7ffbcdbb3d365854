/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A small streaming JSON writer (json.h). */
#include <inttypes.h>

#include "json.h"
#include "util.h"

void json_init(JsonWriter *w, FILE *f, bool pretty) {
        *w = (JsonWriter){ .f = f, .pretty = pretty };
}

static void newline_indent(JsonWriter *w) {
        if (!w->pretty)
                return;
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
                fputs("  ", w->f);
}

/* Separator before a value or key at the current level. */
static void before_item(JsonWriter *w) {
        if (w->after_key) {
                w->after_key = false;
                return;
        }
        if (w->depth > 0) {
                if (w->need_comma[w->depth])
                        fputc(',', w->f);
                newline_indent(w);
        }
        w->need_comma[w->depth] = true;
}

static void open_container(JsonWriter *w, char c) {
        before_item(w);
        fputc(c, w->f);
        if (w->depth < JSON_MAX_DEPTH - 1)
                w->depth++;
        w->need_comma[w->depth] = false;
}

static void close_container(JsonWriter *w, char c) {
        bool had_items = w->need_comma[w->depth];
        if (w->depth > 0)
                w->depth--;
        if (had_items)
                newline_indent(w);
        fputc(c, w->f);
        if (w->depth == 0 && w->pretty)
                fputc('\n', w->f);
}

void json_object_begin(JsonWriter *w) {
        open_container(w, '{');
}

void json_object_end(JsonWriter *w) {
        close_container(w, '}');
}

void json_array_begin(JsonWriter *w) {
        open_container(w, '[');
}

void json_array_end(JsonWriter *w) {
        close_container(w, ']');
}

void json_key(JsonWriter *w, const char *key) {
        before_item(w);
        json_print_string(w->f, key);
        fputs(w->pretty ? ": " : ":", w->f);
        w->after_key = true;
}

void json_string(JsonWriter *w, const char *s) {
        before_item(w);
        if (s)
                json_print_string(w->f, s);
        else
                fputs("null", w->f);
}

void json_int(JsonWriter *w, int64_t v) {
        before_item(w);
        fprintf(w->f, "%" PRId64, v);
}

void json_uint(JsonWriter *w, uint64_t v) {
        before_item(w);
        fprintf(w->f, "%" PRIu64, v);
}

void json_bool(JsonWriter *w, bool v) {
        before_item(w);
        fputs(v ? "true" : "false", w->f);
}

void json_null(JsonWriter *w) {
        before_item(w);
        fputs("null", w->f);
}

void json_strv(JsonWriter *w, char *const *l) {
        json_array_begin(w);
        STRV_FOREACH (s, l)
                json_string(w, *s);
        json_array_end(w);
}

void json_member_string(JsonWriter *w, const char *key, const char *s) {
        json_key(w, key);
        json_string(w, s);
}

void json_member_uint(JsonWriter *w, const char *key, uint64_t v) {
        json_key(w, key);
        json_uint(w, v);
}

void json_member_bool(JsonWriter *w, const char *key, bool v) {
        json_key(w, key);
        json_bool(w, v);
}
