/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The unmount + mount cycle itself, run in a child process forked by the daemon (remount.c),
 * so that the daemon's event loop never blocks on an unmount that flushes data and the
 * daemon's own mount namespace is never touched. The child:
 *
 *   1. connects to the system bus when it can: if systemd manages the mount (a loaded,
 *      active .mount unit from /etc/fstab or a unit file), the cycle is a RestartUnit of
 *      that unit, so that its options and dependencies apply;
 *   2. enters the mount namespace that holds the mount: its own if the daemon runs in the
 *      host's, else PID 1's (/proc/1/ns/mnt), else, when PID 1's cannot be opened, that of
 *      a process whose mount table lists the very mount (mount ids are unique system-wide
 *      while the mount exists, so that is the same namespace); it checks after setns()
 *      that the mount is there;
 *   3. checks again what the daemon checked on the table (bind mounts, submounts), then
 *      what needs the live system: copies of the mount in other mount namespaces that an
 *      unmount here would not reach, and every process's open files, working directory,
 *      root and mappings (/proc/PID/fd, cwd, root, maps);
 *   4. unmounts without MNT_FORCE or MNT_DETACH (EBUSY is the final check), makes sure the
 *      superblock is gone (the device opens with O_EXCL), mounts it again with the recorded
 *      source, type, per-mount and superblock options, restores its propagation, and
 *      verifies that the mount is back as it was;
 *   5. when that mount fails, writes the old flag (the file descriptor the daemon opened)
 *      and mounts it again with the old state; when that fails too it reports
 *      REMOUNT_UNMOUNTED and the daemon retries (a job with mount_only set).
 *
 * All libmount calls use mnt_context with helpers (/sbin/mount.TYPE) and canonicalization
 * off: only mount(2)/umount2(2) run, on the exact paths of the mount table. */

#include <stdbool.h>

#include "remount-check.h"

typedef enum RemountOutcome {
        REMOUNT_DONE,      /* mounted again with the new state, as it was */
        REMOUNT_NOTHING,   /* nothing to do: not pending, or not mounted any more */
        REMOUNT_REFUSED,   /* a check said no; nothing was touched */
        REMOUNT_BUSY,      /* the unmount failed; still mounted as before */
        REMOUNT_RESTORED,  /* mounting with the new state failed; mounted again with the old one */
        REMOUNT_UNMOUNTED, /* no mount worked: the filesystem is NOT mounted (the daemon retries) */
        REMOUNT_DIFFERENT, /* mounted again, but not as it was (options, propagation) */
        REMOUNT_FAILED,    /* could not even start (namespace, fork, flag): nothing was touched */
        _REMOUNT_OUTCOME_MAX,
} RemountOutcome;

/* "done", "nothing", "refused", "busy", "restored", "unmounted", "different", "failed". */
const char *remount_outcome_to_string(RemountOutcome o);

typedef struct RemountJob {
        const RemountPlan *plan;
        const char *options;      /* what to mount with: remount_plan_options() */
        int flag_fd;              /* queue/stable_writes of the disk, open read-write */
        int old_flag;             /* the flag that gives the filesystem its old state back */
        bool mount_only;          /* a retry: the filesystem is not mounted; mount with the old state */
        const char *systemd_unit; /* retries of a cycle done by systemd: start this unit */
        unsigned fail_mounts;     /* test hook: the first N mount attempts get an invalid option */
        bool skip_scan;           /* test hook: skip the process scan (umount's EBUSY decides) */
} RemountJob;

/* What the child sends back through a pipe: fixed size, one write. */
typedef struct RemountReport {
        int outcome;             /* RemountOutcome */
        int error;               /* errno of the step that failed, 0 if none */
        int new_id;              /* the mount id of the filesystem mounted again, 0 if none */
        unsigned mount_attempts; /* mount(2) attempts made (the test hook counts them) */
        bool flag_restored;      /* the child wrote old_flag */
        char unit[256];          /* the systemd unit that did the cycle, "" when none */
        char via[256];           /* where it happened: "PID 1's mount namespace", "systemd (x.mount)" */
        char message[1536];      /* what happened, one sentence without the mount's name */
} RemountReport;

/* Runs job j in the calling process, which must be a single-threaded child that may change
 * its mount namespace. Always fills *ret; never returns before it has done all it can to
 * leave the filesystem mounted. */
void remount_job_run(const RemountJob *j, RemountReport *ret);
