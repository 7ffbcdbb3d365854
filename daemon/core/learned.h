/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Decisions the adaptive balanced policy learned from measured stalls, kept across reboots in
 * STATE_DIR/learned (/var/lib/stablepages; a parameter for tests), written atomically so that
 * the one-shot udev applier at the next boot sets the learned state before the filesystem is
 * mounted. One line per disk, tab-separated:
 *   <key> <disk> <off|on> <since usec, CLOCK_REALTIME> <p99 usec> <waits> <budget usec> <reason>
 * The key identifies the disk across reboots: "wwn:<ID_WWN>", "serial:<ID_SERIAL>",
 * "loop:<backing file>" for a loop device, else "name:<kernel name>". */

#include <stdint.h>

#include "device.h"
#include "policy.h"

typedef struct LearnedRecord {
        char *key;
        char *disk;          /* the kernel name when it was learned */
        Learned learned;     /* LEARNED_OFF or LEARNED_ON */
        uint64_t since_usec; /* CLOCK_REALTIME when it was learned */
        uint64_t p99_usec;   /* the window's figures that decided it */
        uint64_t count;
        uint64_t budget_usec;
        char *reason;
} LearnedRecord;

typedef struct LearnedRecords {
        LearnedRecord *items;
        size_t n;
} LearnedRecords;

/* The key of a disk: by WWN, serial, loop backing file, else kernel name. Returns a new string
 * or NULL. */
char *learned_key(const DeviceFacts *f);

/* Loads dir/learned. A missing file is an empty set; malformed lines are skipped with a
 * warning. Returns 0 or -errno. */
int learned_load(const char *dir, LearnedRecords *ret);

/* Writes the set atomically to dir/learned (creating dir). Returns 0 or -errno. */
int learned_save(const char *dir, const LearnedRecords *r);

/* The record of key or NULL. */
const LearnedRecord *learned_find(const LearnedRecords *r, const char *key);

/* Replaces (or adds) the record with rec's key by a copy of rec. Returns 0 or -ENOMEM. */
int learned_set(LearnedRecords *r, const LearnedRecord *rec);

void learned_records_done(LearnedRecords *r);
