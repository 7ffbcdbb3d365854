/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The journal of the unmount + mount cycles in flight: one file per cycle under
 * RUNTIME_DIR/cycles/ (/run/stablepages survives a restart of the daemon), written before
 * anything is unmounted and updated at each step, so that a daemon killed or restarted in
 * the middle of a cycle knows at its next start which filesystem it may have left
 * unmounted, and how to mount it again: its source, type, options and place (the mount
 * point's parent directory, by device and inode, so that a path changed meanwhile is not
 * followed), through systemd or by itself, with which stable-writes state. It also says which
 * disk and filesystem these were (the disk's diskseq, the filesystem's UUID), so that nothing
 * is mounted back from, and no flag written to, another disk that took the name meanwhile.
 *
 * Each file holds "key=value" lines; values are escaped as in mountinfo (\040 for a space,
 * \012 for a newline, \134 for a backslash). Next to it, NAME.lock is held (flock) by the
 * process that carries the cycle out, for as long as it runs: a journal whose lock is held
 * belongs to a cycle still running (a daemon killed with its cycle's process alive).
 *
 * remount_journal_format() and remount_journal_parse() are pure (unit-tested); the rest
 * reads and writes the directory. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "remount-check.h"

typedef enum RemountStage {
        REMOUNT_STAGE_PREPARED,     /* checked; nothing was touched yet */
        REMOUNT_STAGE_UNMOUNTING,   /* the unmount was asked for (it may have happened) */
        REMOUNT_STAGE_MOUNTING_NEW, /* unmounted; the mount with the new state was asked for */
        REMOUNT_STAGE_MOUNTING_OLD, /* the old flag was written back: mounting with the old state */
        REMOUNT_STAGE_MOUNTED,      /* mounted again with the new state; being verified */
        REMOUNT_STAGE_MOUNTED_OLD,  /* mounted again with the old state (the new one failed) */
        _REMOUNT_STAGE_MAX,
        _REMOUNT_STAGE_INVALID = -EINVAL,
} RemountStage;

/* "prepared", "unmounting", "mounting-new", "mounting-old", "mounted", "mounted-old". */
const char *remount_stage_to_string(RemountStage s);
RemountStage remount_stage_from_string(const char *s);

typedef struct RemountJournal {
        char *disk;             /* the disk the filesystem is on (its flag is held) */
        uint64_t diskseq;       /* that disk's diskseq when the cycle began; 0: the kernel gives none */
        char *fs_uuid;          /* the filesystem's UUID (ID_FS_UUID of its source device in the
                                 * udev database), NULL when unknown */
        bool identified;        /* diskseq= was read (or is to be written): false for a journal
                                 * of an earlier version, which says nothing of the disk's identity */
        RemountPlan plan;       /* the mount as it was: source, type, options, place */
        dev_t parent_dev;       /* the mount point's parent directory, as pinned before the */
        ino_t parent_ino;       /* unmount: the path must still lead to it */
        uint64_t sb_ino;        /* inode of the superblock's /sys/fs/TYPE/NAME before the cycle
                                 * (sysfs gives each new superblock a new one), 0 if none */
        char *unit;             /* the systemd mount unit that does it, NULL: the daemon itself */
        bool unit_file;         /* the unit has a unit file (fstab): start it; else a transient one */
        int old_flag, new_flag; /* the flag of the old state, and of the new */
        RemountStage stage;
} RemountJournal;

void remount_journal_done(RemountJournal *j);

/* Whether the cycle fell back to the old state (stages mounting-old and mounted-old). */
bool remount_journal_fell_back(const RemountJournal *j);

/* The flag the filesystem is mounted with at j's stage: the new one, or the old one once
 * mounting with the new state failed. */
int remount_journal_mount_flag(const RemountJournal *j);

/* The text of j. NULL on -ENOMEM. */
char *remount_journal_format(const RemountJournal *j);

/* Parses text into *ret. Returns 0, -EBADMSG with the offending line in *ret_bad (owned by
 * the caller, may be NULL) when a field is missing or malformed, or -ENOMEM. */
int remount_journal_parse(const char *text, RemountJournal *ret, char **ret_bad);

/* The file of the cycle on target: DIR/cycles/ESCAPED-TARGET.mount (the unit name systemd
 * gives the mount point). NULL on -ENOMEM or a target that is not an absolute path. */
char *remount_journal_path(const char *runtime_dir, const char *target);

/* Writes j to path atomically (creating its directory). Returns 0 or -errno. */
int remount_journal_save(const char *path, const RemountJournal *j);

/* Reads the journal at path. Returns 0, -ENOENT, -EBADMSG (malformed) or -errno. */
int remount_journal_load(const char *path, RemountJournal *ret);

/* Moves the journal at path to DIR/cycles-refused/NAME.SECONDS (the realtime clock), out of
 * the way of replays, for the administrator; removes its lock file. Returns 0 with the new
 * path in *ret_path, or -errno. */
int remount_journal_set_aside(const char *path, const char *runtime_dir, char **ret_path);

/* The filesystem UUID of block device devnum as the udev database under udev_data_dir knows
 * it (E:ID_FS_UUID=). Returns 1 with it in *ret, 0 when unknown (no entry, no UUID, no
 * database: *ret NULL), or -ENOMEM. */
int remount_fs_uuid(const char *udev_data_dir, dev_t devnum, char **ret);

/* Removes the journal at path and its lock file. Returns 0 or -errno. */
int remount_journal_remove(const char *path);

/* The journal files in DIR/cycles/ (full paths, sorted), NULL when none. Returns 0 or
 * -errno. */
int remount_journal_list(const char *runtime_dir, char ***ret);

/* Takes the lock of the journal at path (PATH.lock, created when missing) without waiting.
 * Returns the locked file descriptor, -EWOULDBLOCK when another process holds it, or
 * -errno. */
int remount_journal_lock(const char *path);
