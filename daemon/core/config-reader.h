/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Between the configuration's line reader (config-reader.c) and its item table (config.c):
 * private to these two files. */

#include "config.h"

typedef enum SectionKind {
        SECTION_NONE, /* before the first header */
        SECTION_MANAGER,
        SECTION_DEVICE,
        SECTION_IGNORED, /* unknown or malformed, already reported: its keys are skipped */
} SectionKind;

/* A Key=value line longer than inih's line buffer, handed to inih in pieces: "Key=" and the first
 * piece, then each further piece as a continuation line (" piece"), which inih passes to the
 * handler under the same key; the handler joins them and handles the line once it is whole. */
typedef struct SplitLine {
        char name[64]; /* longer names are no key of the table: reported without inih */
        char value[CONFIG_LINE_MAX + 1];
        size_t len, pos;                  /* of value; pos: how much was handed out */
        char joined[CONFIG_LINE_MAX + 1]; /* the pieces inih handed back so far */
        size_t joined_len;
        bool active;
} SplitLine;

typedef struct ParseState {
        Config *config;
        ConfigDiags *diags;
        const char *file;
        const char *data;
        size_t size, pos;
        unsigned line;
        unsigned n_diags;
        SectionKind section;
        size_t rule; /* index into config->rules in SECTION_DEVICE */
        int error;   /* -ENOMEM, sticky */
        SplitLine split;
} ParseState;

/* Records a problem at line of s->file, at most CONFIG_DIAGS_PER_FILE_MAX per file; sets
 * s->error on -ENOMEM. */
void config_diag(ParseState *s, DiagLevel level, unsigned line, const char *format, ...) _printf_(4, 5);

#define diag_error(s, ...) config_diag(s, DIAG_ERROR, (s)->line, __VA_ARGS__)
#define diag_warning(s, ...) config_diag(s, DIAG_WARNING, (s)->line, __VA_ARGS__)

/* config.c: handles a "[...]" line (stripped, modified in place) at s->line: sets
 * s->section, adds a rule for [Device MATCH], reports what is wrong. */
void config_section_header(ParseState *s, char *line);

/* config.c: a line with key name in section s->section that was rejected before its value
 * could be read (too long, not UTF-8, a control character): a key that limits which disks
 * the daemon may write (Devices=) fails closed, as if every entry of the line were invalid. */
void config_handle_unreadable_item(ParseState *s, const char *name);

/* config.c: the inih handler of a validated "Key=value" line of the section s->section
 * (user is the ParseState; section is ignored, inih truncates it). Always returns 1. */
int config_handle_item(void *user, const char *section, const char *name, const char *value);
