/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A cycle's process, from the daemon's side: forked with its job, followed to its report or
 * its death, and what that says acted on. */
#include <fcntl.h>
#include <limits.h>
#include <sys/wait.h>

#include "log.h"
#include "remount-internal.h"
#include "util.h"

static int on_report(sd_event_source *s, int fd, uint32_t revents, void *userdata);

/* In the cycle's child: closes every file descriptor above stderr but a and b. */
static void close_all_fds_but(int a, int b) {
        _cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
        struct dirent *de;

        if (!d) {
                for (int fd = 3; fd < 1024; fd++)
                        if (fd != a && fd != b)
                                close(fd);
                return;
        }
        while ((de = readdir(d))) {
                int fd = atoi(de->d_name);
                if (fd > 2 && fd != a && fd != b && fd != dirfd(d))
                        close(fd);
        }
}

int remount_spawn(Remounter *r, RemountActive *a) {
        const Engine *e = r->host.engine;
        RemountDisk d;
        int fds[2], k;
        pid_t pid;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        /* The child writes the flag only to the journal's disk (its diskseq, RemountJournal), and
         * an off only where that disk's need allows (flag.h): the need of the disk with the name
         * now, when it is that disk. */
        bool same = r->host.find_disk(r->host.userdata, a->item.disk, &d) >= 0 &&
                    d.diskseq == a->journal.diskseq;
        RemountJob j = {
                .journal = &a->journal,
                .journal_path = a->journal_path,
                .options = a->options,
                .disk_fd = a->disk_fd,
                .need = same ? d.need : NEED_UNKNOWN,
                .force = same && d.forced,
                .runtime_dir = e->runtime_dir,
                .udev_data_dir = e->udev_data_dir,
                .need_of = engine_need_of,
                .need_userdata = (void *) e,
                .replay = a->replay,
                .job_timeout_usec = r->test_job_timeout_usec,
                .fail_mounts = r->test_fail_mounts,
                .skip_scan = r->test_skip_scan,
                .pause_fifo = r->test_pause,
        };
        a->start_usec = now_usec_monotonic();
        pid = fork();
        if (pid < 0) {
                k = -errno;
                close(fds[0]);
                close(fds[1]);
                return k;
        }
        if (pid == 0) {
                RemountReport rep;
                /* Nothing of the daemon's: its bus connection held by a cycle that outlives
                 * a killed daemon would keep its name (and its callers waiting). */
                close_all_fds_but(fds[1], a->disk_fd);
                remount_job_run(&j, &rep);
                _Static_assert(sizeof rep <= PIPE_BUF, "the report must be written atomically");
                _exit(write(fds[1], &rep, sizeof rep) == (ssize_t) sizeof rep ? 0 : 1);
        }
        close(fds[1]);
        a->pid = pid;
        a->report_fd = fds[0];
        k = sd_event_add_io(r->host.event, &a->io, a->report_fd, EPOLLIN, on_report, r);
        if (k < 0) {
                /* Without the event source, wait here: the cycle must be followed to its end. */
                log_warning_errno(k, "Cannot watch the cycle of %s, waiting for it: %m", a->label);
                return 0;
        }
        (void) sd_event_source_set_description(a->io, "remount-report");
        return 0;
}

/* Reads the child's report. Returns true with *rep filled, false when the child died without
 * one (the signal or status in *ret_status). */
static bool read_report(RemountActive *a, RemountReport *rep, int *ret_status) {
        ssize_t n;
        int status = 0;

        do
                n = read(a->report_fd, rep, sizeof *rep);
        while (n < 0 && errno == EINTR);
        while (waitpid(a->pid, &status, 0) < 0 && errno == EINTR)
                ;
        a->pid = 0;
        a->io = sd_event_source_disable_unref(a->io);
        close(a->report_fd);
        a->report_fd = -EBADF;
        *ret_status = status;
        return n == (ssize_t) sizeof *rep;
}

/* The replay or the cycle of a found its disk or filesystem to be another one (or could not
 * tell: a journal of an earlier version): nothing was mounted and nothing is retried. Said at
 * error level with what an administrator needs to mount it by hand; the journal is kept aside
 * for them; the disk is released (the host may write the flag of what has its name now). */
static void refuse_stale(Remounter *r, RemountActive *a, const RemountReport *rep, uint64_t duration) {
        const RemountPlan *p = &a->journal.plan;
        _cleanup_free_ char *aside = NULL, *source = NULL, *why = NULL;
        int k = remount_journal_set_aside(a->journal_path, r->host.engine->runtime_dir, &aside);

        if (k < 0)
                log_error_errno(k,
                                "%s: cannot move its journal %s aside: %m; the next start checks it again",
                                a->label, a->journal_path);
        source = a->journal.fs_uuid ? strdup_printf("UUID=%s", a->journal.fs_uuid) : strdup(p->source);
        why = strdup_printf("%s; its journal is kept in %s; to mount it by hand once its filesystem is "
                            "there: mount -t %s -o %s %s %s",
                            rep->message, aside ?: a->journal_path, p->fstype, a->options,
                            source ?: p->source, p->target);
        RemountRequest *q = TAKE_PTR(a->request);
        remount_conclude(r, q,
                         &(Conclusion){ .item = &a->item,
                                        .label = a->label,
                                        .id = a->item.id,
                                        .outcome = REMOUNT_UNMOUNTED,
                                        .why = why ?: rep->message,
                                        .via = rep->via,
                                        .duration_usec = duration,
                                        .stale = true,
                                        .active = a });
        remount_active_free(a);
        r->host.reconcile(r->host.userdata);
        remount_schedule(r);
}

/* What the report says happened, for the conclusion: the retries of a replay, the new state
 * verified through the tracked mount, the attempts at mounting back. Sets *outcome (a cycle
 * "done" whose mount does not show the decided state is "different"). NULL on ENOMEM. */
static char *report_why(Remounter *r, RemountActive *a, const RemountReport *rep, RemountOutcome *outcome) {
        if (a->replay && *outcome != REMOUNT_UNMOUNTED) {
                a->retries++;
                if (rep->mounted)
                        return strdup_printf("%s after %u %s%s", rep->message, a->retries,
                                             a->retries == 1 ? "retry" : "retries",
                                             a->request ? " (its cycle's process had died)" : "");
                return strdup_printf("%s%s", rep->message,
                                     a->request ? " (its cycle's process had died)" : "");
        }
        if (*outcome == REMOUNT_DONE) {
                /* Verify the new state through the tracker: it noted the new mount's state. What
                 * happened on the way (a mount that failed first) stays said. */
                const TrackedMount *t = remount_find_tracked(r, rep->new_id, a->journal.plan.target);
                bool plain = streq(rep->message, "unmounted and mounted it again");
                if (t && !t->pending)
                        return strdup_printf("%s%sstable writes now %s, as decided",
                                             plain ? "" : rep->message, plain ? "" : "; ",
                                             t->effective ? "on" : "off");
                *outcome = REMOUNT_DIFFERENT;
                return strdup_printf("%s%smounted again, but its stable writes are %s, not as decided",
                                     plain ? "" : rep->message, plain ? "" : "; ",
                                     t && t->effective ? "on" : "off");
        }
        if (*outcome == REMOUNT_UNMOUNTED) {
                a->retries += a->replay;
                a->give_up = rep->give_up;
                if (a->replay)
                        a->backoff_usec = MIN(a->backoff_usec * 2, REMOUNT_RETRY_MAX_USEC);
                return a->replay ? strdup_printf("attempt %u to mount it back failed: %s", a->retries,
                                                 rep->message)
                                 : strdup(rep->message);
        }
        return strdup(rep->message);
}

/* A replay found the journal locked: the cycle of an earlier daemon still runs on it. Nothing
 * was looked at: it is checked again after REMOUNT_RETRY_MIN_USEC. */
static void recheck_locked(Remounter *r, RemountActive *a, const RemountReport *rep) {
        log_notice("%s: %s; checking again in %llu s.", a->label, rep->message,
                   (unsigned long long) (REMOUNT_RETRY_MIN_USEC / USEC_PER_SEC));
        a->backoff_usec = REMOUNT_RETRY_MIN_USEC;
        remount_park(r, a, rep->message);
        remount_schedule(r);
}

/* What the child did, whatever the outcome: the mount attempts the test hook counts, and the
 * flag it wrote (the host takes it as the cycle's, not somebody else's change). */
static void take_changes(Remounter *r, RemountActive *a, const RemountReport *rep) {
        a->checked = true;
        r->test_fail_mounts -= MIN(r->test_fail_mounts, rep->mount_attempts);
        if (rep->flag_written >= 0)
                r->host.flag_written(r->host.userdata, a->item.disk, rep->flag_written);
}

/* The journal as the child left it, and the new mount to the host: observed anew, even with
 * the same id, with the state the cycle knows it mounted it with. */
static void take_mount(Remounter *r, RemountActive *a, const RemountReport *rep) {
        remount_reload_journal(a);
        if (rep->new_id > 0)
                r->host.mounted(r->host.userdata, a->journal.plan.id, rep->new_id, a->journal.plan.target,
                                rep->effective);
}

/* Concludes the report (the requester is told now; later replays are only signalled), then
 * parks a filesystem left unmounted for its replay, or lets the cycle go. */
static void conclude_report(Remounter *r, RemountActive *a, const RemountReport *rep, uint64_t duration) {
        RemountOutcome outcome = rep->outcome;
        int id = rep->new_id ?: a->journal.plan.id;
        _cleanup_free_ char *why = report_why(r, a, rep, &outcome);

        if (!why)
                (void) log_oom();
        remount_conclude(r, TAKE_PTR(a->request),
                         &(Conclusion){ .item = &a->item,
                                        .label = a->label,
                                        .id = id,
                                        .outcome = outcome,
                                        .why = why ?: rep->message,
                                        .detail = rep->detail[0] ? rep->detail : NULL,
                                        .via = rep->via,
                                        .duration_usec = duration,
                                        .pending = true,
                                        .active = a });
        if (outcome == REMOUNT_UNMOUNTED)
                remount_park(r, a, why ?: rep->message);
        else
                remount_finish(r, a);
}

/* The child's report: a replay locked out is checked again; a disk or filesystem that is
 * another one now is refused; else the outcome is concluded, and the new state published. */
static void handle_report(Remounter *r, RemountActive *a, const RemountReport *rep) {
        uint64_t duration = now_usec_monotonic() - a->start_usec;

        r->running = NULL;
        if (a->replay && rep->outcome == REMOUNT_UNMOUNTED && rep->error == EWOULDBLOCK) {
                recheck_locked(r, a, rep);
                return;
        }
        take_changes(r, a, rep);
        if (rep->stale) {
                refuse_stale(r, a, rep, duration);
                return;
        }
        take_mount(r, a, rep);
        conclude_report(r, a, rep, duration);
        /* Publish the new state (and let the host write the flag again if it wants). */
        r->host.reconcile(r->host.userdata);
        remount_schedule(r);
}

/* The child died without a report: its journal says how far it got. */
static void handle_death(Remounter *r, RemountActive *a, int status) {
        _cleanup_free_ char *why = NULL;
        int k;

        why = strdup_printf("the process of its %s died (%s %d)", a->replay ? "replay" : "cycle",
                            WIFSIGNALED(status) ? "signal" : "status",
                            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        remount_reload_journal(a);
        r->running = NULL;
        a->checked = true;
        if (!a->replay && a->journal.stage == REMOUNT_STAGE_PREPARED) {
                RemountRequest *q = TAKE_PTR(a->request);
                remount_conclude(r, q,
                                 &(Conclusion){ .item = &a->item,
                                                .label = a->label,
                                                .id = a->item.id,
                                                .outcome = REMOUNT_FAILED,
                                                .why = why ?: "died",
                                                .via = a->journal.unit ? "systemd" : "the daemon",
                                                .duration_usec = now_usec_monotonic() - a->start_usec,
                                                .pending = true,
                                                .active = a });
                remount_finish(r, a);
                r->host.reconcile(r->host.userdata);
                remount_schedule(r);
                return;
        }
        log_error("%s: %s at stage %s; mounting it back as its journal says.", a->label, why ?: "died",
                  remount_stage_to_string(a->journal.stage));
        if (a->replay) {
                a->retries++;
                a->backoff_usec = MIN(a->backoff_usec * 2, REMOUNT_RETRY_MAX_USEC);
                remount_park(r, a, why);
                remount_schedule(r);
                return;
        }
        /* At once, and the requester hears the replay's outcome. */
        a->replay = true;
        r->running = a;
        k = remount_spawn(r, a);
        if (k < 0) {
                r->running = NULL;
                log_error_errno(k, "%s is NOT MOUNTED and its replay cannot start: %m", a->label);
                remount_park(r, a, why);
        }
}

void remount_follow(Remounter *r, RemountActive *a) {
        RemountReport rep;
        int status;

        if (read_report(a, &rep, &status))
                handle_report(r, a, &rep);
        else
                handle_death(r, a, status);
}

static int on_report(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Remounter *r = userdata;

        if (r->running)
                remount_follow(r, r->running);
        return 0;
}
