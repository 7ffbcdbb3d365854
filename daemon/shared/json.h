/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A small streaming JSON writer: commas, escaping and (optionally) indentation. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

typedef struct JsonWriter {
        FILE *f;
        bool pretty;
        int depth;
        bool need_comma[JSON_MAX_DEPTH];
        bool after_key;
} JsonWriter;

/* Starts writing to f; pretty indents by two spaces per level. */
void json_init(JsonWriter *w, FILE *f, bool pretty);

void json_object_begin(JsonWriter *w);
void json_object_end(JsonWriter *w);
void json_array_begin(JsonWriter *w);
void json_array_end(JsonWriter *w);

/* Writes a member name; the next value call writes its value. */
void json_key(JsonWriter *w, const char *key);

void json_string(JsonWriter *w, const char *s); /* NULL writes null */
void json_int(JsonWriter *w, int64_t v);
void json_uint(JsonWriter *w, uint64_t v);
void json_bool(JsonWriter *w, bool v);
void json_null(JsonWriter *w);

/* Writes one member of an object: its name, then its value. */
void json_member_string(JsonWriter *w, const char *key, const char *s);
void json_member_uint(JsonWriter *w, const char *key, uint64_t v);
void json_member_bool(JsonWriter *w, const char *key, bool v);

/* Writes an array of strings (NULL-terminated; NULL writes []). */
void json_strv(JsonWriter *w, char *const *l);
