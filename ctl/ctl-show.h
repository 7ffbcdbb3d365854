/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What status and explain print alike, from the daemon's answers or without it (ctl-show.c). */

#include <stdbool.h>
#include <stdint.h>

#include "table.h"

/* The columns of status's two tables: the disks, and their overrides. */
extern const char *const ctl_status_header[];
extern const char *const ctl_overrides_header[];

/* Adds one override to the overrides table: the disk it applies to ("-" for none present).
 * Returns 0 or -ENOMEM. */
int ctl_overrides_add(Table *t, const char *disk, const char *setting, bool force, const char *scope,
                      const char *binding, const char *source);

/* Prints the overrides table after the devices table, when there is any override. */
void ctl_overrides_print(const Table *t);

/* A disk that needs stable writes whose flag is off: what starts on it now (a mount, a swapon, a
 * mapping) would run without them. A warning: what runs on it already is each consumer's, and
 * a consumer that runs without them is said at error level (ctl_say_consumer_hazards()). */
void ctl_say_flag_off(const char *disk, const char *need, const char *reason);

/* Prints lines indented under label, the label on the first line only (explain's "because:",
 * "mounts:"). */
void ctl_print_lines(const char *label, char *const *lines);

/* The override line of explain: what it is bound to, and where it is kept. */
void ctl_print_override(const char *scope, const char *binding, const char *source, uint64_t diskseq);

/* The disk id line of explain: what a persistent override would be bound to. */
void ctl_print_stable_id(const char *match);

/* The "learned:" line of explain: what was learned, since when (local time), and why. */
void ctl_print_learned(const char *learned, uint64_t since_usec, const char *reason);
