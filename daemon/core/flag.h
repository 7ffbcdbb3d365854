/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one writer of queue/stable_writes. Every process of the project that changes the flag
 * (the Manager, the one-shot applier run by udev, the unmount + mount cycle and its replays,
 * the restore at package removal) calls flag_write() or flag_write_at(); no other file opens
 * the flag for writing (tests/style/test-one-writer.sh fails the build otherwise). Each write:
 *
 *   1. pins the disk: its sysfs directory (block/NAME) is opened once and every attribute is
 *      read through that descriptor, so that a disk removed meanwhile is never confused with
 *      the one that takes its name next (the old directory is gone: ENOENT);
 *   2. re-reads the disk's identity (its diskseq, or its MAJ:MIN on a kernel without diskseq)
 *      and refuses a disk other than the one decided for: -ESTALE;
 *   3. for an off: re-reads the disk's need (need_of, when given: the engine derives it again
 *      from sysfs) and refuses 0 on a required or unknown disk unless forced: -EPERM;
 *   4. records the flag as it finds it, at the disk's first sight, in its history (history.h):
 *      before anything the project writes, so a crash after the write leaves the kernel's value;
 *   5. writes, reads the flag back (-EIO when it reads otherwise) and records the change with
 *      its writer in the history.
 *
 * The reason of a refusal or failure is one sentence naming the disk. Pure of D-Bus and of the
 * event loop; the sysfs root and the runtime directory are parameters (tests pass their own). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "classify.h"

/* Derives the need of disk (with diskseq) again, now. Returns 0 with *ret_need, or -errno
 * with a sentence in *ret_reason (the disk cannot be read, it changed meanwhile). */
typedef int (*flag_need_t)(const char *disk, uint64_t diskseq, Need *ret_need, char **ret_reason,
                           void *userdata);

typedef struct FlagWrite {
        const char *disk;    /* kernel name of the disk (not a partition) */
        uint64_t diskseq;    /* the disk it was decided for; 0: the kernel gives none */
        dev_t devnum;        /* compared instead when diskseq is 0; 0: not compared */
        Need need;           /* the need the decision was made with */
        bool force;          /* an off on a required or unknown disk was forced */
        int value;           /* 0 or 1 */
        const char *writer;  /* who writes, one word, for the history: "stablepagesd",
                              * "udev-applier", "cycle", "replay", "restore" */
        flag_need_t need_of; /* for an off: the need derived again now; NULL: need is current */
        void *userdata;
} FlagWrite;

/* Opens the sysfs directory of disk under sysfs_root (block/NAME, O_DIRECTORY), to be passed to
 * flag_write_at() later, possibly by another process. Returns the descriptor or -errno. */
int flag_pin_disk(const char *sysfs_root, const char *disk);

/* Writes w->value to the flag of the disk whose directory disk_fd is (flag_pin_disk()), as
 * described above, recording in runtime_dir's history. Returns 0 with the flag read back in
 * *ret_now (may be NULL); -ESTALE when another disk (or none) is behind the pinned directory;
 * -EPERM when the interlock refused an off; -ENODEV when the disk went away (or its flag: callers
 * write only a flag they have read); -EIO when it reads otherwise after the write; another -errno.
 * On failure *ret_reason (may be NULL) gets the sentence. */
int flag_write_at(int disk_fd, const char *runtime_dir, const FlagWrite *w, int *ret_now, char **ret_reason);

/* flag_pin_disk() and flag_write_at() in one. */
int flag_write(const char *sysfs_root, const char *runtime_dir, const FlagWrite *w, int *ret_now,
               char **ret_reason);
