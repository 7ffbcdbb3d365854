/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Decisions the adaptive balanced policy learned from measured stalls, kept across reboots in
 * STATE_DIR/learned (/var/lib/stablepages; a parameter for tests), written atomically so that
 * the one-shot udev applier at the next boot sets the learned state before the filesystem is
 * mounted. One line per disk, tab-separated:
 *   <key> <disk> <off|on|none> <since usec, CLOCK_REALTIME> <p99 usec> <waits> <budget usec> <reason>
 * and, for a mirror (mirror.h), six more fields:
 *   mirror <shadow pages> <O_DIRECT writes> <mismatch_cnt> <check usec> <diverged 0|1>
 * ("none": nothing learned from stalls, only the mirror's figures). A reason holds no tab, so an
 * earlier version reads such a line as its eight fields, with the mirror's in the reason.
 * The key names the disk, never its kernel name (sdb may be another disk after the next boot or
 * replug): "<label>:<value>" of the first identity of identity.h that names the disk itself and
 * no other present disk shares ("wwn:<ID_WWN_WITH_EXTENSION or ID_WWN>", "serial:<ID_SERIAL>",
 * "dm:<DM_UUID>", "md:<MD_UUID>", "loop:<backing file>"; not ID_PATH, the slot). A disk with
 * none is keyed "boot:<boot id>:diskseq:<diskseq>": what was learned holds for that disk in
 * this boot only (a daemon restart and the one-shot applier find it), and records of another
 * boot are dropped on load. Records keyed "name:<kernel name>", written by earlier versions,
 * are never applied. */

#include <stdint.h>

#include "device.h"
#include "mirror.h"
#include "policy.h"

typedef struct LearnedRecord {
        char *key;
        char *disk;          /* the kernel name when it was learned */
        Learned learned;     /* LEARNED_OFF, LEARNED_ON, or LEARNED_NONE (a mirror's figures only) */
        uint64_t since_usec; /* CLOCK_REALTIME when it was learned */
        uint64_t p99_usec;   /* the window's figures that decided it */
        uint64_t count;
        uint64_t budget_usec;
        char *reason;
        bool has_mirror; /* mirror holds the figures of a mirror */
        MirrorFigures mirror;
} LearnedRecord;

typedef struct LearnedRecords {
        LearnedRecord *items;
        size_t n;
} LearnedRecords;

/* The key of disk f among the disks of t (see above); boot_id is this boot's (NULL or "" when
 * unknown). Returns 0 and a new string, -ENXIO when f has neither an identity nor a diskseq
 * (or the boot is unknown), or -ENOMEM. */
int learned_key(const DeviceFacts *f, const DeviceTable *t, const char *boot_id, char **ret);

/* The record of disk f among the disks of t (NULL when none) in *ret, and f's key in *ret_key
 * when it was worked out: only when some record carries a value f has (learned_key() looks
 * at every disk of t), else NULL. Returns 0 or -ENOMEM. */
int learned_find_disk(const LearnedRecords *r, const DeviceFacts *f, const DeviceTable *t,
                      const char *boot_id, const LearnedRecord **ret, char **ret_key);

/* True when key holds for one boot only ("boot:..."). */
bool learned_key_is_boot_local(const char *key);

/* Loads dir/learned. A missing file is an empty set; malformed lines are skipped with a
 * warning; records keyed by a kernel name are skipped with one notice naming them, those of a
 * boot other than boot_id silently. Returns 0 or -errno. */
int learned_load(const char *dir, const char *boot_id, LearnedRecords *ret);

/* Writes the set atomically to dir/learned (creating dir). Returns 0 or -errno. */
int learned_save(const char *dir, const LearnedRecords *r);

/* The record of key or NULL. */
const LearnedRecord *learned_find(const LearnedRecords *r, const char *key);

/* Replaces (or adds) the record with rec's key by a copy of rec. Returns 0 or -ENOMEM. */
int learned_set(LearnedRecords *r, const LearnedRecord *rec);

void learned_records_done(LearnedRecords *r);
