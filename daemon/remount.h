/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Applying a decision to a mounted filesystem: the safe unmount + mount cycle.
 *
 * A mounted filesystem keeps the stable-writes state it captured at mount; only a full
 * unmount and mount gives it the disk's current one. The Remounter runs such cycles, one at
 * a time, for the Manager: on request (Apply with the remount flag, allowed whatever
 * ApplyMounted= says: the administrator asked) and, with ApplyMounted=remount-idle, by
 * itself after each reconcile for every pending filesystem.
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
 * When the child reports, the mount table is re-read and the new mount must show the new
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
 * A stop (remount_free()) sends SIGTERM to a cycle in progress: before its unmount it gives
 * up, after it the cycle goes on to its end, and the daemon waits for it.
 *
 * Every cycle and every refusal is logged with its duration and outcome and reported as a
 * MANAGER_REMOUNT_FINISHED event (the RemountFinished D-Bus signal), and to the requester.
 *
 * Test hooks (environment of the daemon, documented as test-only in stablepagesd(8)):
 * STABLEPAGES_TEST_REMOUNT_FAIL=mount[:N] makes the first N (default 1) mount attempts use
 * an invalid option; =scan skips the process scan so that the unmount's EBUSY decides; both
 * can be given, separated by a comma. STABLEPAGES_TEST_REMOUNT_PAUSE=FIFO makes each cycle
 * pause at its steps (remount-cycle.h). */

#include <stdint.h>

#include "json.h"
#include "manager.h"
#include "remount-cycle.h"

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
        char *message; /* one sentence naming the mount point, the outcome and the reason */
};

/* Creates the Remounter of m: reads the test hooks and the journals of cycles an earlier
 * run left in flight, whose replays run first. Returns 0 and *ret, or -errno. */
int remount_new(Manager *m, Remounter **ret);

/* Frees r; a cycle in progress is told to stop (SIGTERM: it gives up before its unmount, or
 * goes on to its end) and waited for, and a filesystem still left unmounted is logged at
 * error level (its journal stays, for the next start). Requesters are called back with the
 * results so far. Returns NULL. */
Remounter *remount_free(Remounter *r);

/* Queues one cycle for each filesystem on disk (a disk or partition name), all of them:
 * those that are not pending are reported as "nothing to do", protected ones as refused.
 * done is called once, from the event loop, with one result per filesystem (possibly none).
 * Returns 0, -EINVAL/-ENODEV for a bad or unknown name, or -ENOMEM. */
int remount_request(Remounter *r, const char *disk, manager_remount_done_t done, void *userdata);

/* ApplyMounted=remount-idle: queues a cycle for every pending filesystem on a managed disk
 * that is not held off (refused or busy less than REMOUNT_RECHECK_USEC ago, or failed). */
void remount_auto(Remounter *r);

/* True while a cycle owns disk: the Manager must not write its flag. */
bool remount_holds(const Remounter *r, const char *disk);

/* Sets the reason of each pending mount a cycle refused or failed to say why, and forgets
 * the filesystems left unmounted that someone mounted again; called after
 * mount_tracker_update_pending(). */
void remount_annotate(Remounter *r);

/* Calls f for each filesystem a cycle left unmounted: its mount point, disk, and why (with
 * whether it is being retried). */
typedef void (*remount_unmounted_f)(const char *target, const char *disk, const char *reason, bool retrying,
                                    void *userdata);
void remount_foreach_unmounted(const Remounter *r, remount_unmounted_f f, void *userdata);

/* Writes the filesystems left unmounted as a JSON array of objects (target, disk, reason,
 * retrying, journal). */
void remount_unmounted_json(const Remounter *r, JsonWriter *w);
