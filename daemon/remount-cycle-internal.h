/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the cycle's child share (remount-cycle.h tells the cycle step by step):
 * remount-cycle.c (the cycle in order, and the entry of the child), remount-replay.c (a
 * replay), remount-way.c (step 1: who does it), remount-users.c (step 1: the checks on the
 * live system), remount-device.c (step 3: the device and its superblock), remount-mount.c
 * (steps 4 to 8: sync, unmount, mount back, verify), remount-table.c (mount table lookups)
 * and remount-step.c (the report, the journal's stage, the stop and the test pause). Not for
 * the daemon: its interface is remount-cycle.h. */

#include <libmount/libmount.h>
#include <limits.h>
#include <signal.h>

#include "remount-cycle.h"
#include "remount-pin.h"
#include "remount-systemd.h"

/* One cycle or replay, in the child. */
typedef struct Cycle {
        const RemountJob *job;
        RemountJournal *journal;
        RemountPlan *plan; /* &journal->plan */
        RemountReport *rep;
        sd_bus *bus;           /* systemd's bus, when systemd does the unmount and the mount */
        const char *mountinfo; /* the system's mount table as this process reads it */
        bool in_host;          /* this process is in the host's mount namespace */
        RemountPin pin;
        char sb_dir[PATH_MAX];  /* the superblock's /sys/fs/TYPE/NAME, "" when an O_EXCL open tells */
        char **targets;         /* targets a stop of the unit stops (started again after) */
        unsigned uninspectable; /* processes whose files could not be seen */
} Cycle;

/* remount-step.c: what every step uses */
/* Set by SIGTERM: the daemon stops. Before the unmount the cycle is abandoned; after it, it
 * is carried to its end. */
extern volatile sig_atomic_t cycle_stop_requested;
/* How long a job of systemd's may take. */
uint64_t cycle_job_timeout(const Cycle *c);
/* Sets the outcome, the errno and the message of the report. */
void cycle_report(RemountReport *rep, RemountOutcome outcome, int error, const char *format, ...)
        _printf_(4, 5);
/* Reports the result r of a check: > 0 refused for reason, < 0 failed. */
void cycle_report_check(RemountReport *rep, int r, const char *reason);
/* Saves stage in the journal (and the report). Returns 0 or -errno. */
int cycle_save_stage(Cycle *c, RemountStage stage);
/* Whether the daemon stops: SIGTERM came, or waits while blocked. */
bool cycle_stop_pending(void);
/* From the unmount on, the cycle goes to its end: SIGTERM and SIGINT are blocked. */
void cycle_block_stop_signals(void);
/* Test hook: says which step the cycle reached, and waits for the test's go. */
void cycle_pause_at(Cycle *c, const char *step);
/* SIGTERM sets cycle_stop_requested, SIGPIPE is ignored, both unblocked. */
void cycle_setup_signals(void);

/* remount-table.c: mount table lookups */
void remount_table_unrefp(struct libmnt_table **t);
/* The entry with that id (and devnum and target when target is given), or NULL. */
struct libmnt_fs *remount_table_find(struct libmnt_table *t, int id, dev_t devnum, const char *target);
/* The mount visible on target (the last one mounted there), or NULL. */
struct libmnt_fs *remount_table_top(struct libmnt_table *t, const char *target);
/* Whether the mount table at path has the entry remount_table_find() finds. */
bool remount_mountinfo_has(const char *path, int id, dev_t devnum, const char *target);
/* Whether fs is a mount of p's filesystem: its type, and its device. */
bool remount_is_ours(const RemountPlan *p, struct libmnt_fs *fs);
/* p's filesystem mounted anywhere but on its target, or NULL. */
struct libmnt_fs *remount_table_find_elsewhere(struct libmnt_table *t, const RemountPlan *p);

/* remount-users.c: step 1's live checks */
/* The command name of pid into buf, "?" when it cannot be read. */
void remount_read_comm(pid_t pid, char *buf, size_t size);
/* Calls f(pid) for every process; stops at the first non-zero return, which it returns. */
int remount_for_each_pid(int (*f)(pid_t pid, void *userdata), void *userdata);
/* The checks on the live system (mount table, other namespaces, processes). Returns 0, or 1
 * with the report filled. */
int cycle_check_idle(Cycle *c);

/* remount-way.c: step 1, who does it */
/* systemd, or this process in the host's mount namespace. Returns 0, or -errno with the report
 * filled. */
int cycle_choose_way(Cycle *c, bool replay);

/* remount-device.c: step 3, the device */
/* The path to open p's source device by. */
void remount_source_path(const RemountPlan *p, char *buf, size_t size);
/* The superblock's /sys/fs/TYPE/NAME for the types that have one, else "". */
void remount_superblock_dir(const RemountPlan *p, char *buf, size_t size);
/* How the superblock's end will be seen. Returns 0, or 1 with a sentence in *ret_reason. */
int cycle_superblock_setup(Cycle *c, char **ret_reason);
/* After the unmount: 1 gone, 0 lives on, -errno cannot be told (never read as gone). */
int cycle_superblock_gone(Cycle *c);
/* Whether this process can open the device to mount it. Returns 0, or 1 with *ret_reason. */
int cycle_check_mountable(Cycle *c, char **ret_reason);

/* remount-mount.c: steps 4 to 8 */
/* Step 4: writes the filesystem's dirty data back. */
void cycle_sync_target(Cycle *c);
/* Step 5: the unmount. Returns 0, -EINPROGRESS (systemd's umount still at work), or -errno
 * with *ret_reason. */
int cycle_unmount(Cycle *c, char **ret_reason);
/* Whether the disk and the filesystem are the journal's. Returns 0, or 1 with the report
 * filled. */
int cycle_check_identity(Cycle *c);
/* Steps 6 to 8: mounts it back onto the pinned place; the report says how. */
void cycle_mount_back(Cycle *c, const char *before);
/* Starts again the targets the stop of the unit stopped. */
void cycle_restart_targets(Cycle *c);

/* remount-replay.c */
/* Mounts the filesystem back as the journal says. */
void cycle_replay(Cycle *c);
