/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cycle's child: the entry (remount_job_run()) and a cycle in the order of its steps. */
#include "remount-cycle-internal.h"
#include "util.h"

static const char *const remount_outcome_table[_REMOUNT_OUTCOME_MAX] = {
        [REMOUNT_DONE] = "done",           [REMOUNT_NOTHING] = "nothing",
        [REMOUNT_REFUSED] = "refused",     [REMOUNT_BUSY] = "busy",
        [REMOUNT_RESTORED] = "restored",   [REMOUNT_UNMOUNTED] = "unmounted",
        [REMOUNT_DIFFERENT] = "different", [REMOUNT_FAILED] = "failed",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(remount_outcome, RemountOutcome);

/* Steps 2 and 3 of a cycle: the mount point pinned below the system's parent mount, nothing
 * a stop of the unit would take down, a superblock whose end can be seen. Returns 0, or 1
 * when reported. */
static int cycle_prepare(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountPlan *p = c->plan;
        _cleanup_free_ char *reason = NULL;
        int r;

        /* 2. The mount point pinned; the parent we see must be the system's. */
        r = remount_pin_target(p->target, &c->pin, &reason);
        if (r != 0) {
                cycle_report_check(rep, r, reason);
                return 1;
        }
        _cleanup_(remount_table_unrefp) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        struct libmnt_fs *parent = t ? remount_table_find(t, p->parent_id, 0, NULL) : NULL;
        if (!parent || mnt_fs_get_devno(parent) != c->pin.parent_dev) {
                cycle_report(rep, REMOUNT_REFUSED, 0,
                             "the directory the daemon finds above %s is not on the filesystem the "
                             "system mounted there (mount %d)",
                             p->target, p->parent_id);
                return 1;
        }
        c->journal->parent_dev = c->pin.parent_dev;
        c->journal->parent_ino = c->pin.parent_ino;

        /* Whatever a stop of the unit would take down with it. */
        if (c->bus) {
                r = remount_systemd_check_stop(c->bus, c->journal->unit, &reason, &c->targets);
                if (r != 0) {
                        cycle_report_check(rep, r, reason);
                        return 1;
                }
        }

        /* 3. The superblock's end can be seen; we can mount it again ourselves. */
        r = cycle_superblock_setup(c, &reason);
        if (r == 0 && !c->bus)
                r = cycle_check_mountable(c, &reason);
        if (r != 0) {
                cycle_report_check(rep, r, reason);
                return 1;
        }
        return 0;
}

/* Step 5 of a cycle: unmount, then mount again whatever happened, saying how it came back. */
static void cycle_unmount_mount(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountPlan *p = c->plan;
        _cleanup_free_ char *why = NULL;
        int r;

        r = cycle_save_stage(c, REMOUNT_STAGE_UNMOUNTING);
        if (r < 0) {
                cycle_report(rep, REMOUNT_FAILED, -r, "cannot write the journal %s: %s",
                             c->job->journal_path, strerror(-r));
                return;
        }
        r = cycle_unmount(c, &why);
        if (r == -EINPROGRESS) {
                /* The journal says "unmounting": the replays wait for systemd and act on what it did. */
                cycle_report(rep, REMOUNT_UNMOUNTED, ETIMEDOUT,
                             "systemd's unmount of %s is still at work (%s): mounting it back once it ends",
                             c->journal->unit, why ?: "its job did not end in time");
                return;
        }
        if (r < 0 && remount_mountinfo_has(c->mountinfo, p->id, p->devnum, p->target)) {
                (void) cycle_save_stage(c, REMOUNT_STAGE_PREPARED); /* nothing was touched */
                if (c->bus)
                        cycle_restart_targets(c);
                cycle_report(rep, REMOUNT_BUSY, -r, "%s: %s%s",
                             c->bus ? "systemd could not unmount it" : "the unmount failed",
                             why ?: strerror(-r),
                             c->uninspectable > 0 ? " (some processes could not be inspected)" : "");
                return;
        }
        r = cycle_superblock_gone(c);
        cycle_pause_at(c, "after-umount");
        if (r <= 0) {
                _cleanup_free_ char *before =
                        r == 0 ? strdup("the superblock outlived the unmount (something else holds the "
                                        "device)")
                               : strdup_printf("cannot tell whether its superblock went away (%s)",
                                               strerror(-r));
                cycle_mount_back(c, before ?: "out of memory");
                if (rep->outcome == REMOUNT_DONE || rep->outcome == REMOUNT_RESTORED) {
                        /* Mounted again, but with the superblock (and state) it had, or unknown. */
                        rep->outcome = REMOUNT_DIFFERENT;
                        rep->effective = c->journal->old_flag;
                }
        } else
                cycle_mount_back(c, NULL);
        if (c->bus)
                cycle_restart_targets(c);
        cycle_pause_at(c, "after-mount");
}

static void cycle(Cycle *c) {
        if (cycle_choose_way(c, false) < 0 || cycle_check_idle(c) != 0 || cycle_prepare(c) != 0)
                return;

        /* 4. Last moment to abandon it. */
        cycle_sync_target(c);
        cycle_pause_at(c, "before-umount");
        if (cycle_stop_requested) {
                cycle_report(c->rep, REMOUNT_REFUSED, EINTR, "the daemon is stopping");
                return;
        }
        cycle_block_stop_signals();

        /* 5. Unmount and mount again. */
        cycle_unmount_mount(c);
}

void remount_job_run(const RemountJob *j, RemountReport *rep) {
        _cleanup_close_ int lock = -EBADF;
        Cycle c = {
                .job = j,
                .journal = j->journal,
                .plan = &j->journal->plan,
                .rep = rep,
                .pin = REMOUNT_PIN_NULL,
        };

        *rep = (RemountReport){
                .outcome = REMOUNT_FAILED, .flag_written = -1, .effective = -1, .stage = j->journal->stage
        };
        cycle_setup_signals();
        /* One process at a time per mount point: a cycle of a killed daemon may still run. */
        lock = remount_journal_lock(j->journal_path);
        if (lock < 0) {
                if (lock == -EWOULDBLOCK)
                        cycle_report(rep, j->replay ? REMOUNT_UNMOUNTED : REMOUNT_FAILED, EWOULDBLOCK,
                                     "another process (a cycle of an earlier daemon) is at work on it");
                else
                        cycle_report(rep, j->replay ? REMOUNT_UNMOUNTED : REMOUNT_FAILED, -lock,
                                     "cannot lock its journal: %s", strerror(-lock));
                return;
        }
        if (j->replay) {
                cycle_block_stop_signals(); /* a replay always goes to its end */
                cycle_replay(&c);
        } else
                cycle(&c);
        remount_pin_done(&c.pin);
        strv_free(c.targets);
        sd_bus_flush_close_unref(c.bus);
}
