/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The unmount + mount cycle itself, run in a child process forked by the daemon (remount-follow.c),
 * so that the daemon's event loop never blocks on an unmount that flushes data. Who unmounts
 * and mounts again:
 *
 *   - systemd, whenever it is on the system bus (remount-systemd.h): it stops the mount unit
 *     and starts it again (or a transient unit with the recorded source, type and options).
 *     The child needs no privilege, stays in the daemon's mount namespace and reads the
 *     system's mount table from /proc/1/mountinfo;
 *   - else the child itself, in the host's mount namespace (its own when the daemon runs
 *     there, else PID 1's, entered with setns(2): CAP_SYS_ADMIN), with umount2(2) and
 *     mount(2) on the pinned mount point (remount-pin.h), never through a path.
 *
 * The cycle, step by step (each check before the first step that touches anything):
 *
 *   1. the checks on the live system: the mount is there; no bind mount, submount, copy in
 *      another mount namespace the unmount would not reach; no process with a file open,
 *      mapped, or its working or root directory on it (/proc/PID/fd, cwd, root, maps: the
 *      report says "busy" and what kind of use, its detail names the process and the path);
 *      systemd: no other unit a stop of the mount unit would stop, no LazyUnmount= or
 *      ForceUnmount=, and a unit file's What= and Options= must be what is mounted
 *      (remount-systemd.h);
 *   2. the mount point pinned (remount-pin.h): every directory above it root's alone;
 *   3. that whoever unmounts can mount again, and that the superblock's end can be seen
 *      (its /sys/fs/TYPE/NAME directory for ext4, xfs, f2fs, else an O_EXCL open of the
 *      device: a device the service may not open (DevicePolicy=) refuses the cycle here);
 *   4. syncfs(2), so that the unmount has little left to write; a stop of the daemon
 *      (SIGTERM) before this point aborts the cycle; from the next step on, the cycle is
 *      carried to its end whatever signal but SIGKILL comes;
 *   5. the journal (remount-journal.h) says "unmounting"; unmount (EBUSY is the final word
 *      on being idle; a stop job of systemd's that does not end in time is cancelled, and
 *      while its umount may still be at work the journal stays); the superblock must be gone
 *      (another holder would hand the old one, with its old state, to the new mount);
 *   6. the pinned place checked again: still the same directory at the same path, nothing
 *      mounted on it; else nothing is mounted (REMOUNT_UNMOUNTED, no retry); the disk and the
 *      filesystem still the journal's (its diskseq through the pinned sysfs directory, the
 *      filesystem UUID in the udev database): else nothing is mounted (REMOUNT_UNMOUNTED,
 *      RemountReport.stale);
 *   7. the flag written through flag.h (only to the journal's disk; a refused write leaves
 *      the flag as it is, and the stage and the report say the state it mounts with); mount
 *      with the new state; verify it is back as it was, on the same parent mount; the
 *      journal says "mounted";
 *   8. when that mount fails: the old flag written back, the journal says "mounting-old",
 *      and it is mounted with the old state (the journal then says "mounted-old", so that a
 *      replay knows which state it runs with); when the interlock refuses the old flag (it
 *      would turn stable writes off on a disk that needs them: the flag never makes a mount
 *      fail, so this fallback buys nothing there), the mount with the new state is tried
 *      once more instead. When the last attempt fails too, REMOUNT_UNMOUNTED and the daemon
 *      retries from the journal.
 *
 * A replay (RemountJob.replay) mounts a filesystem back as its journal says: the retries of
 * a filesystem left unmounted, and a cycle found in the journal at start or whose process
 * died. It first checks that the disk and the filesystem are the journal's (step 6: else it
 * is refused, stale; a journal of an earlier version, which does not say, is refused too
 * when it would mount). It waits for systemd's job on the unit to end, then: the filesystem
 * is mounted again (by the interrupted cycle: done, with the state of the journal's stage),
 * still mounted (the cycle never unmounted it), or not mounted: then steps 6-8.
 *
 * Test hooks (remount.h): the first N mount attempts get an invalid option (the daemon's
 * own mounts and transient units; a unit file's options cannot be changed); the process
 * scan skipped; a pause at each step ("before-umount", "after-umount", "before-mount-old"
 * when the mount with the new state failed, "after-mount"): the child writes "STEP PID" to
 * the FIFO PAUSE and waits until a line is written to PAUSE.go (or SIGTERM), when a reader
 * has PAUSE open (else it does not pause). */

#include <stdbool.h>

#include "flag.h"
#include "remount-journal.h"

typedef enum RemountOutcome {
        REMOUNT_DONE,      /* mounted again with the new state, as it was */
        REMOUNT_NOTHING,   /* nothing to do: not pending, or not mounted any more */
        REMOUNT_REFUSED,   /* a check said no; nothing was touched */
        REMOUNT_BUSY,      /* the unmount failed; still mounted as before */
        REMOUNT_RESTORED,  /* mounting with the new state failed; mounted again with the old one */
        REMOUNT_UNMOUNTED, /* no mount worked: the filesystem is NOT mounted (the daemon retries) */
        REMOUNT_DIFFERENT, /* mounted again, but not as it was (options, propagation, place) */
        REMOUNT_FAILED,    /* could not even start (namespace, fork, flag): nothing was touched */
        _REMOUNT_OUTCOME_MAX,
} RemountOutcome;

/* "done", "nothing", "refused", "busy", "restored", "unmounted", "different", "failed". */
const char *remount_outcome_to_string(RemountOutcome o);

typedef struct RemountJob {
        RemountJournal *journal;  /* the cycle, as saved by the daemon; the child updates it */
        const char *journal_path; /* where it is saved */
        const char *options;      /* what to mount with: remount_plan_options() */
        int disk_fd;              /* the sysfs directory of the disk that has the journal's name
                                   * (flag_pin_disk()); -EBADF: none */
        Need need;                /* its need, and whether an off was forced (flag.h) */
        bool force;
        const char *runtime_dir;   /* the flag's history (history.h) */
        const char *udev_data_dir; /* the udev database: the filesystem's UUID */
        flag_need_t need_of;       /* derives the need again before an off (flag.h) */
        void *need_userdata;
        bool replay;               /* mount it back as the journal says */
        uint64_t job_timeout_usec; /* how long a job of systemd's may take */
        unsigned fail_mounts;      /* test hook: the first N mount attempts get an invalid option */
        bool skip_scan;            /* test hook: skip the process scan (umount's EBUSY decides) */
        const char *pause_fifo;    /* test hook: pause at each step */
} RemountJob;

/* What the child sends back through a pipe: fixed size, one write. */
typedef struct RemountReport {
        int outcome;             /* RemountOutcome */
        int error;               /* errno of the step that failed, 0 if none */
        int new_id;              /* the mount id of the filesystem mounted again, 0 if none */
        unsigned mount_attempts; /* mount attempts made (the test hook counts them) */
        int flag_written;        /* the flag the child wrote, -1 if none */
        int effective;           /* the state the filesystem mounted now runs with, -1: not known */
        int stage;               /* the journal's stage at the end (RemountStage) */
        bool give_up;            /* REMOUNT_UNMOUNTED: retrying cannot help (the place changed) */
        bool stale;              /* REMOUNT_UNMOUNTED: the disk or filesystem behind the journal's
                                  * name is another one now (or cannot be told): not mounted back */
        bool mounted;            /* this process had it mounted (not a replay that found it mounted) */
        char unit[256];          /* the systemd unit that did the cycle, "" when none */
        char via[256];           /* where it happened: "PID 1's mount namespace", "systemd (x.mount)" */
        char message[1536];      /* what happened, one sentence without the mount's name, for everyone:
                                  * no path or process name of another user's */
        char detail[1024];       /* the same with such names (the process that keeps it busy), for
                                  * the daemon's log and the requester; "" when message says it all */
} RemountReport;

/* Runs job j in the calling process, which must be a single-threaded child. Always fills
 * *ret; never returns before it has done all it can to leave the filesystem mounted. */
void remount_job_run(const RemountJob *j, RemountReport *ret);
