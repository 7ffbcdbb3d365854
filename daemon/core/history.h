/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The history of a disk's queue/stable_writes from its first sight: the flag then (the
 * kernel's own value when seen at the disk's add, by the applier that udev runs for it) and
 * each later change with its time and writer. What every consumer of the disk captured follows
 * from it (a filesystem at its mount, swap at swapon, the disk's own page cache at its add),
 * and so does what the kernel declared: a flag found 0 where a driver may have declared 1 is
 * not read as "none" unless the history says the kernel set 0.
 *
 * One file per disk, RUNTIME_DIR/history/NAME, for the disk whose diskseq it holds: a disk that
 * takes the name later starts a new history, and /run, like a diskseq, lasts one boot. A disk
 * without diskseq (kernels before 5.15) gets none: its name is all there is, and a record of a
 * name would be taken for the next disk of that name. Written by flag_write() (flag.h) for the
 * project's own changes and by the engine's scan at first sight and when the flag moved without
 * the project; atomically, under a lock that the applier and the daemon share.
 *
 * The text: "version=1", "disk=NAME", "diskseq=N", "devnum=MAJ:MIN", "first=V AT USEC WRITER"
 * (AT "add" or "later"), then one "change=V USEC WRITER" per change, oldest first, at most
 * HISTORY_MAX_CHANGES (older ones are dropped and counted in "dropped=N"). WRITER has no
 * spaces. history_format() and history_parse() are pure; the rest reads and writes the
 * directory. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define HISTORY_MAX_CHANGES 64

/* The writer of a change the project did not make: seen when the flag moved without it. */
#define HISTORY_WRITER_OTHER "other"

typedef struct FlagChange {
        int value;
        uint64_t usec; /* CLOCK_REALTIME */
        char *writer;  /* "stablepagesd", "udev-applier", "cycle", "restore", HISTORY_WRITER_OTHER */
} FlagChange;

typedef struct FlagHistory {
        char *disk;
        uint64_t diskseq;
        dev_t devnum;
        int first;         /* the flag at first sight */
        bool first_at_add; /* seen at the disk's add: the kernel's own value */
        uint64_t first_usec;
        char *first_by;
        FlagChange *changes;
        size_t n_changes;
        uint64_t dropped; /* changes dropped to keep HISTORY_MAX_CHANGES */
} FlagHistory;

void history_done(FlagHistory *h);

/* The flag after the last change recorded (the first sight's when none). */
int history_last(const FlagHistory *h);

/* The text of h. NULL on -ENOMEM. */
char *history_format(const FlagHistory *h);

/* Parses text. Returns 0, -EBADMSG (malformed, a field missing), or -ENOMEM. */
int history_parse(const char *text, FlagHistory *ret);

/* The history of disk with diskseq. Returns 0, -ENOENT when there is none (for that diskseq:
 * a history of an earlier disk of the name is none), or -errno. */
int history_load(const char *runtime_dir, const char *disk, uint64_t diskseq, FlagHistory *ret);

/* Records the first sight of disk (value, seen at its add or later, by writer) unless it has a
 * history; a sight at its add makes the first sight the kernel's own when nothing changed the
 * flag since. Returns 1 when recorded, 0 when it had one, -EINVAL for diskseq 0, or -errno. */
int history_note_first(const char *runtime_dir, const char *disk, uint64_t diskseq, dev_t devnum, int value,
                       bool at_add, const char *writer);

/* Appends a change to value by writer; a disk without a history gets one first, with prior
 * seen now (not at its add). Returns 0, -EINVAL for diskseq 0, or -errno. */
int history_note_change(const char *runtime_dir, const char *disk, uint64_t diskseq, dev_t devnum, int prior,
                        int value, const char *writer);

/* Removes the history of disk when it is that of diskseq (a disk gone). Returns 0 or -errno. */
int history_forget(const char *runtime_dir, const char *disk, uint64_t diskseq);
