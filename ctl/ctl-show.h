/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What status and explain print alike, from the daemon's answers or without it (ctl-show.c). */

#include <stdbool.h>
#include <stdint.h>

#include "table.h"

extern const char *const status_header[];
extern const char *const overrides_header[];

int overrides_add(Table *t, const char *disk, const char *setting, bool force, const char *scope,
                  const char *binding, const char *source);
void overrides_print(const Table *t);
void say_flag_off(const char *disk, const char *need, const char *reason);
void print_reasons(const char *label, char *const *reasons);
void print_override(const char *scope, const char *binding, const char *source, uint64_t diskseq);
void print_stable_id(const char *match);
