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
 * device under it. Then the flag is applied (engine_apply: normally already done by the
 * reconcile), the disk is held (the Manager writes no flag to it until the cycle is over),
 * and a child process does the rest (remount-cycle.c: the host's mount namespace or
 * systemd, the live checks, umount, mount, verify, fallback to the old state).
 *
 * When the child reports, the mount table is re-read and the new mount must show the new
 * effective state (recorded as observed at mount). A refused or busy filesystem stays
 * pending, its reason saying why it was not cycled; with remount-idle it is checked again
 * after REMOUNT_RECHECK_USEC (or when it is mounted anew). A failed cycle (mounted again
 * with the old state, or different options) is not retried automatically. A filesystem
 * left unmounted is mounted again with the old state by retries with exponential backoff
 * (REMOUNT_RETRY_MIN_USEC .. REMOUNT_RETRY_MAX_USEC) until it is back; meanwhile its disk
 * stays held and no other cycle starts.
 *
 * Every cycle and every refusal is logged with its duration and outcome and reported as a
 * MANAGER_REMOUNT_FINISHED event (the RemountFinished D-Bus signal), and to the requester.
 *
 * Test hooks (environment of the daemon, documented as test-only in stablepagesd(8)):
 * STABLEPAGES_TEST_REMOUNT_FAIL=mount[:N] makes the first N (default 1) mount attempts use
 * an invalid option; =scan skips the process scan so that the unmount's EBUSY decides; both
 * can be given, separated by a comma. */

#include <stdint.h>

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

/* Creates the Remounter of m (reads the test hooks). Returns 0 and *ret, or -errno. */
int remount_new(Manager *m, Remounter **ret);

/* Frees r; waits for a cycle in progress to finish first (the filesystem must be mounted
 * again), and logs at error level a filesystem that is still left unmounted. Requesters are
 * not called back. Returns NULL. */
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

/* Sets the reason of each pending mount a cycle refused or failed to say why; called after
 * mount_tracker_update_pending(). */
void remount_annotate(Remounter *r);
