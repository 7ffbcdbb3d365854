/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A replay: a filesystem mounted back as its journal says (remount-cycle.h), after an
 * interrupted cycle or while it is left unmounted. */
#include <sys/stat.h>

#include "remount-cycle-internal.h"
#include "util.h"

/* The replay of a journal at stage prepared: nothing was touched, so only the system's table
 * is read, from wherever we are. */
static void replay_prepared(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountPlan *p = c->plan;

        c->mountinfo = "/proc/1/mountinfo";
        _cleanup_(remount_table_unrefp) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        struct libmnt_fs *fs = t ? remount_table_top(t, p->target) : NULL;
        if (fs && remount_is_ours(p, fs)) {
                rep->new_id = mnt_fs_get_id(fs);
                rep->effective = c->journal->old_flag;
                cycle_report(rep, REMOUNT_FAILED, 0,
                             "the cycle was interrupted (at stage prepared) before the unmount: it is "
                             "mounted as before");
        } else
                cycle_report(rep, REMOUNT_NOTHING, 0,
                             "it is not mounted, but the interrupted cycle had not unmounted it "
                             "(someone else did, or it was never mounted there); not mounting it");
}

/* The replay found fs, the filesystem of the journal, mounted on its mount point: never
 * unmounted by the cycle, or mounted again (by it, or by someone). Says which and with which
 * state. */
static void replay_found_mounted(Cycle *c, struct libmnt_fs *fs) {
        RemountReport *rep = c->rep;
        RemountJournal *j = c->journal;
        struct stat st;
        bool same_sb;

        remount_superblock_dir(c->plan, c->sb_dir, sizeof c->sb_dir);
        if (j->sb_ino != 0 && c->sb_dir[0])
                same_sb = stat(c->sb_dir, &st) >= 0 && (uint64_t) st.st_ino == j->sb_ino;
        else
                same_sb = j->stage <= REMOUNT_STAGE_UNMOUNTING;
        rep->new_id = mnt_fs_get_id(fs);
        rep->effective = same_sb ? j->old_flag : remount_journal_mount_flag(j);
        if (!same_sb && !j->identified) {
                /* An earlier version's journal: whose filesystem this is, it cannot tell. */
                rep->effective = -1;
                cycle_report(
                        rep, REMOUNT_NOTHING, 0,
                        "it is mounted again (the journal, of an earlier version, cannot tell by whom or "
                        "with which state: it is taken from the flag now)");
        } else if (same_sb)
                cycle_report(rep, REMOUNT_FAILED, 0,
                             "the cycle was interrupted (at stage %s) before the unmount: it is mounted "
                             "as before",
                             remount_stage_to_string(j->stage));
        else
                cycle_report(rep, rep->effective == j->new_flag ? REMOUNT_DONE : REMOUNT_RESTORED, 0,
                             "the interrupted cycle (at stage %s) had mounted it again, with the %s state",
                             remount_stage_to_string(j->stage),
                             rep->effective == j->new_flag ? "new" : "old");
}

/* Where the replay mounts it: the journal's directory, at the same path, and (without
 * systemd) a device it may mount. Returns 0, or 1 when reported. */
static int replay_check_target(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountJournal *j = c->journal;
        RemountPlan *p = c->plan;
        _cleanup_free_ char *reason = NULL;
        int r;

        r = remount_pin_target(p->target, &c->pin, &reason);
        if (r == 0 && (c->pin.parent_dev != j->parent_dev || c->pin.parent_ino != j->parent_ino)) {
                r = 1;
                reason = strdup_printf("the path %s leads to another directory than before the unmount (its "
                                       "parent was renamed or replaced)",
                                       p->target);
        }
        if (r != 0) {
                rep->give_up = r > 0;
                cycle_report(rep, REMOUNT_UNMOUNTED, r > 0 ? ENOTDIR : -r, "not mounting it again: %s%s",
                             r > 0 ? reason ?: "out of memory" : strerror(-r),
                             r > 0 ? "; not retrying" : "");
                return 1;
        }
        if (!c->bus) {
                r = cycle_check_mountable(c, &reason);
                if (r != 0) {
                        cycle_report(rep, REMOUNT_UNMOUNTED, r > 0 ? EPERM : -r, "%s",
                                     r > 0 ? reason : strerror(-r));
                        return 1;
                }
        }
        return 0;
}

/* The replay of a journal: the filesystem is mounted back as it says. */
void cycle_replay(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountJournal *j = c->journal;
        RemountPlan *p = c->plan;
        _cleanup_(remount_table_unrefp) struct libmnt_table *t = NULL;
        struct libmnt_fs *fs;
        int r;

        rep->stage = j->stage;
        /* Nothing is said of, mounted from, or written to a disk that took the journal's name
         * meanwhile. (A journal of an earlier version does not say which disk it was: it is
         * refused when it would mount, in cycle_mount_back().) */
        if (j->identified && cycle_check_identity(c) != 0)
                return;
        if (j->stage == REMOUNT_STAGE_PREPARED) {
                replay_prepared(c);
                return;
        }
        if (cycle_choose_way(c, true) < 0) {
                rep->outcome = REMOUNT_UNMOUNTED; /* retried */
                return;
        }
        if (c->bus) {
                /* The interrupted cycle's job (systemd carries it out without us) ends first. */
                r = remount_systemd_wait_idle(c->bus, j->unit, cycle_job_timeout(c));
                if (r < 0) {
                        cycle_report(rep, REMOUNT_UNMOUNTED, -r, "systemd's job for %s did not end: %s",
                                     j->unit, strerror(-r));
                        return;
                }
        }
        t = mnt_new_table_from_file(c->mountinfo);
        if (!t) {
                cycle_report(rep, REMOUNT_UNMOUNTED, errno, "cannot read the host's mount table: %s",
                             strerror(errno));
                return;
        }
        fs = remount_table_top(t, p->target);
        if (fs && remount_is_ours(p, fs)) {
                replay_found_mounted(c, fs);
                return;
        }
        if (fs) {
                rep->give_up = true;
                cycle_report(rep, REMOUNT_UNMOUNTED, EEXIST,
                             "%s from %s is mounted on it now; not mounting it over that",
                             mnt_fs_get_fstype(fs), mnt_fs_get_source(fs) ?: "?");
                return;
        }
        fs = remount_table_find_elsewhere(t, p);
        if (fs) {
                cycle_report(rep, REMOUNT_NOTHING, 0, "it is mounted on %s now, not mounting it again",
                             mnt_fs_get_target(fs));
                return;
        }
        if (replay_check_target(c) == 0)
                cycle_mount_back(c, "it had been left unmounted");
}
