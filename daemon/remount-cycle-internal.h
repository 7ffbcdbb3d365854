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

/* remount-step.c */
/* Set by SIGTERM: the daemon stops. Before the unmount the cycle is abandoned; after it, it
 * is carried to its end. */
extern volatile sig_atomic_t stop_requested;
uint64_t job_timeout(const Cycle *c);
void report(RemountReport *rep, RemountOutcome outcome, int error, const char *format, ...) _printf_(4, 5);
void report_check(RemountReport *rep, int r, const char *reason);
int save_stage(Cycle *c, RemountStage stage);
bool stop_pending(void);
void block_stop_signals(void);
void pause_at(Cycle *c, const char *step);
void setup_signals(void);

/* remount-table.c */
void tablep(struct libmnt_table **t);
struct libmnt_fs *table_find(struct libmnt_table *t, int id, dev_t devnum, const char *target);
struct libmnt_fs *table_top(struct libmnt_table *t, const char *target);
bool mountinfo_has(const char *path, int id, dev_t devnum, const char *target);
bool is_ours(const RemountPlan *p, struct libmnt_fs *fs);
struct libmnt_fs *table_find_elsewhere(struct libmnt_table *t, const RemountPlan *p);

/* remount-users.c */
void read_comm(pid_t pid, char *buf, size_t size);
int for_each_pid(int (*f)(pid_t pid, void *userdata), void *userdata);
int check_idle(Cycle *c);

/* remount-way.c */
int choose_way(Cycle *c, bool replay);

/* remount-device.c */
void source_path(const RemountPlan *p, char *buf, size_t size);
void superblock_dir(const RemountPlan *p, char *buf, size_t size);
int superblock_setup(Cycle *c, char **ret_reason);
int superblock_gone(Cycle *c);
int device_check_mountable(Cycle *c, char **ret_reason);

/* remount-mount.c */
void sync_target(Cycle *c);
int do_unmount(Cycle *c, char **ret_why);
int check_identity(Cycle *c);
void mount_back(Cycle *c, const char *before);
void restart_targets(Cycle *c);

/* remount-replay.c */
void replay(Cycle *c);
