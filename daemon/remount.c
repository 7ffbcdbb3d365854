/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <sys/wait.h>

#include "log.h"
#include "remount.h"
#include "sysfs.h"
#include "util.h"

#define REASON_PENDING "takes effect at next mount"

/* What the last cycle or check of a mount point said. */
typedef struct RemountNote {
        char *target;
        int id;              /* the mount it was about */
        bool sticky;         /* a failed cycle: no automatic cycle of this mount point any more */
        uint64_t until_usec; /* CLOCK_MONOTONIC: no automatic check of mount id before */
        char *reason;        /* the pending reason shown meanwhile */
} RemountNote;

typedef struct RemountItem {
        int id;
        char *target, *disk;
} RemountItem;

typedef struct RemountRequest {
        struct RemountRequest *next;
        bool explicit;
        manager_remount_done_t done;
        void *userdata;
        RemountItem *items;
        size_t n_items, pos;
        RemountResult *results;
        size_t n_results;
} RemountRequest;

/* The cycle in progress, or a filesystem left unmounted that is being retried. */
typedef struct RemountActive {
        RemountRequest *request; /* whom to tell; NULL once told (retries) */
        RemountItem item;
        char *label; /* "TARGET (FSTYPE on DISK)" */
        RemountPlan plan;
        char *options;
        char *unit; /* the systemd unit that did it, for retries */
        int flag_fd;
        int old_flag, new_flag;
        bool mount_only; /* retrying: mount with the old state */
        bool stuck;      /* left unmounted */
        pid_t pid;
        int report_fd;
        sd_event_source *io;
        uint64_t start_usec;
        unsigned retries;
        uint64_t backoff_usec;
} RemountActive;

struct Remounter {
        Manager *manager;
        sd_event_source *defer, *retry;
        RemountRequest *queue; /* the head is the request being worked on */
        RemountActive *active;
        RemountNote *notes;
        size_t n_notes;
        unsigned test_fail_mounts;
        bool test_skip_scan;
};

static void item_done(RemountItem *i) {
        free(i->target);
        free(i->disk);
}

static void result_done(RemountResult *r) {
        free(r->target);
        free(r->disk);
        free(r->message);
}

static void request_free(RemountRequest *q) {
        for (size_t i = 0; i < q->n_items; i++)
                item_done(&q->items[i]);
        free(q->items);
        for (size_t i = 0; i < q->n_results; i++)
                result_done(&q->results[i]);
        free(q->results);
        free(q);
}

static void active_free(RemountActive *a) {
        if (!a)
                return;
        sd_event_source_disable_unref(a->io);
        if (a->report_fd >= 0)
                close(a->report_fd);
        if (a->flag_fd >= 0)
                close(a->flag_fd);
        item_done(&a->item);
        remount_plan_done(&a->plan);
        free(a->label);
        free(a->options);
        free(a->unit);
        free(a);
}

static void schedule(Remounter *r) {
        int k = sd_event_source_set_enabled(r->defer, SD_EVENT_ONESHOT);
        if (k < 0)
                log_error_errno(k, "Cannot schedule the remount queue: %m");
}

/* --- notes: why a pending mount was not cycled ------------------------------------------- */

static RemountNote *note_find(Remounter *r, const char *target) {
        for (size_t i = 0; i < r->n_notes; i++)
                if (streq(r->notes[i].target, target))
                        return &r->notes[i];
        return NULL;
}

/* Points tracked mounts away from a reason string about to be freed. */
static void reason_unref(Remounter *r, const char *reason) {
        MountTracker *t = r->manager->mounts;
        for (size_t i = 0; reason && t && i < t->n; i++)
                if (t->mounts[i].reason == reason)
                        t->mounts[i].reason = REASON_PENDING;
}

static void note_drop(Remounter *r, const char *target) {
        RemountNote *n = note_find(r, target);
        if (!n)
                return;
        reason_unref(r, n->reason);
        free(n->target);
        free(n->reason);
        *n = r->notes[--r->n_notes];
}

static void note_set(Remounter *r, const char *target, int id, bool sticky, uint64_t until, const char *why,
                     bool failed) {
        RemountNote *n = note_find(r, target);
        char *reason = strdup_printf("%s (%s: %s)", REASON_PENDING,
                                     failed ? "the last cycle failed" : "not cycled", why);

        if (!reason)
                return (void) log_oom();
        if (!n) {
                RemountNote *notes = realloc(r->notes, sizeof(RemountNote) * (r->n_notes + 1));
                char *t = strdup(target);
                if (!notes || !t) {
                        if (notes)
                                r->notes = notes;
                        free(t);
                        free(reason);
                        return (void) log_oom();
                }
                r->notes = notes;
                n = &notes[r->n_notes++];
                *n = (RemountNote){ .target = t };
        }
        reason_unref(r, n->reason);
        free(n->reason);
        n->reason = reason;
        n->id = id;
        n->sticky = sticky;
        n->until_usec = until;
}

void remount_annotate(Remounter *r) {
        MountTracker *t = r->manager->mounts;
        for (size_t i = 0; t && i < t->n; i++) {
                TrackedMount *m = &t->mounts[i];
                RemountNote *n = m->pending ? note_find(r, m->target) : NULL;
                if (n && (n->sticky || n->id == m->id))
                        m->reason = n->reason;
        }
}

/* --- results ------------------------------------------------------------------------------- */

static TrackedMount *find_tracked(Manager *m, int id, const char *target) {
        TrackedMount *by_target = NULL;
        for (size_t i = 0; m->mounts && i < m->mounts->n; i++) {
                TrackedMount *t = &m->mounts->mounts[i];
                if (!streq(t->target, target))
                        continue;
                if (t->id == id)
                        return t;
                by_target = t;
        }
        return by_target;
}

static void snapshot_set_flag(Manager *m, const char *disk, int flag) {
        /* The child wrote the flag: the next scan must not take it for somebody else's. */
        for (size_t i = 0; i < m->n_snapshots; i++)
                if (streq(m->snapshots[i].name, disk))
                        m->snapshots[i].flag = flag;
}

/* Builds the result, logs it, keeps the note, tells the handler and the request. Takes
 * nothing; why is the bare reason ("PID 5 (sleep) has a file open on it: /x/y"). */
static void conclude(Remounter *r, RemountRequest *q, const RemountItem *it, const char *label, int id,
                     RemountOutcome outcome, const char *why, const char *via, uint64_t duration,
                     bool is_static, bool pending) {
        Manager *m = r->manager;
        RemountResult res = {
                .target = strdup(it->target),
                .disk = strdup(it->disk),
                .outcome = outcome,
                .ok = outcome == REMOUNT_DONE || outcome == REMOUNT_NOTHING,
                .duration_usec = duration,
        };
        uint64_t now = now_usec_monotonic();
        double ms = (double) duration / 1000.0;
        int level = LOG_ERR;

        label = label ?: it->target;
        via = via ?: "?";
        switch (outcome) {
        case REMOUNT_DONE:
                res.message = strdup_printf("%s: unmounted and mounted again in %.1f ms, in %s; %s", label,
                                            ms, via, why);
                level = LOG_INFO;
                note_drop(r, it->target);
                break;
        case REMOUNT_NOTHING:
                res.message = strdup_printf("%s: nothing to do: %s", label, why);
                level = q && q->explicit ? LOG_INFO : LOG_DEBUG;
                break;
        case REMOUNT_REFUSED:
        case REMOUNT_BUSY:
        case REMOUNT_FAILED: {
                RemountNote *n = note_find(r, it->target);
                res.message = strdup_printf("%s: not cycled: %s%s%s", label, why,
                                            outcome == REMOUNT_BUSY ? "; still mounted as before" : "",
                                            pending ? "; " REASON_PENDING : "");
                /* Each new reason once at notice level; the periodic re-checks quietly. */
                level = q && q->explicit                           ? LOG_NOTICE
                        : n && n->reason && strstr(n->reason, why) ? LOG_DEBUG
                                                                   : LOG_NOTICE;
                if (outcome == REMOUNT_FAILED)
                        level = LOG_WARNING;
                note_set(r, it->target, id, false, is_static ? UINT64_MAX : now + REMOUNT_RECHECK_USEC, why,
                         false);
                break;
        }
        case REMOUNT_RESTORED:
        case REMOUNT_DIFFERENT:
                res.message =
                        strdup_printf("%s: THE CYCLE FAILED: %s (in %s, %.1f ms); %s", label, why, via, ms,
                                      outcome == REMOUNT_RESTORED ? "it keeps its old state, " REASON_PENDING
                                                                  : "left as it is");
                note_set(r, it->target, id, true, UINT64_MAX, why, true);
                break;
        case REMOUNT_UNMOUNTED:
                res.message =
                        strdup_printf("%s: NOT MOUNTED: %s (in %s); retrying in %llu s", label, why, via,
                                      (unsigned long long) ((r->active ? r->active->backoff_usec
                                                                       : REMOUNT_RETRY_MIN_USEC) /
                                                            USEC_PER_SEC));
                note_set(r, it->target, id, true, UINT64_MAX, why, true);
                break;
        default:
                break;
        }
        if (!res.target || !res.disk || !res.message) {
                result_done(&res);
                return (void) log_oom();
        }
        log_full(level, "%s", res.message);

        if (m->handler)
                m->handler(m,
                           &(ManagerEvent){
                                   .type = MANAGER_REMOUNT_FINISHED, .device = res.disk, .remount = &res },
                           m->handler_userdata);
        if (q) {
                RemountResult *l = realloc(q->results, sizeof(RemountResult) * (q->n_results + 1));
                if (l) {
                        q->results = l;
                        l[q->n_results++] = res;
                        return;
                }
                log_oom();
        }
        result_done(&res);
}

/* --- starting a cycle ----------------------------------------------------------------------- */

static int on_report(sd_event_source *s, int fd, uint32_t revents, void *userdata);

static int spawn(Remounter *r, RemountActive *a) {
        Manager *m = r->manager;
        int fds[2], k;
        pid_t pid;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        RemountJob j = {
                .plan = &a->plan,
                .options = a->options,
                .flag_fd = a->flag_fd,
                .old_flag = a->old_flag,
                .mount_only = a->mount_only,
                .systemd_unit = a->unit,
                .fail_mounts = r->test_fail_mounts,
                .skip_scan = r->test_skip_scan,
        };
        pid = fork();
        if (pid < 0) {
                k = -errno;
                close(fds[0]);
                close(fds[1]);
                return k;
        }
        if (pid == 0) {
                RemountReport rep;
                close(fds[0]);
                remount_job_run(&j, &rep);
                _Static_assert(sizeof rep <= PIPE_BUF, "the report must be written atomically");
                _exit(write(fds[1], &rep, sizeof rep) == (ssize_t) sizeof rep ? 0 : 1);
        }
        close(fds[1]);
        a->pid = pid;
        a->report_fd = fds[0];
        k = sd_event_add_io(m->event, &a->io, a->report_fd, EPOLLIN, on_report, r);
        if (k < 0) {
                /* Without the event source, wait here: the cycle must be followed to its end. */
                log_warning_errno(k, "Cannot watch the cycle of %s, waiting for it: %m", a->label);
                return 0;
        }
        (void) sd_event_source_set_description(a->io, "remount-report");
        return 0;
}

/* Checks one filesystem and, when nothing is against it, starts its cycle. Returns 1 when a
 * child runs (the result comes later), 0 when concluded here. */
static int start_item(Remounter *r, RemountRequest *q, const RemountItem *it) {
        Manager *m = r->manager;
        Engine *e = &m->engine;
        uint64_t start = now_usec_monotonic();
        _cleanup_free_ char *reason = NULL, *label = NULL, *swaps = NULL, *attr = NULL;
        _cleanup_(remount_plan_done) RemountPlan plan = {};
        _cleanup_strv_free_ char **block = NULL;
        _cleanup_(apply_result_done) ApplyResult applied = {};
        struct libmnt_table *table;
        TrackedMount *t;
        EngineDevice *d;
        long long v;
        int k;

#define CONCLUDE(outcome, why, is_static)                                                                   \
        ({                                                                                                  \
                conclude(r, q, it, label, t ? t->id : it->id, outcome, why, NULL,                           \
                         now_usec_monotonic() - start, is_static, !t || t->pending);                        \
                0;                                                                                          \
        })

        t = find_tracked(m, it->id, it->target);
        if (!t)
                return CONCLUDE(REMOUNT_NOTHING, "it is not mounted any more", true);
        label = strdup_printf("%s (%s on %s)", t->target, t->fstype, it->disk);
        if (!label)
                return -ENOMEM;

        k = remount_check_target(t->target, e->config.never_remount, &reason);
        if (k != 0)
                return k < 0 ? k : CONCLUDE(REMOUNT_REFUSED, reason, true);
        if (!t->pending)
                return CONCLUDE(REMOUNT_NOTHING, t->reason ?: "not pending", true);
        d = manager_find_device(m, it->disk);
        if (!d || !d->managed || d->decision.desired < 0) {
                reason = strdup_printf("the daemon leaves %s alone (%s)", it->disk,
                                       d && d->decision.reason ? d->decision.reason : "not managed");
                return reason ? CONCLUDE(REMOUNT_REFUSED, reason, true) : -ENOMEM;
        }
        k = remount_check_fstype(t->fstype, &reason);
        if (k != 0)
                return k < 0 ? k : CONCLUDE(REMOUNT_REFUSED, reason, true);
        attr = strdup_printf("block/%s/loop/autoclear", it->disk);
        if (!attr)
                return -ENOMEM;
        if (sysfs_read_int(e->sysfs_root, attr, &v) >= 0) {
                k = remount_check_loop_autoclear(t->source, (int) v, &reason);
                if (k != 0)
                        return k < 0 ? k : CONCLUDE(REMOUNT_REFUSED, reason, true);
        }

        /* The system's mount table (PID 1's, as the tracker reads it). */
        table = mnt_new_table_from_file(m->mounts->mountinfo);
        if (!table) {
                reason = strdup_printf("cannot read %s: %s", m->mounts->mountinfo, strerror(errno));
                return reason ? CONCLUDE(REMOUNT_FAILED, reason, false) : -ENOMEM;
        }
        k = remount_plan_from_table(table, t->id, t->source_devnum, &plan);
        if (k == 0)
                k = remount_check_table(table, &plan, &reason);
        mnt_unref_table(table);
        if (k == -ENOENT)
                return CONCLUDE(REMOUNT_NOTHING, "it is not mounted any more", true);
        if (k != 0)
                return k < 0 ? k : CONCLUDE(REMOUNT_REFUSED, reason, false);
        if (read_full_file("/proc/swaps", 1024 * 1024, &swaps, NULL) >= 0) {
                k = remount_check_swaps(swaps, plan.target, &reason);
                if (k != 0)
                        return k < 0 ? k : CONCLUDE(REMOUNT_REFUSED, reason, false);
        }
        if (sysfs_list_dir(e->sysfs_root, "block", &block) >= 0)
                STRV_FOREACH (b, block) {
                        _cleanup_free_ char *backing = NULL, *path = NULL;
                        if (!startswith(*b, "loop"))
                                continue;
                        path = strdup_printf("block/%s/loop/backing_file", *b);
                        if (!path)
                                return -ENOMEM;
                        if (sysfs_read_string(e->sysfs_root, path, &backing) < 0)
                                continue;
                        k = remount_check_loop_backing(*b, backing, plan.target, &reason);
                        if (k != 0)
                                return k < 0 ? k : CONCLUDE(REMOUNT_REFUSED, reason, false);
                }

        /* The flag, as decided (normally written by the last reconcile already). This
         * rescans: t and d are stale after it. */
        k = manager_apply_device(m, it->disk, &applied);
        if (k == -ENOMEM)
                return k;
        t = find_tracked(m, plan.id, plan.target);
        d = manager_find_device(m, it->disk);
        if (k < 0 && k != -EPERM) {
                reason = strdup_printf("cannot set the flag of %s: %s", it->disk,
                                       applied.message ?: strerror(-k));
                return reason ? CONCLUDE(REMOUNT_FAILED, reason, false) : -ENOMEM;
        }
        if (!t || t->id != plan.id)
                return CONCLUDE(REMOUNT_NOTHING, "it is not mounted any more", true);
        if (!t->pending || !d)
                return CONCLUDE(REMOUNT_NOTHING, t->reason ?: "not pending any more", true);

        RemountActive *a = calloc(1, sizeof(RemountActive));
        if (!a)
                return -ENOMEM;
        *a = (RemountActive){
                .request = q,
                .item = { .id = it->id, .target = strdup(it->target), .disk = strdup(it->disk) },
                .label = TAKE_PTR(label),
                .plan = plan,
                .options = remount_plan_options(&plan),
                .flag_fd = -EBADF,
                .report_fd = -EBADF,
                .old_flag = t->effective ? 1 : 0,
                .new_flag = d->facts->stable_writes,
                .start_usec = start,
                .backoff_usec = REMOUNT_RETRY_MIN_USEC,
        };
        plan = (RemountPlan){};
        _cleanup_free_ char *flag_path =
                strdup_printf("%s/block/%s/queue/stable_writes", e->sysfs_root, it->disk);
        if (!a->item.target || !a->item.disk || !a->options || !flag_path) {
                active_free(a);
                return -ENOMEM;
        }
        a->flag_fd = open(flag_path, O_RDWR | O_CLOEXEC);
        if (a->flag_fd < 0) {
                reason = strdup_printf("cannot open %s: %s", flag_path, strerror(errno));
                label = TAKE_PTR(a->label);
                active_free(a);
                return reason ? CONCLUDE(REMOUNT_FAILED, reason, false) : -ENOMEM;
        }
        log_debug("%s: cycling it (stable writes %s -> %s), options %s.", a->label,
                  a->old_flag ? "on" : "off", a->new_flag ? "on" : "off", a->options);
        r->active = a; /* holds the disk from now on */
        k = spawn(r, a);
        if (k < 0) {
                r->active = NULL;
                reason = strdup_printf("cannot start the cycle: %s", strerror(-k));
                label = TAKE_PTR(a->label);
                active_free(a);
                return reason ? CONCLUDE(REMOUNT_FAILED, reason, false) : -ENOMEM;
        }
        return 1;
#undef CONCLUDE
}

/* --- the child's report --------------------------------------------------------------------- */

static void complete_request(Remounter *r, RemountRequest *q) {
        Manager *m = r->manager;
        RemountRequest **p = &r->queue;

        while (*p && *p != q)
                p = &(*p)->next;
        if (*p)
                *p = q->next;
        if (q->done)
                q->done(m, q->results, q->n_results, q->userdata);
        request_free(q);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata);

static void arm_retry(Remounter *r) {
        Manager *m = r->manager;
        int k;

        if (!r->retry)
                k = sd_event_add_time_relative(m->event, &r->retry, CLOCK_MONOTONIC, r->active->backoff_usec,
                                               0, on_retry, r);
        else {
                k = sd_event_source_set_time_relative(r->retry, r->active->backoff_usec);
                if (k >= 0)
                        k = sd_event_source_set_enabled(r->retry, SD_EVENT_ONESHOT);
        }
        if (k < 0)
                log_error_errno(k, "Cannot arm the retry timer for %s, which is NOT MOUNTED: %m",
                                r->active->label);
}

/* Reads the child's report (a dead child without one is judged from the mount table). */
static void read_report(Remounter *r, RemountActive *a, RemountReport *rep) {
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
        if (n == (ssize_t) sizeof *rep)
                return;

        struct libmnt_table *t = mnt_new_table_from_file(r->manager->mounts->mountinfo);
        bool mounted =
                t && mnt_table_find_target(t, a->plan.target, MNT_ITER_BACKWARD) &&
                streq(mnt_fs_get_fstype(mnt_table_find_target(t, a->plan.target, MNT_ITER_BACKWARD)) ?: "",
                      a->plan.fstype);
        mnt_unref_table(t);
        *rep = (RemountReport){ .outcome = mounted ? REMOUNT_FAILED : REMOUNT_UNMOUNTED, .error = EIO };
        snprintf(rep->message, sizeof rep->message, "the cycle's process died (%s %d) %s",
                 WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
                 mounted ? "and left it mounted" : "and left it unmounted");
}

static void handle_report(Remounter *r, RemountActive *a, const RemountReport *rep) {
        Manager *m = r->manager;
        uint64_t duration = now_usec_monotonic() - a->start_usec;
        RemountOutcome outcome = rep->outcome;
        _cleanup_free_ char *why = NULL;
        int id = rep->new_id ?: a->plan.id;

        r->test_fail_mounts -= MIN(r->test_fail_mounts, rep->mount_attempts);
        if (rep->flag_restored)
                snapshot_set_flag(m, a->item.disk, a->old_flag);
        if (rep->unit[0] && !a->unit)
                a->unit = strdup(rep->unit);
        if (rep->new_id > 0) {
                /* A new mount: the tracker must observe it anew, even with the same id. */
                int k;
                mount_tracker_forget(m->mounts, a->plan.id, a->plan.target);
                k = mount_tracker_refresh(m->mounts, &m->engine, NULL);
                if (k < 0)
                        log_warning_errno(k, "Cannot read the mount table: %m");
                mount_tracker_update_pending(m->mounts, &m->engine);
        }

        if (a->mount_only) {
                a->retries++;
                if (outcome == REMOUNT_RESTORED)
                        why = strdup_printf(
                                "mounted it again with the old state after %u %s (it had been left "
                                "unmounted)",
                                a->retries, a->retries == 1 ? "retry" : "retries");
                else {
                        a->backoff_usec = MIN(a->backoff_usec * 2, REMOUNT_RETRY_MAX_USEC);
                        why = strdup_printf("retry %u failed: %s", a->retries, rep->message);
                        outcome = REMOUNT_UNMOUNTED;
                }
        } else if (outcome == REMOUNT_DONE) {
                /* Verify the new state through the tracker: it noted the new mount as observed. */
                TrackedMount *t = find_tracked(m, rep->new_id, a->plan.target);
                if (t && !t->pending)
                        why = strdup_printf("stable writes now %s, as decided", t->effective ? "on" : "off");
                else {
                        outcome = REMOUNT_DIFFERENT;
                        why = strdup_printf("mounted again, but its stable writes are still %s",
                                            t && t->effective ? "on" : "off");
                }
        } else
                why = strdup(rep->message);
        if (!why)
                (void) log_oom();

        if (outcome == REMOUNT_UNMOUNTED) {
                a->stuck = true;
                a->mount_only = true;
        }
        RemountRequest *q = a->request;
        a->request = NULL; /* told now; retries are only signalled */
        conclude(r, q, &a->item, a->label, id, outcome, why ?: rep->message, rep->via, duration, false,
                 true);

        if (outcome == REMOUNT_UNMOUNTED) {
                arm_retry(r);
                schedule(r); /* the requester learns it now; other cycles are refused meanwhile */
                return;
        }
        r->active = NULL;
        active_free(a);
        /* Publish the new state (and let the Manager write the flag again if it wants). */
        (void) manager_reconcile(m);
        schedule(r);
}

static int on_report(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Remounter *r = userdata;
        RemountActive *a = r->active;
        RemountReport rep;

        if (!a)
                return 0;
        read_report(r, a, &rep);
        handle_report(r, a, &rep);
        return 0;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Remounter *r = userdata;
        RemountActive *a = r->active;
        int k;

        if (!a || !a->stuck)
                return 0;
        a->start_usec = now_usec_monotonic();
        k = spawn(r, a);
        if (k < 0) {
                log_error_errno(k, "%s is NOT MOUNTED and the retry cannot start: %m", a->label);
                a->backoff_usec = MIN(a->backoff_usec * 2, REMOUNT_RETRY_MAX_USEC);
                arm_retry(r);
        } else if (!a->io) {
                /* No event source: follow it here. */
                RemountReport rep;
                read_report(r, a, &rep);
                handle_report(r, a, &rep);
        }
        return 0;
}

/* --- the queue ------------------------------------------------------------------------------ */

static void process(Remounter *r) {
        while (r->queue) {
                RemountRequest *q = r->queue;

                if (r->active && !r->active->stuck)
                        return; /* one cycle at a time */
                if (q->pos >= q->n_items) {
                        complete_request(r, q);
                        /* Show the reasons of what was refused. */
                        if (!r->queue)
                                (void) manager_reconcile(r->manager);
                        continue;
                }
                const RemountItem *it = &q->items[q->pos++];
                if (r->active && r->active->stuck) {
                        _cleanup_free_ char *why =
                                strdup_printf("%s is left unmounted by a failed cycle; no "
                                              "other cycle until it is mounted again",
                                              r->active->item.target);
                        conclude(r, q, it, NULL, it->id, REMOUNT_REFUSED, why ?: "out of memory", NULL, 0,
                                 false, true);
                        continue;
                }
                int k = start_item(r, q, it);
                if (k < 0)
                        conclude(r, q, it, NULL, it->id, REMOUNT_FAILED, strerror(-k), NULL, 0, false, true);
                if (k > 0) {
                        RemountActive *a = r->active;
                        if (a && !a->io) {
                                /* Could not watch it: wait here. */
                                RemountReport rep;
                                read_report(r, a, &rep);
                                handle_report(r, a, &rep);
                        }
                        return;
                }
        }
}

static int on_defer(sd_event_source *s, void *userdata) {
        process(userdata);
        return 0;
}

static int enqueue(Remounter *r, RemountRequest *q) {
        RemountRequest **p = &r->queue;
        while (*p)
                p = &(*p)->next;
        *p = q;
        schedule(r);
        return 0;
}

static int add_item(RemountRequest *q, const TrackedMount *t) {
        RemountItem *items = realloc(q->items, sizeof(RemountItem) * (q->n_items + 1));
        if (!items)
                return -ENOMEM;
        q->items = items;
        items[q->n_items] =
                (RemountItem){ .id = t->id, .target = strdup(t->target), .disk = strdup(t->disk) };
        if (!items[q->n_items].target || !items[q->n_items].disk) {
                item_done(&items[q->n_items]);
                return -ENOMEM;
        }
        q->n_items++;
        return 0;
}

int remount_request(Remounter *r, const char *disk, manager_remount_done_t done, void *userdata) {
        Manager *m = r->manager;
        EngineDevice *d;
        RemountRequest *q;

        if (!device_name_is_valid(disk))
                return -EINVAL;
        d = manager_find_device(m, disk);
        if (!d)
                return -ENODEV;
        q = calloc(1, sizeof(RemountRequest));
        if (!q)
                return -ENOMEM;
        *q = (RemountRequest){ .explicit = true, .done = done, .userdata = userdata };
        for (size_t i = 0; m->mounts && i < m->mounts->n; i++) {
                const TrackedMount *t = &m->mounts->mounts[i];
                if (t->disk && streq(t->disk, d->facts->name) && add_item(q, t) < 0) {
                        request_free(q);
                        return -ENOMEM;
                }
        }
        return enqueue(r, q);
}

void remount_auto(Remounter *r) {
        Manager *m = r->manager;
        uint64_t now = now_usec_monotonic();
        RemountRequest *q = NULL;

        if (!m->mounts || (r->active && r->active->stuck))
                return;
        for (RemountRequest *p = r->queue; p; p = p->next)
                if (!p->explicit)
                        return; /* one automatic pass at a time; it re-reads what it finds */
        for (size_t i = 0; i < m->mounts->n; i++) {
                const TrackedMount *t = &m->mounts->mounts[i];
                const RemountNote *n;
                EngineDevice *d;

                if (!t->pending || !t->disk || t->read_only)
                        continue;
                d = manager_find_device(m, t->disk);
                if (!d || !d->managed || d->decision.desired < 0)
                        continue;
                n = note_find(r, t->target);
                if (n && (n->sticky || (n->id == t->id && now < n->until_usec)))
                        continue;
                if (r->active && streq(r->active->item.target, t->target))
                        continue;
                if (!q) {
                        q = calloc(1, sizeof(RemountRequest));
                        if (!q)
                                return (void) log_oom();
                }
                if (add_item(q, t) < 0) {
                        request_free(q);
                        return (void) log_oom();
                }
        }
        if (q)
                (void) enqueue(r, q);
}

bool remount_holds(const Remounter *r, const char *disk) {
        return r && r->active && streq(r->active->item.disk, disk);
}

/* --- life cycle ---------------------------------------------------------------------------- */

int remount_new(Manager *m, Remounter **ret) {
        Remounter *r = calloc(1, sizeof(Remounter));
        const char *hook = getenv("STABLEPAGES_TEST_REMOUNT_FAIL");
        int k;

        if (!r)
                return -ENOMEM;
        r->manager = m;
        k = sd_event_add_defer(m->event, &r->defer, on_defer, r);
        if (k >= 0)
                k = sd_event_source_set_enabled(r->defer, SD_EVENT_OFF);
        if (k < 0) {
                remount_free(r);
                return k;
        }
        (void) sd_event_source_set_description(r->defer, "remount-queue");
        for (const char *p = hook; p && *p;) {
                size_t n = strcspn(p, ",");
                if (strneq(p, "mount", 5) && (n == 5 || p[5] == ':'))
                        r->test_fail_mounts = n == 5 ? 1 : (unsigned) atoi(p + 6);
                else if (n == 4 && strneq(p, "scan", 4))
                        r->test_skip_scan = true;
                p += n + (p[n] == ',');
        }
        if (hook)
                log_warning(
                        "STABLEPAGES_TEST_REMOUNT_FAIL=%s (a test hook): the first %u mount attempt(s) of "
                        "cycles fail%s.",
                        hook, r->test_fail_mounts, r->test_skip_scan ? ", the process scan is skipped" : "");
        *ret = r;
        return 0;
}

Remounter *remount_free(Remounter *r) {
        RemountActive *a;

        if (!r)
                return NULL;
        a = r->active;
        if (a && a->pid > 0) {
                RemountReport rep;
                log_info("Waiting for the cycle of %s to finish...", a->label);
                read_report(r, a, &rep);
                a->request = NULL;
                log_full(rep.outcome == REMOUNT_DONE ? LOG_INFO : LOG_ERR, "%s: %s: %s (in %s).", a->label,
                         remount_outcome_to_string(rep.outcome), rep.message, rep.via);
                a->stuck = rep.outcome == REMOUNT_UNMOUNTED;
        }
        if (a && a->stuck)
                log_error(
                        "%s is LEFT UNMOUNTED after a failed cycle; mount it with: mount -t %s -o %s %s %s",
                        a->label, a->plan.fstype, a->options, a->plan.source, a->plan.target);
        active_free(a);
        while (r->queue) {
                RemountRequest *q = r->queue;
                r->queue = q->next;
                request_free(q); /* requesters are not called back */
        }
        for (size_t i = 0; i < r->n_notes; i++) {
                reason_unref(r, r->notes[i].reason);
                free(r->notes[i].target);
                free(r->notes[i].reason);
        }
        free(r->notes);
        sd_event_source_disable_unref(r->defer);
        sd_event_source_disable_unref(r->retry);
        return mfree(r);
}
