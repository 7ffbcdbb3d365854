/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Steps 4 to 8: sync, unmount, and mount back onto the pinned place with the flag written
 * (the new state, else the old one), then verify it is back as it was. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "remount-cycle-internal.h"
#include "sysfs.h"
#include "util.h"

/* The test hook's option: no filesystem knows it, so mount(2) fails with EINVAL. */
#define TEST_INVALID_OPTION "stablepages-test-invalid-option"

/* Writes the disk's flag through the project's one writer (flag.h): only on the disk the cycle
 * is for, and an off only where its need allows. Returns 0, -EBADF when the disk could not be
 * pinned, or -errno with a sentence in *ret_reason. */
static int write_flag(Cycle *c, int value, char **ret_reason) {
        const RemountJob *j = c->job;
        FlagWrite w = {
                .disk = c->journal->disk,
                .diskseq = c->journal->diskseq, /* the journal's disk, never another of the name */
                .need = j->need,
                .force = j->force,
                .value = value,
                .writer = j->replay ? "replay" : "cycle",
                .need_of = j->need_of,
                .userdata = j->need_userdata,
        };
        int r;

        *ret_reason = NULL;
        if (j->disk_fd < 0)
                return -EBADF;
        r = flag_write_at(j->disk_fd, j->runtime_dir, &w, NULL, ret_reason);
        if (r >= 0)
                c->rep->flag_written = value;
        return r;
}

/* Step 4: writes the filesystem's dirty data back while nothing is touched yet. */
void cycle_sync_target(Cycle *c) {
        int fd = remount_open_component(c->pin.parent_fd, c->pin.name, O_RDONLY, false);

        if (fd < 0)
                return;
        (void) syncfs(fd);
        close(fd); /* an open file would keep it busy */
}

/* Step 5: systemd stops the unit, or umount2(2) of the pinned mount point's name. Returns 0,
 * -EINPROGRESS when systemd's unmount is still at work (its job did not end in time and was
 * cancelled, its umount did not end either: whether it unmounts is not known yet), or -errno,
 * with what failed in *ret_reason. */
int cycle_unmount(Cycle *c, char **ret_reason) {
        int r;

        *ret_reason = NULL;
        if (c->bus) {
                r = remount_systemd_run_job(c->bus, c->journal->unit, "StopUnit", "fail",
                                            cycle_job_timeout(c), ret_reason);
                /* A failed or cancelled stop may leave a control process (umount) at work: let it
                 * end, else the journal must stay for whatever it does. */
                if (r < 0 &&
                    remount_systemd_wait_idle(c->bus, c->journal->unit, cycle_job_timeout(c)) == -ETIMEDOUT)
                        return -EINPROGRESS;
                return r;
        }
        /* Relative to the pinned parent; no MNT_FORCE, no MNT_DETACH. */
        if (fchdir(c->pin.parent_fd) < 0)
                return -errno;
        r = umount2(c->pin.name, UMOUNT_NOFOLLOW) < 0 ? -errno : 0;
        (void) chdir("/");
        return r;
}

/* One mount attempt, with the flag already written: systemd starts the unit (or a transient
 * one), or mount(2) on mp_fd, the pinned mount point. Returns 0 or -errno with *ret_reason. */
static int mount_once(Cycle *c, int mp_fd, char **ret_reason) {
        const RemountJob *j = c->job;
        const RemountPlan *p = c->plan;
        _cleanup_free_ char *options = NULL, *user = NULL, *vfs = NULL, *fs = NULL;
        char source[PATH_MAX], target[64];
        unsigned long flags = 0;
        int r;

        *ret_reason = NULL;
        /* A unit file's options are its own: the test hook cannot reach them. */
        if (!c->bus || !c->journal->unit_file)
                c->rep->mount_attempts++;
        options = (!c->bus || !c->journal->unit_file) && c->rep->mount_attempts <= j->fail_mounts
                          ? strdup_printf("%s,%s", j->options, TEST_INVALID_OPTION)
                          : strdup(j->options);
        if (!options)
                return -ENOMEM;
        remount_source_path(p, source, sizeof source);
        if (c->bus) {
                if (c->journal->unit_file)
                        return remount_systemd_run_job(c->bus, c->journal->unit, "StartUnit", "replace",
                                                       cycle_job_timeout(c), ret_reason);
                r = remount_systemd_start_transient(c->bus, c->journal->unit, source, p->fstype, options,
                                                    cycle_job_timeout(c), ret_reason);
                if (r < 0) /* a failed transient unit stays loaded and would refuse the next one */
                        (void) remount_systemd_reset_failed(c->bus, c->journal->unit);
                return r;
        }
        /* Per-mount flags for mount(2), the filesystem's own options as its data. */
        if (mnt_split_optstr(options, &user, &vfs, &fs, 0, 0) < 0 ||
            mnt_optstr_get_flags(vfs, &flags, mnt_get_builtin_optmap(MNT_LINUX_MAP)) < 0)
                return -EINVAL;
        snprintf(target, sizeof target, "/proc/self/fd/%d", mp_fd);
        if (mount(source, target, p->fstype, flags, fs) < 0) {
                r = -errno;
                *ret_reason = strdup(strerror(-r));
                return r;
        }
        return 0;
}

/* Makes the new mount's propagation what it was (in the host's namespace only: systemd's
 * mounts get what their parent gives), then checks the mount is back as it was, on the same
 * parent mount. Returns 0 (same), 1 (different: the difference in diff), or -errno (not
 * mounted there). */
static int verify_mount(Cycle *c, int *ret_id, char *diff, size_t size) {
        const RemountPlan *p = c->plan;
        _cleanup_(remount_table_unrefp) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        struct libmnt_fs *fs;
        unsigned long steps[3];

        diff[0] = '\0';
        *ret_id = 0;
        if (!t)
                return -errno;
        fs = remount_table_top(t, p->target);
        if (!fs || !remount_is_ours(p, fs)) {
                /* Never through a symbolic link, but say so loudly if it happened. */
                struct libmnt_fs *other = remount_table_find_elsewhere(t, p);
                if (!other)
                        return -ENOENT;
                *ret_id = mnt_fs_get_id(other);
                snprintf(diff, size, "IT WAS MOUNTED ON %s, not on %s", mnt_fs_get_target(other), p->target);
                return 1;
        }
        *ret_id = mnt_fs_get_id(fs);
        if (mnt_fs_get_parent_id(fs) != p->parent_id) {
                snprintf(diff, size,
                         "it was mounted on top of another mount of %s (mount %d), not on mount %d",
                         p->target, mnt_fs_get_parent_id(fs), p->parent_id);
                return 1;
        }

        unsigned long now = remount_propagation_from_fields(mnt_fs_get_optional_fields(fs));
        size_t n = c->in_host && !c->bus ? remount_propagation_steps(p->propagation, now, steps) : 0;
        if (n > 0) {
                _cleanup_close_ int fd =
                        remount_open_component(c->pin.parent_fd, c->pin.name, O_PATH, false);
                char path[64];
                snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
                for (size_t i = 0; i < n; i++)
                        if (fd < 0 || mount(NULL, path, NULL, steps[i], NULL) < 0) {
                                snprintf(diff, size, "its propagation could not be restored: %s",
                                         strerror(errno));
                                return 1;
                        }
                mnt_unref_table(t);
                t = mnt_new_table_from_file(c->mountinfo);
                if (!t || !(fs = remount_table_top(t, p->target)))
                        return -ENOENT;
        }

        const char *vfs = mnt_fs_get_vfs_options(fs) ?: "", *fso = mnt_fs_get_fs_options(fs) ?: "";
        if (!remount_options_equal(vfs, p->vfs_options))
                snprintf(diff, size, "its mount options are %s, they were %s", vfs, p->vfs_options);
        else if (!remount_options_equal(fso, p->fs_options))
                snprintf(diff, size, "its filesystem options are %s, they were %s", fso, p->fs_options);
        else if (!streq(mnt_fs_get_root(fs) ?: "", p->root))
                snprintf(diff, size, "it shows directory %s of the filesystem, it showed %s",
                         mnt_fs_get_root(fs), p->root);
        return diff[0] ? 1 : 0;
}

/* Whether our filesystem is what is mounted on the target now (someone mounted it); sets
 * the report's new mount id. */
static bool mounted_again(Cycle *c) {
        _cleanup_(remount_table_unrefp) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        struct libmnt_fs *fs = t ? remount_table_top(t, c->plan->target) : NULL;

        if (!fs || !remount_is_ours(c->plan, fs))
                return false;
        c->rep->new_id = mnt_fs_get_id(fs);
        return true;
}

/* "a; b; c" of the parts that are not NULL or empty. */
static char *join3(const char *a, const char *b, const char *c) {
        const char *parts[] = { a, b, c };
        char *buf = NULL;
        size_t size = 0;
        bool first = true;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                if (!isempty(parts[i])) {
                        fprintf(f, "%s%s", first ? "" : "; ", parts[i]);
                        first = false;
                }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* The disk or the filesystem is not the journal's (or cannot be told): nothing is mounted. */
static int report_stale(RemountReport *rep, const char *format, ...) _printf_(2, 3);
static int report_stale(RemountReport *rep, const char *format, ...) {
        _cleanup_free_ char *what = NULL;
        va_list ap;

        va_start(ap, format);
        if (vasprintf(&what, format, ap) < 0)
                what = NULL;
        va_end(ap);
        rep->stale = rep->give_up = true;
        cycle_report(rep, REMOUNT_UNMOUNTED, ESTALE, "not mounting it back: %s", what ?: "out of memory");
        return 1;
}

/* Step 6's identity: the disk that has the journal's name now must be the journal's (its
 * diskseq, read through the sysfs directory the daemon pinned for this process), and so must
 * the filesystem on the device it mounted (its UUID in the udev database). Returns 0, or 1 with
 * the report filled: stale when either is another one, or when the journal does not say (an
 * earlier version's); else retried (the UUID cannot be read yet: udev has not seen the device). */
int cycle_check_identity(Cycle *c) {
        const RemountJournal *j = c->journal;
        const RemountPlan *p = c->plan;
        _cleanup_free_ char *seq = NULL, *uuid = NULL;
        long long now;
        int r;

        if (!j->identified)
                return report_stale(
                        c->rep,
                        "its journal was written by an earlier version of stablepages, which did "
                        "not record which disk and filesystem it was (no diskseq, no filesystem "
                        "UUID), and %s may be another disk now",
                        j->disk);
        if (c->job->disk_fd < 0)
                return report_stale(c->rep, "the disk %s is not there any more", j->disk);
        if (j->diskseq != 0) {
                r = sysfs_read_string_at(c->job->disk_fd, "diskseq", &seq);
                if (r == -ENOMEM)
                        return cycle_report(c->rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory"), 1;
                if (r < 0)
                        return report_stale(c->rep, "the disk %s (diskseq %" PRIu64 ") was removed", j->disk,
                                            j->diskseq);
                if (parse_int_range(seq, 0, INT64_MAX, &now) < 0 || (uint64_t) now != j->diskseq)
                        return report_stale(
                                c->rep,
                                "%s is another disk now (diskseq %s; the journal's was diskseq %" PRIu64 ")",
                                j->disk, seq, j->diskseq);
        }
        if (j->fs_uuid) {
                r = remount_fs_uuid(c->job->udev_data_dir, p->source_devnum, &uuid);
                if (r < 0)
                        return cycle_report(c->rep, REMOUNT_UNMOUNTED, -r, "%s", strerror(-r)), 1;
                if (r == 0)
                        return cycle_report(c->rep, REMOUNT_UNMOUNTED, ENODATA,
                                            "the udev database has no filesystem UUID for %s now: not "
                                            "mounting it before it can be told from another filesystem",
                                            p->source),
                               1;
                if (!streq(uuid, j->fs_uuid))
                        return report_stale(
                                c->rep,
                                "the filesystem on %s is another one now (UUID %s; the journal's was "
                                "UUID %s)",
                                p->source, uuid, j->fs_uuid);
        }
        return 0;
}

/* Writes want (the flag of the state to mount with) through flag.h. Returns the flag the disk
 * has now in *ret_flag: want, or the flag as it stays when the write was refused (the
 * interlock) or failed (the sentence in *ret_kept). Returns 0, or 1 with the report filled
 * (the disk is another one: stale). */
static int set_mount_flag(Cycle *c, int want, int *ret_flag, char **ret_kept) {
        _cleanup_free_ char *why = NULL;
        int r = write_flag(c, want, &why);

        *ret_flag = want;
        if (r == -ESTALE || r == -ENODEV)
                return report_stale(c->rep, "%s", why ?: strerror(-r));
        if (r < 0 && r != -EBADF) {
                /* Refused by the interlock, or the write failed: the flag was not want
                 * (flag_write_at() returns 0 when it is) and stays as it is. The flag never makes
                 * a mount fail: mount it with that rather than leave it unmounted. */
                *ret_flag = !want;
                *ret_kept =
                        strdup_printf("stable writes stay %s: %s", want ? "off" : "on", why ?: strerror(-r));
                return *ret_kept ? 0 : (cycle_report(c->rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory"), 1);
        }
        return 0;
}

/* Step 6's place: the pinned mount point must still be free and the same (without systemd, an
 * O_PATH descriptor of it in *ret_mp_fd). Returns 0, or 1 with the report filled: mounted again
 * by someone else meanwhile, or a changed path or something mounted on it (not retried). so_far
 * (what happened before) starts the report's message. */
static int check_place(Cycle *c, const char *so_far, int *ret_mp_fd) {
        RemountReport *rep = c->rep;
        _cleanup_free_ char *reason = NULL;
        bool changed;
        int r;

        r = remount_pin_check_free(&c->pin, c->plan->target, c->bus ? NULL : ret_mp_fd, &changed, &reason);
        if (r < 0) {
                cycle_report(rep, REMOUNT_UNMOUNTED, -r, "%s%scannot check its mount point: %s", so_far,
                             *so_far ? "; " : "", strerror(-r));
                return 1;
        }
        if (r > 0 && !changed && mounted_again(c)) {
                cycle_report(rep, REMOUNT_DIFFERENT, 0, "%s%sit was mounted again by someone else meanwhile",
                             so_far, *so_far ? "; " : "");
                return 1;
        }
        if (r > 0) {
                /* Nothing is mounted through a changed path, nothing on top of another mount. */
                rep->give_up = true;
                cycle_report(rep, REMOUNT_UNMOUNTED, changed ? ENOTDIR : EEXIST,
                             "%s%snot mounting it again: %s; not retrying", so_far, *so_far ? "; " : "",
                             reason);
                return 1;
        }
        return 0;
}

/* Step 7: one mount with the disk's flag at flag, the state the stage says (the old one when
 * with_old), then verified; the stage saved before and after. Returns 0 with the report filled
 * (mounted: done, restored, or different), or -errno with what failed in *ret_reason. */
static int mount_with(Cycle *c, int mp_fd, int flag, bool with_old, const char *so_far, char **ret_reason) {
        RemountReport *rep = c->rep;
        char diff[512];
        int r, id;

        (void) cycle_save_stage(c, with_old ? REMOUNT_STAGE_MOUNTING_OLD : REMOUNT_STAGE_MOUNTING_NEW);
        r = mount_once(c, mp_fd, ret_reason);
        if (r >= 0) {
                rep->mounted = true;
                r = verify_mount(c, &id, diff, sizeof diff);
                rep->new_id = id;
        }
        if (r < 0) {
                if (!*ret_reason)
                        *ret_reason = strdup(r == -ENOENT ? "the mount did not appear" : strerror(-r));
                return r;
        }
        (void) cycle_save_stage(c, with_old ? REMOUNT_STAGE_MOUNTED_OLD : REMOUNT_STAGE_MOUNTED);
        rep->effective = flag;
        if (r > 0)
                cycle_report(rep, REMOUNT_DIFFERENT, 0, "%s%smounted it again (stable writes %s), but %s",
                             so_far, *so_far ? "; " : "", flag ? "on" : "off", diff);
        else if (with_old)
                cycle_report(rep, REMOUNT_RESTORED, 0, "%s; mounted it again with the old state", so_far);
        else if (*so_far)
                cycle_report(rep, REMOUNT_DONE, 0, "%s; mounted it again with the new state", so_far);
        else
                cycle_report(rep, REMOUNT_DONE, 0, "unmounted and mounted it again");
        return 0;
}

/* Step 8, the mount with the new state failed: the old flag written for the next attempt, with
 * the old state. Where the interlock refuses it (it would turn stable writes off on a disk that
 * needs them: the flag never makes a mount fail, so this fallback buys nothing there), the next
 * attempt is the new state once more, and the last (*last, and why in *kept). Returns 0 (attempt
 * again), or 1 with the report filled. */
static int fall_back(Cycle *c, bool *last, char **kept) {
        RemountJournal *j = c->journal;
        _cleanup_free_ char *refused = NULL;
        int flag;

        if (set_mount_flag(c, j->old_flag, &flag, &refused) != 0)
                return 1;
        if (flag != j->old_flag) {
                *last = true;
                free(*kept);
                *kept = strdup_printf("not falling back to the old state: %s", refused);
                if (!*kept) {
                        cycle_report(c->rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory");
                        return 1;
                }
                return 0;
        }
        if (cycle_save_stage(c, REMOUNT_STAGE_MOUNTING_OLD) < 0)
                j->stage = REMOUNT_STAGE_MOUNTING_OLD; /* the mount with the old state goes on */
        cycle_pause_at(c, "before-mount-old");
        return 0;
}

/* Steps 6 to 8: mounts the filesystem back onto the pinned place, first with the state of
 * the journal's stage (the new one, unless it already fell back), then with the old one, or,
 * where the interlock refuses the old flag, with the new one once more. Before each attempt
 * the place must still be free and the same, and the disk and the filesystem the journal's.
 * The stage saved, the report and its effective state say the flag the disk had at the mount.
 * before: what happened first, to start the report's message with, or NULL. */
void cycle_mount_back(Cycle *c, const char *before) {
        RemountReport *rep = c->rep;
        RemountJournal *j = c->journal;
        _cleanup_free_ char *first_failure = NULL, *kept = NULL;
        bool last = false; /* the last attempt: a failure leaves it unmounted */
        int r;

        for (;;) {
                _cleanup_close_ int mp_fd = -EBADF;
                _cleanup_free_ char *why = NULL, *kept_now = NULL,
                                    *so_far = join3(before, first_failure, kept);
                bool fell_back = remount_journal_fell_back(j), with_old;
                int want = remount_journal_mount_flag(j), flag;

                if (!so_far)
                        return (void) cycle_report(rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory");
                if (check_place(c, so_far, &mp_fd) != 0)
                        return;
                if (cycle_check_identity(c) != 0 || set_mount_flag(c, want, &flag, &kept_now) != 0)
                        return;
                if (kept_now) {
                        char *s = join3(so_far, kept_now, NULL);
                        if (!s)
                                return (void) cycle_report(rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory");
                        free(so_far);
                        so_far = s;
                }
                /* The stage says the state the flag gives the mount: the old one, or the new one
                 * (also at a fallback whose old flag the interlock refused). */
                with_old = j->old_flag != j->new_flag ? flag == j->old_flag : fell_back;
                r = mount_with(c, mp_fd, flag, with_old, so_far, &why);
                if (r >= 0)
                        return;
                if (with_old || last)
                        return (void) cycle_report(rep, REMOUNT_UNMOUNTED, -r,
                                                   "%s; mounting it with the %s state failed too: %s",
                                                   so_far, with_old ? "old" : "new", why ?: "?");
                free(first_failure);
                first_failure = strdup_printf("mounting it with the new state failed: %s", why ?: "?");
                if (!first_failure)
                        return (void) cycle_report(rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory");
                rep->error = -r;
                if (fall_back(c, &last, &kept) != 0)
                        return;
        }
}

/* Starts again the targets the stop of the unit stopped (as a restart would). */
void cycle_restart_targets(Cycle *c) {
        STRV_FOREACH (t, c->targets) {
                _cleanup_free_ char *result = NULL;
                if (remount_systemd_is_active(c->bus, *t) == 0)
                        (void) remount_systemd_run_job(c->bus, *t, "StartUnit", "fail", cycle_job_timeout(c),
                                                       &result);
        }
}
