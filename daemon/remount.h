/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Applying a decision to a mounted filesystem: the safe unmount + mount cycle.
 *
 * A mounted filesystem keeps the stable-writes state it captured at mount; only a full
 * unmount and mount gives it the disk's current one. The Remounter runs such cycles, one at
 * a time, for its host (the Manager): on request (Apply with the remount flag, allowed
 * whatever ApplyMounted= says: the administrator asked) and, with ApplyMounted=remount-idle,
 * by itself after each reconcile for every pending filesystem. It knows the daemon through
 * RemountHost alone: it reads the engine's paths and configuration and the tracked mounts,
 * and changes nothing of the daemon's but through the host's functions.
 *
 * For each filesystem, in the daemon (nothing touched yet): never "/", "/usr", "/boot" or a
 * NeverRemount= path; not pending: nothing to do; the disk must be managed; then on the
 * system's mount table (remount-check.c) no other mount of the superblock and nothing
 * mounted on or below it, no swap file or loop backing file on it, no autoclear loop
 * device under it, no journal of an earlier cycle of it, no filesystem of its disk left
 * unmounted. Then the flag is applied (engine_apply: normally already done by the
 * reconcile), the disk is held (the Manager writes no flag to it until the cycle is over),
 * the cycle is written to the journal (remount-journal.h) and a child process does the rest
 * (remount-cycle.h: through systemd or by itself, the live checks, unmount, mount, verify,
 * fallback to the old state).
 *
 * When the child reports, the host refreshes its mounts and the new mount must show the new
 * effective state. A refused or busy filesystem stays pending, its reason saying why it was
 * not cycled; with remount-idle it is checked again after REMOUNT_RECHECK_USEC (or when it
 * is mounted anew). A failed cycle (mounted again with the old state, or different options)
 * is not retried automatically. A filesystem left unmounted is mounted again from its
 * journal (a replay) with exponential backoff (REMOUNT_RETRY_MIN_USEC ..
 * REMOUNT_RETRY_MAX_USEC) until it is back, unless its place changed (then it is only
 * reported); meanwhile its disk stays held and no cycle of another filesystem of that disk
 * starts. A cycle whose process died is replayed at once; the journals found at start are
 * replayed first thing. Whatever is left unmounted is listed by remount_foreach_unmounted()
 * (the Unmounted property, status) until it is mounted again, by a replay or by anyone.
 *
 * A replay whose disk or filesystem is not the journal's any more (another disk took the
 * name: its diskseq, or the filesystem's UUID, differ; or a journal of an earlier version,
 * which does not say, would mount) is refused at error level, naming what differs and what it
 * takes to mount it by hand; its journal is moved to RUNTIME_DIR/cycles-refused/ for the
 * administrator, and the name is released (the host may write that disk's flag again).
 *
 * What is published (RemountFinished, the reasons of pending mounts) never names another
 * user's process or file: a busy filesystem is "busy" and the kind of use; the daemon's log
 * and the requester's own results (RemountResult.detail) name them.
 *
 * A stop (remount_free()) sends SIGTERM to a cycle in progress: before its unmount it gives
 * up, after it the cycle goes on to its end, and the daemon waits for it.
 *
 * Every cycle and every refusal is logged with its duration and outcome and reported as a
 * MANAGER_REMOUNT_FINISHED event (the RemountFinished D-Bus signal), and to the requester.
 *
 * Test hooks (environment of the daemon, documented as test-only in stablepagesd(8)):
 * STABLEPAGES_TEST_REMOUNT_FAIL=mount[:N] makes the first N (default 1) mount attempts use
 * an invalid option; =scan skips the process scan so that the unmount's EBUSY decides;
 * =timeout:S lets systemd's jobs take S seconds instead of minutes; any of them can be
 * given, separated by commas. STABLEPAGES_TEST_REMOUNT_PAUSE=FIFO makes each cycle pause at
 * its steps (remount-cycle.h). */

#include <stdint.h>
#include <systemd/sd-event.h>

#include "engine.h"
#include "json.h"
#include "mounts.h"
#include "remount-cycle.h"

typedef struct Remounter Remounter;
typedef struct RemountResult RemountResult;

#define REMOUNT_RECHECK_USEC (60 * USEC_PER_SEC)
#define REMOUNT_RETRY_MIN_USEC (1 * USEC_PER_SEC)
#define REMOUNT_RETRY_MAX_USEC (60 * USEC_PER_SEC)

/* The outcome of one filesystem's cycle (or of the checks that refused it). */
struct RemountResult {
        char *target; /* the mount point */
        char *disk;   /* the disk it is on */
        RemountOutcome outcome;
        bool ok; /* done, or nothing to do */
        uint64_t duration_usec;
        char *message; /* one sentence naming the mount point, the outcome and the reason, for
                        * everyone: no other user's process or path */
        char *detail;  /* the same naming them (which process keeps it busy), for the requester;
                        * NULL when message says it all */
};

/* A disk as the host resolved it: what the Remounter needs of its decision. */
typedef struct RemountDisk {
        const char *name; /* kernel name of the disk (not a partition) */
        uint64_t diskseq; /* 0: the kernel gives none */
        Need need;        /* and whether an off of it was forced */
        bool forced;
        bool managed;       /* the daemon writes its flag (a managed disk with a decision) */
        int flag;           /* queue/stable_writes now, -1 when unknown */
        const char *reason; /* its decision's reason (why it is left alone) */
} RemountDisk;

/* The daemon, as the Remounter sees it: what it reads, and the only ways it changes anything of
 * the daemon's. Every function is called from the event loop. */
typedef struct RemountHost {
        sd_event *event;
        const Engine *engine;       /* sysfs root, runtime dir, udev database, NeverRemount= */
        const MountTracker *mounts; /* the tracked mounts, and the mount table they come from */
        void *userdata;
        /* The disk name is (or is a partition of) now: 0 with *ret (valid until the host
         * changes anything), or -ENODEV. */
        int (*find_disk)(void *userdata, const char *name, RemountDisk *ret);
        /* Applies the decision of disk now, which rescans: 0, -EPERM (the interlock refused;
         * the flag stays), or -errno, with a sentence in *ret_message. */
        int (*apply)(void *userdata, const char *disk, char **ret_message);
        /* A cycle or replay mounted target anew as mount new_id (the mount old_id there is
         * gone): the host refreshes its mounts and takes effective (0, 1; -1: not known, to be
         * observed) as the new mount's state. */
        void (*mounted)(void *userdata, int old_id, int new_id, const char *target, int effective);
        /* The cycle's process wrote flag to disk: not somebody else's change. */
        void (*flag_written)(void *userdata, const char *disk, int flag);
        /* A cycle ended, or was refused (the host's MANAGER_REMOUNT_FINISHED). */
        void (*finished)(void *userdata, const RemountResult *result);
        /* Re-read, apply and publish everything: a cycle is over. */
        void (*reconcile)(void *userdata);
} RemountHost;

/* Called once, from the event loop, with the results of a remount_request(). */
typedef void (*remount_done_t)(const RemountResult *results, size_t n, void *userdata);

/* Creates the Remounter of host (copied; host->engine and host->mounts must outlive it): reads
 * the test hooks and the journals of cycles an earlier run left in flight, whose replays run
 * first. Returns 0 and *ret, or -errno. */
int remount_new(const RemountHost *host, Remounter **ret);

/* Frees r; a cycle in progress is told to stop (SIGTERM: it gives up before its unmount, or
 * goes on to its end) and waited for, and a filesystem still left unmounted is logged at
 * error level (its journal stays, for the next start). Requesters are called back with the
 * results so far. Returns NULL. */
Remounter *remount_free(Remounter *r);

/* Queues one cycle for each tracked filesystem on disk (as the host resolved it), all of them:
 * those that are not pending are reported as "nothing to do", protected ones as refused.
 * done is called once, from the event loop, with one result per filesystem (possibly none).
 * Returns 0 or -ENOMEM. */
int remount_request(Remounter *r, const RemountDisk *disk, remount_done_t done, void *userdata);

/* ApplyMounted=remount-idle: queues a cycle for every pending filesystem on a managed disk
 * that is not held off (refused or busy less than REMOUNT_RECHECK_USEC ago, or failed). */
void remount_auto(Remounter *r);

/* True while a cycle owns disk: the Manager must not write its flag. */
bool remount_holds(const Remounter *r, const char *disk);

/* Sets the reason of each pending mount of t (the host's, handed in for this) that a cycle
 * refused or failed to say why, and forgets the filesystems left unmounted that someone
 * mounted again; called after mount_tracker_update_pending(). The reasons stay valid until
 * the next call (or remount_free()). */
void remount_annotate(Remounter *r, MountTracker *t);

/* Calls f for each filesystem a cycle left unmounted: its mount point, disk, and why (with
 * whether it is being retried). */
typedef void (*remount_unmounted_f)(const char *target, const char *disk, const char *reason, bool retrying,
                                    void *userdata);
void remount_foreach_unmounted(const Remounter *r, remount_unmounted_f f, void *userdata);

/* Writes the filesystems left unmounted as a JSON array of objects (target, disk, reason,
 * retrying, journal). */
void remount_unmounted_json(const Remounter *r, JsonWriter *w);
