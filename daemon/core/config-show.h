/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* show-config: the configuration in force (config_entries()) with where each key comes from, as
 * text in the manner of systemd-analyze cat-config (a configuration file stablepagesd would read
 * the same, each key under a comment naming its file:line or "default"), or as JSON. Pure. */

#include <stdio.h>

#include "config.h"
#include "json.h"

/* Prints the entries of n, read from files, as text to f; daemon says whose configuration it
 * is: the daemon's in force (true), or what the files say (false). */
void config_show_text(FILE *f, bool daemon, char *const *files, const ConfigEntry *entries, size_t n);

/* The same as one JSON object: "from" ("stablepagesd" or "files"), "files", "sections" (each
 * "section", its "file" and "line" or null, "keys": "key", "value", "note", "default",
 * "sources": "file", "line"). */
void config_show_json(JsonWriter *w, bool daemon, char *const *files, const ConfigEntry *entries, size_t n);

/* c as configuration text that config_parse_buffer() reads back into the same settings without
 * diagnostics: config_show_text() of the daemon's configuration. New string, NULL on ENOMEM. */
char *config_format(const Config *c);
