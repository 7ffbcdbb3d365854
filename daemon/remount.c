/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>

#include "flag.h"
#include "log.h"
#include "message-id.h"
#include "remount.h"
#include "sysfs.h"
#include "util.h"

#define REASON_PENDING "takes effect at next mount"

/* While a stop waits for a cycle, it asks systemd for this much more time at a time. */
#define STOP_EXTEND_USEC (30 * USEC_PER_SEC)

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
        remount_done_t done;
        void *userdata;
        RemountItem *items;
        size_t n_items, pos;
        RemountResult *results;
        size_t n_results;
} RemountRequest;

/* A cycle, or a filesystem a cycle left unmounted (mounted back from its journal: replays). */
typedef struct RemountActive {
        RemountRequest *request; /* whom to tell; NULL once told */
        RemountItem item;
        char *label; /* "TARGET (FSTYPE on DISK)" */
        RemountJournal journal;
        char *journal_path;
        char *options;
        int disk_fd;  /* the disk's sysfs directory, pinned (flag.h): the child writes its flag */
        bool replay;  /* mount it back as the journal says */
        bool give_up; /* left unmounted, and retrying cannot help */
        bool checked; /* a replay (or the cycle) found it unmounted: not just read from a journal */
        char *reason; /* why it is not mounted, while it is not */
        pid_t pid;
        int report_fd;
        sd_event_source *io;
        uint64_t start_usec;
        unsigned retries;
        uint64_t backoff_usec;
        uint64_t due_usec; /* CLOCK_MONOTONIC: its next replay */
} RemountActive;

struct Remounter {
        RemountHost host;
        sd_event_source *defer, *retry;
        RemountRequest *queue;     /* the head is the request being worked on */
        RemountActive *running;    /* the cycle or replay whose process runs */
        RemountActive **unmounted; /* left unmounted: waiting for a replay, or given up */
        size_t n_unmounted;
        RemountNote *notes;
        size_t n_notes;
        char **retired; /* reasons of notes replaced since remount_annotate(): a tracked mount may
                         * still show one, so they are freed there */
        size_t n_retired;
        unsigned test_fail_mounts;
        uint64_t test_job_timeout_usec;
        bool test_skip_scan;
        char *test_pause;
};

static void item_done(RemountItem *i) {
        free(i->target);
        free(i->disk);
}

static void result_done(RemountResult *r) {
        free(r->target);
        free(r->disk);
        free(r->message);
        free(r->detail);
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
        if (a->disk_fd >= 0)
                close(a->disk_fd);
        item_done(&a->item);
        remount_journal_done(&a->journal);
        free(a->journal_path);
        free(a->label);
        free(a->options);
        free(a->reason);
        free(a);
}

static void schedule(Remounter *r) {
        int k = sd_event_source_set_enabled(r->defer, SD_EVENT_ONESHOT);
        if (k < 0)
                log_error_errno(k, "Cannot schedule the remount queue: %m");
}

/* Takes a from the list of filesystems left unmounted, if it is there. */
static void unmounted_take(Remounter *r, RemountActive *a) {
        for (size_t i = 0; i < r->n_unmounted; i++)
                if (r->unmounted[i] == a) {
                        memmove(&r->unmounted[i], &r->unmounted[i + 1],
                                sizeof(RemountActive *) * (r->n_unmounted - i - 1));
                        r->n_unmounted--;
                        return;
                }
}

/* Adds a to the list of filesystems left unmounted. Returns 0 or -ENOMEM. */
static int unmounted_add(Remounter *r, RemountActive *a) {
        RemountActive **l = realloc(r->unmounted, sizeof(RemountActive *) * (r->n_unmounted + 1));
        if (!l)
                return -ENOMEM;
        r->unmounted = l;
        l[r->n_unmounted++] = a;
        return 0;
}

/* The cycle, replay or left-unmounted filesystem that holds disk, or NULL. */
static const RemountActive *holder_of(const Remounter *r, const char *disk) {
        if (r->running && streq(r->running->item.disk, disk))
                return r->running;
        for (size_t i = 0; i < r->n_unmounted; i++)
                if (streq(r->unmounted[i]->item.disk, disk))
                        return r->unmounted[i];
        return NULL;
}

/* --- notes: why a pending mount was not cycled ------------------------------------------- */

static RemountNote *note_find(Remounter *r, const char *target) {
        for (size_t i = 0; i < r->n_notes; i++)
                if (streq(r->notes[i].target, target))
                        return &r->notes[i];
        return NULL;
}

/* Takes a reason a tracked mount may show until the next remount_annotate(). */
static void reason_retire(Remounter *r, char *reason) {
        char **l;

        if (!reason)
                return;
        l = realloc(r->retired, sizeof(char *) * (r->n_retired + 1));
        if (!l)
                return (void) log_oom(); /* leaked rather than freed under a tracked mount */
        r->retired = l;
        l[r->n_retired++] = reason;
}

static void note_drop(Remounter *r, const char *target) {
        RemountNote *n = note_find(r, target);
        if (!n)
                return;
        free(n->target);
        reason_retire(r, n->reason);
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
        reason_retire(r, n->reason);
        n->reason = reason;
        n->id = id;
        n->sticky = sticky;
        n->until_usec = until;
}

/* --- results ------------------------------------------------------------------------------- */

/* The tracked mount id on target, else the one on target, or NULL. */
static const TrackedMount *find_tracked(const Remounter *r, int id, const char *target) {
        const MountTracker *mounts = r->host.mounts;
        const TrackedMount *by_target = NULL;

        for (size_t i = 0; mounts && i < mounts->n; i++) {
                const TrackedMount *t = &mounts->mounts[i];
                if (!streq(t->target, target))
                        continue;
                if (t->id == id)
                        return t;
                by_target = t;
        }
        return by_target;
}

/* How one filesystem's cycle, or the decision not to cycle it, ended: what conclude() reports. */
typedef struct Conclusion {
        const RemountItem *item;
        const char *label; /* how the logs name it; NULL: its target */
        int id;            /* the mount id its note is about */
        RemountOutcome outcome;
        const char *why;    /* the bare reason, for everyone ("busy: a process has a file open on it") */
        const char *detail; /* the same naming another user's process or file, for root ("busy: PID
                             * 5 (sleep) has a file open on it: /x/y"); NULL: why says it all */
        const char *via;    /* what ran the cycle ("systemd", "the daemon"); NULL: "?" */
        uint64_t duration_usec;
        bool is_static;              /* a refusal that holds while the mount stays as it is: no re-check */
        bool pending;                /* the flag waits for a cycle: say so */
        bool stale;                  /* not mounted back: its disk or filesystem is another one now */
        const RemountActive *active; /* the cycle, for the retry of a filesystem left unmounted */
} Conclusion;

/* The sentence of c with its reason why, and in *ret_level how loud to log it: each new reason
 * of a refusal once at notice level, its periodic re-checks quietly. prior is the filesystem's
 * note before this one. NULL on ENOMEM. */
static char *conclusion_message(const Conclusion *c, const char *why, const RemountRequest *q,
                                const RemountNote *prior, int *ret_level) {
        const char *label = c->label ?: c->item->target;
        const char *via = !isempty(c->via) ? c->via : "?";
        const RemountActive *a = c->active;
        double ms = (double) c->duration_usec / 1000.0;

        *ret_level = LOG_ERR;
        switch (c->outcome) {
        case REMOUNT_DONE:
                *ret_level = LOG_INFO;
                return strdup_printf("%s: unmounted and mounted again in %.1f ms, in %s; %s", label, ms, via,
                                     why);
        case REMOUNT_NOTHING:
                *ret_level = q && q->explicit ? LOG_INFO : LOG_DEBUG;
                return strdup_printf("%s: nothing to do: %s", label, why);
        case REMOUNT_REFUSED:
        case REMOUNT_BUSY:
        case REMOUNT_FAILED:
                *ret_level = c->outcome == REMOUNT_FAILED                              ? LOG_WARNING
                             : q && q->explicit                                        ? LOG_NOTICE
                             : prior && prior->reason && strstr(prior->reason, c->why) ? LOG_DEBUG
                                                                                       : LOG_NOTICE;
                return strdup_printf("%s: not cycled: %s%s%s", label, why,
                                     c->outcome == REMOUNT_BUSY ? "; still mounted as before" : "",
                                     c->pending ? "; " REASON_PENDING : "");
        case REMOUNT_RESTORED:
        case REMOUNT_DIFFERENT:
                return strdup_printf("%s: THE CYCLE FAILED: %s (in %s, %.1f ms); %s", label, why, via, ms,
                                     c->outcome == REMOUNT_RESTORED
                                             ? "it keeps its old state, " REASON_PENDING
                                             : "left as it is");
        case REMOUNT_UNMOUNTED:
                if (c->stale) /* nothing was done, anywhere */
                        return strdup_printf("%s: NOT MOUNTED: %s", label, why);
                if (a && a->give_up)
                        return strdup_printf(
                                "%s: NOT MOUNTED: %s (in %s); check the mount point and mount it "
                                "by hand (source %s, type %s, options %s)",
                                label, why, via, a->journal.plan.source, a->journal.plan.fstype, a->options);
                return strdup_printf("%s: NOT MOUNTED: %s (in %s); retrying in %llu s", label, why, via,
                                     (unsigned long long) ((a ? a->backoff_usec : REMOUNT_RETRY_MIN_USEC) /
                                                           USEC_PER_SEC));
        default:
                return NULL;
        }
}

/* Keeps in the filesystem's note why its flag is still pending: dropped once cycled, re-checked
 * after REMOUNT_RECHECK_USEC when refused for a reason that can pass, kept (sticky) when the
 * cycle failed. */
static void conclusion_note(Remounter *r, const Conclusion *c) {
        const char *target = c->item->target;

        switch (c->outcome) {
        case REMOUNT_DONE:
                note_drop(r, target);
                break;
        case REMOUNT_REFUSED:
        case REMOUNT_BUSY:
        case REMOUNT_FAILED:
                note_set(r, target, c->id, false,
                         c->is_static ? UINT64_MAX : now_usec_monotonic() + REMOUNT_RECHECK_USEC, c->why,
                         false);
                break;
        case REMOUNT_RESTORED:
        case REMOUNT_DIFFERENT:
        case REMOUNT_UNMOUNTED:
                if (c->stale)
                        note_drop(r, target); /* what is mounted there next is another filesystem */
                else
                        note_set(r, target, c->id, true, UINT64_MAX, c->why, true);
                break;
        default:
                break;
        }
}

/* The MESSAGE_ID of a cycle's outcome that an administrator looks for (message-id.h), or NULL. */
static const char *conclusion_message_id(RemountOutcome o) {
        switch (o) {
        case REMOUNT_DONE:
                return SP_MESSAGE_REMOUNT_DONE;
        case REMOUNT_RESTORED:
        case REMOUNT_UNMOUNTED:
        case REMOUNT_DIFFERENT:
        case REMOUNT_FAILED:
                return SP_MESSAGE_REMOUNT_FAILED;
        default:
                return NULL;
        }
}

/* Builds the result of c, logs it (with its detail), keeps the note, tells the host and the
 * request q (may be NULL). Takes nothing. */
static void conclude(Remounter *r, RemountRequest *q, const Conclusion *c) {
        const RemountNote *prior = note_find(r, c->item->target);
        RemountResult res = {
                .target = strdup(c->item->target),
                .disk = strdup(c->item->disk),
                .outcome = c->outcome,
                .ok = c->outcome == REMOUNT_DONE || c->outcome == REMOUNT_NOTHING,
                .duration_usec = c->duration_usec,
        };
        int level;

        res.message = conclusion_message(c, c->why, q, prior, &level);
        if (c->detail)
                res.detail = conclusion_message(c, c->detail, q, prior, &level);
        conclusion_note(r, c);
        if (!res.target || !res.disk || !res.message || (c->detail && !res.detail)) {
                result_done(&res);
                return (void) log_oom();
        }
        log_struct(level, conclusion_message_id(c->outcome),
                   LOG_FIELDS("STABLEPAGES_DEVICE", res.disk, "STABLEPAGES_MOUNT", res.target), "%s",
                   res.detail ?: res.message);

        if (r->host.finished)
                r->host.finished(r->host.userdata, &res);
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

static int spawn(Remounter *r, RemountActive *a) {
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

/* Pins the sysfs directory of a's disk (flag.h): the child writes its flag when it mounts with
 * another state. */
static int open_flag(Remounter *r, RemountActive *a, char **ret_reason) {
        a->disk_fd = flag_pin_disk(r->host.engine->sysfs_root, a->item.disk);
        if (a->disk_fd >= 0)
                return 0;
        if (ret_reason)
                *ret_reason = strdup_printf("cannot open %s/block/%s: %s", r->host.engine->sysfs_root,
                                            a->item.disk, strerror(-a->disk_fd));
        return a->disk_fd;
}
/* Why a filesystem is not cycled now, found by the checks of start_item(). */
typedef struct Refusal {
        RemountOutcome outcome;
        bool is_static; /* holds while the mount stays as it is: no automatic re-check */
        const char *why;
        char *owned; /* why, when it was made up for this refusal */
} Refusal;

static void refusal_done(Refusal *n) {
        n->owned = mfree(n->owned);
}

/* Records a refusal saying why (static, or owned: taken). Returns 1. */
static int refuse(Refusal *n, RemountOutcome outcome, bool is_static, const char *why, char *owned) {
        free(n->owned);
        *n = (Refusal){ .outcome = outcome, .is_static = is_static, .why = owned ?: why, .owned = owned };
        return 1;
}

/* What the daemon knows against a cycle of t: NeverRemount=, nothing pending, a disk it
 * leaves alone or that a cycle left a filesystem of unmounted, the filesystem type, a loop
 * device that would go away with its last mount. Returns 0, 1 (refused: *no) or -errno. */
static int check_item(Remounter *r, const RemountItem *it, const TrackedMount *t, Refusal *no) {
        const Engine *e = r->host.engine;
        _cleanup_free_ char *reason = NULL, *attr = NULL;
        RemountDisk d;
        long long v;
        int k;

        k = remount_check_target(t->target, e->config.never_remount, &reason);
        if (k != 0)
                return k < 0 ? k : refuse(no, REMOUNT_REFUSED, true, NULL, TAKE_PTR(reason));
        if (!t->pending)
                return refuse(no, REMOUNT_NOTHING, true, t->reason ?: "not pending", NULL);
        k = r->host.find_disk(r->host.userdata, it->disk, &d);
        if (k < 0 || !d.managed) {
                reason = strdup_printf("the daemon leaves %s alone (%s)", it->disk,
                                       k >= 0 && d.reason ? d.reason : "not managed");
                return reason ? refuse(no, REMOUNT_REFUSED, true, NULL, TAKE_PTR(reason)) : -ENOMEM;
        }
        const RemountActive *h = holder_of(r, it->disk);
        if (h) {
                reason = strdup_printf(
                        "%s, on the same disk, is left unmounted by a cycle; no other cycle on %s "
                        "until it is mounted again",
                        h->item.target, it->disk);
                return reason ? refuse(no, REMOUNT_REFUSED, false, NULL, TAKE_PTR(reason)) : -ENOMEM;
        }
        k = remount_check_fstype(t->fstype, &reason);
        if (k != 0)
                return k < 0 ? k : refuse(no, REMOUNT_REFUSED, true, NULL, TAKE_PTR(reason));
        attr = strdup_printf("block/%s/loop/autoclear", it->disk);
        if (!attr)
                return -ENOMEM;
        if (sysfs_read_int(e->sysfs_root, attr, &v) >= 0) {
                k = remount_check_loop_autoclear(t->source, (int) v, &reason);
                if (k != 0)
                        return k < 0 ? k : refuse(no, REMOUNT_REFUSED, true, NULL, TAKE_PTR(reason));
        }
        return 0;
}

/* Plans the cycle of t from the system's mount table (PID 1's, as the tracker reads it) and
 * checks what the system says against it: the mounts below and on top, swap files on it,
 * loop devices backed by files on it. Returns 0 (*ret_plan filled), 1 (refused: *no) or
 * -errno. */
static int plan_item(Remounter *r, const TrackedMount *t, RemountPlan *ret_plan, Refusal *no) {
        const char *mountinfo = r->host.mounts->mountinfo, *sysfs_root = r->host.engine->sysfs_root;
        _cleanup_(remount_plan_done) RemountPlan plan = {};
        _cleanup_free_ char *reason = NULL, *swaps = NULL;
        _cleanup_strv_free_ char **block = NULL;
        struct libmnt_table *table;
        int k;

        table = mnt_new_table_from_file(mountinfo);
        if (!table) {
                reason = strdup_printf("cannot read %s: %s", mountinfo, strerror(errno));
                return reason ? refuse(no, REMOUNT_FAILED, false, NULL, TAKE_PTR(reason)) : -ENOMEM;
        }
        k = remount_plan_from_table(table, t->id, t->source_devnum, &plan);
        if (k == 0)
                k = remount_check_table(table, &plan, &reason);
        mnt_unref_table(table);
        if (k == -ENOENT)
                return refuse(no, REMOUNT_NOTHING, true, "it is not mounted any more", NULL);
        if (k != 0)
                return k < 0 ? k : refuse(no, REMOUNT_REFUSED, false, NULL, TAKE_PTR(reason));
        if (read_full_file("/proc/swaps", 1024 * 1024, &swaps, NULL) >= 0) {
                k = remount_check_swaps(swaps, plan.target, &reason);
                if (k != 0)
                        return k < 0 ? k : refuse(no, REMOUNT_REFUSED, false, NULL, TAKE_PTR(reason));
        }
        if (sysfs_list_dir(sysfs_root, "block", &block) >= 0)
                STRV_FOREACH (b, block) {
                        _cleanup_free_ char *backing = NULL, *path = NULL;
                        if (!startswith(*b, "loop"))
                                continue;
                        path = strdup_printf("block/%s/loop/backing_file", *b);
                        if (!path)
                                return -ENOMEM;
                        if (sysfs_read_string(sysfs_root, path, &backing) < 0)
                                continue;
                        k = remount_check_loop_backing(*b, backing, plan.target, &reason);
                        if (k != 0)
                                return k < 0 ? k
                                             : refuse(no, REMOUNT_REFUSED, false, NULL, TAKE_PTR(reason));
                }
        *ret_plan = plan;
        plan = (RemountPlan){};
        return 0;
}

/* Writes the flag as decided (normally written by the last reconcile already). The host
 * rescans: *t and *d are looked up again. Returns 0, 1 (nothing to cycle any more, or the write
 * failed: *no) or -ENOMEM. */
static int set_flag(Remounter *r, const RemountItem *it, const RemountPlan *plan, const TrackedMount **t,
                    RemountDisk *d, Refusal *no) {
        _cleanup_free_ char *message = NULL;
        int k, found;

        k = r->host.apply(r->host.userdata, it->disk, &message);
        if (k == -ENOMEM)
                return k;
        *t = find_tracked(r, plan->id, plan->target);
        found = r->host.find_disk(r->host.userdata, it->disk, d);
        if (k < 0 && k != -EPERM) {
                char *reason =
                        strdup_printf("cannot set the flag of %s: %s", it->disk, message ?: strerror(-k));
                return reason ? refuse(no, REMOUNT_FAILED, false, NULL, reason) : -ENOMEM;
        }
        if (!*t || (*t)->id != plan->id)
                return refuse(no, REMOUNT_NOTHING, true, "it is not mounted any more", NULL);
        if (!(*t)->pending || found < 0)
                return refuse(no, REMOUNT_NOTHING, true, (*t)->reason ?: "not pending any more", NULL);
        return 0;
}

/* The cycle of it, from label and plan (both taken) and the flag before (t) and after (d).
 * Returns NULL on -ENOMEM. */
static RemountActive *active_new(Remounter *r, RemountRequest *q, const RemountItem *it, char *label,
                                 RemountPlan *plan, const TrackedMount *t, const RemountDisk *d,
                                 uint64_t start) {
        RemountActive *a = calloc(1, sizeof(RemountActive));
        char *uuid = NULL;

        /* The filesystem's UUID as udev knew it (the daemon may not open the device to probe
         * it itself: DevicePolicy=closed), to tell it from another one at a replay. */
        if (!a || remount_fs_uuid(r->host.engine->udev_data_dir, plan->source_devnum, &uuid) < 0) {
                free(a);
                free(label);
                return NULL;
        }
        *a = (RemountActive){
                .request = q,
                .item = { .id = it->id, .target = strdup(it->target), .disk = strdup(it->disk) },
                .label = label,
                .journal = { .disk = strdup(it->disk),
                             .diskseq = d->diskseq,
                             .fs_uuid = uuid,
                             .identified = true,
                             .plan = *plan,
                             .old_flag = t->effective ? 1 : 0,
                             .new_flag = d->flag > 0 ? 1 : 0,
                             .stage = REMOUNT_STAGE_PREPARED },
                .journal_path = remount_journal_path(r->host.engine->runtime_dir, plan->target),
                .options = remount_plan_options(plan),
                .disk_fd = -EBADF,
                .report_fd = -EBADF,
                .start_usec = start,
                .backoff_usec = REMOUNT_RETRY_MIN_USEC,
        };
        *plan = (RemountPlan){};
        if (!a->item.target || !a->item.disk || !a->journal.disk || !a->options || !a->journal_path) {
                active_free(a);
                return NULL;
        }
        return a;
}

/* Journals the cycle a and starts its child, which holds the disk from now on. Returns 0,
 * 1 (not started: *no) or -ENOMEM. */
static int launch(Remounter *r, RemountActive *a, Refusal *no) {
        _cleanup_free_ char *reason = NULL;
        int k;

        /* The journal of an earlier cycle of this mount point (given up, or not readable) says
         * something the administrator must see first. */
        if (access(a->journal_path, F_OK) >= 0) {
                reason = strdup_printf("the journal of an earlier cycle of it is still there (%s)",
                                       a->journal_path);
                return reason ? refuse(no, REMOUNT_REFUSED, false, NULL, TAKE_PTR(reason)) : -ENOMEM;
        }
        k = open_flag(r, a, &reason);
        if (k == -ENOMEM || (k < 0 && !reason))
                return -ENOMEM;
        if (k < 0)
                return refuse(no, REMOUNT_FAILED, false, NULL, TAKE_PTR(reason));
        k = remount_journal_save(a->journal_path, &a->journal);
        if (k < 0) {
                reason = strdup_printf("cannot write the journal %s: %s", a->journal_path, strerror(-k));
                return reason ? refuse(no, REMOUNT_FAILED, false, NULL, TAKE_PTR(reason)) : -ENOMEM;
        }
        log_debug("%s: cycling it (stable writes %s -> %s), options %s.", a->label,
                  a->journal.old_flag ? "on" : "off", a->journal.new_flag ? "on" : "off", a->options);
        r->running = a; /* holds the disk from now on */
        k = spawn(r, a);
        if (k < 0) {
                r->running = NULL;
                (void) remount_journal_remove(a->journal_path);
                reason = strdup_printf("cannot start the cycle: %s", strerror(-k));
                return reason ? refuse(no, REMOUNT_FAILED, false, NULL, TAKE_PTR(reason)) : -ENOMEM;
        }
        return 0;
}

/* Checks one filesystem and, when nothing is against it, starts its cycle. Returns 1 when a
 * child runs (the result comes later), 0 when concluded here. */
static int start_item(Remounter *r, RemountRequest *q, const RemountItem *it) {
        uint64_t start = now_usec_monotonic();
        _cleanup_(refusal_done) Refusal no = {};
        _cleanup_(remount_plan_done) RemountPlan plan = {};
        _cleanup_free_ char *label = NULL;
        const TrackedMount *t;
        RemountDisk d = {};
        RemountActive *a;
        int k;

        t = find_tracked(r, it->id, it->target);
        if (!t)
                k = refuse(&no, REMOUNT_NOTHING, true, "it is not mounted any more", NULL);
        else {
                label = strdup_printf("%s (%s on %s)", t->target, t->fstype, it->disk);
                if (!label)
                        return -ENOMEM;
                k = check_item(r, it, t, &no);
                if (k == 0)
                        k = plan_item(r, t, &plan, &no);
                if (k == 0)
                        k = set_flag(r, it, &plan, &t, &d, &no);
        }
        if (k == 0) {
                a = active_new(r, q, it, TAKE_PTR(label), &plan, t, &d, start);
                if (!a)
                        return -ENOMEM;
                k = launch(r, a, &no);
                if (k == 0)
                        return 1;
                label = TAKE_PTR(a->label);
                active_free(a);
        }
        if (k < 0)
                return k;
        conclude(r, q,
                 &(Conclusion){ .item = it,
                                .label = label,
                                .id = t ? t->id : it->id,
                                .outcome = no.outcome,
                                .why = no.why,
                                .duration_usec = now_usec_monotonic() - start,
                                .is_static = no.is_static,
                                .pending = !t || t->pending });
        return 0;
}

/* --- the child's report --------------------------------------------------------------------- */

static void complete_request(Remounter *r, RemountRequest *q) {
        RemountRequest **p = &r->queue;

        while (*p && *p != q)
                p = &(*p)->next;
        if (*p)
                *p = q->next;
        if (q->done)
                q->done(q->results, q->n_results, q->userdata);
        request_free(q);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        schedule(userdata);
        return 0;
}

/* Arms the retry timer for the earliest replay due. */
static void arm_retry(Remounter *r) {
        uint64_t due = UINT64_MAX;
        int k;

        for (size_t i = 0; i < r->n_unmounted; i++)
                if (!r->unmounted[i]->give_up)
                        due = MIN(due, r->unmounted[i]->due_usec);
        if (due == UINT64_MAX) {
                (void) sd_event_source_set_enabled(r->retry, SD_EVENT_OFF);
                return;
        }
        if (!r->retry)
                k = sd_event_add_time(r->host.event, &r->retry, CLOCK_MONOTONIC, due, 0, on_retry, r);
        else {
                k = sd_event_source_set_time(r->retry, due);
                if (k >= 0)
                        k = sd_event_source_set_enabled(r->retry, SD_EVENT_ONESHOT);
        }
        if (k < 0)
                log_error_errno(k, "Cannot arm the retry timer of the filesystems left unmounted: %m");
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

/* a is left unmounted: it waits for its next replay (or for someone to mount it). why may be
 * a->reason itself. */
static void park(Remounter *r, RemountActive *a, const char *why) {
        char *reason = strdup(why ?: "?");

        free(a->reason);
        a->reason = reason;
        a->replay = true;
        a->due_usec = now_usec_monotonic() + a->backoff_usec;
        if (unmounted_add(r, a) < 0) {
                log_oom();
                log_error("%s is NOT MOUNTED; its journal %s stays for the next start.", a->label,
                          a->journal_path);
                active_free(a);
                return;
        }
        arm_retry(r);
}

/* The cycle or replay is over: its journal goes. */
static void finish(Remounter *r, RemountActive *a) {
        int k = remount_journal_remove(a->journal_path);
        if (k < 0)
                log_warning_errno(k, "Cannot remove the journal %s: %m", a->journal_path);
        active_free(a);
}

/* Takes what the child wrote to the journal (how far it got, where and how it unmounted). */
static void reload_journal(RemountActive *a) {
        _cleanup_(remount_journal_done) RemountJournal now = {};

        if (remount_journal_load(a->journal_path, &now) < 0)
                return;
        a->journal.stage = now.stage;
        a->journal.parent_dev = now.parent_dev;
        a->journal.parent_ino = now.parent_ino;
        a->journal.sb_ino = now.sb_ino;
        a->journal.unit_file = now.unit_file;
        if (now.unit && !a->journal.unit)
                a->journal.unit = TAKE_PTR(now.unit);
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
        conclude(r, q,
                 &(Conclusion){ .item = &a->item,
                                .label = a->label,
                                .id = a->item.id,
                                .outcome = REMOUNT_UNMOUNTED,
                                .why = why ?: rep->message,
                                .via = rep->via,
                                .duration_usec = duration,
                                .stale = true,
                                .active = a });
        active_free(a);
        r->host.reconcile(r->host.userdata);
        schedule(r);
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
                const TrackedMount *t = find_tracked(r, rep->new_id, a->journal.plan.target);
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

static void handle_report(Remounter *r, RemountActive *a, const RemountReport *rep) {
        uint64_t duration = now_usec_monotonic() - a->start_usec;
        RemountOutcome outcome = rep->outcome;
        _cleanup_free_ char *why = NULL;
        int id = rep->new_id ?: a->journal.plan.id;

        r->running = NULL;
        if (a->replay && outcome == REMOUNT_UNMOUNTED && rep->error == EWOULDBLOCK) {
                /* Not looked at: the cycle of an earlier daemon still runs (it holds the lock). */
                log_notice("%s: %s; checking again in %llu s.", a->label, rep->message,
                           (unsigned long long) (REMOUNT_RETRY_MIN_USEC / USEC_PER_SEC));
                a->backoff_usec = REMOUNT_RETRY_MIN_USEC;
                park(r, a, rep->message);
                schedule(r);
                return;
        }
        a->checked = true;
        r->test_fail_mounts -= MIN(r->test_fail_mounts, rep->mount_attempts);
        if (rep->flag_written >= 0)
                r->host.flag_written(r->host.userdata, a->item.disk, rep->flag_written);
        if (rep->stale) {
                refuse_stale(r, a, rep, duration);
                return;
        }
        reload_journal(a);
        if (rep->new_id > 0)
                /* A new mount: observed anew, even with the same id, with the state the cycle
                 * knows it mounted it with. */
                r->host.mounted(r->host.userdata, a->journal.plan.id, rep->new_id, a->journal.plan.target,
                                rep->effective);

        why = report_why(r, a, rep, &outcome);
        if (!why)
                (void) log_oom();

        RemountRequest *q = TAKE_PTR(a->request); /* told now; later replays are only signalled */
        conclude(r, q,
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
        if (outcome == REMOUNT_UNMOUNTED) {
                park(r, a, why ?: rep->message);
        } else
                finish(r, a);
        /* Publish the new state (and let the host write the flag again if it wants). */
        r->host.reconcile(r->host.userdata);
        schedule(r);
}

/* The child died without a report: its journal says how far it got. */
static void handle_death(Remounter *r, RemountActive *a, int status) {
        _cleanup_free_ char *why = NULL;
        int k;

        why = strdup_printf("the process of its %s died (%s %d)", a->replay ? "replay" : "cycle",
                            WIFSIGNALED(status) ? "signal" : "status",
                            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        reload_journal(a);
        r->running = NULL;
        a->checked = true;
        if (!a->replay && a->journal.stage == REMOUNT_STAGE_PREPARED) {
                RemountRequest *q = TAKE_PTR(a->request);
                conclude(r, q,
                         &(Conclusion){ .item = &a->item,
                                        .label = a->label,
                                        .id = a->item.id,
                                        .outcome = REMOUNT_FAILED,
                                        .why = why ?: "died",
                                        .via = a->journal.unit ? "systemd" : "the daemon",
                                        .duration_usec = now_usec_monotonic() - a->start_usec,
                                        .pending = true,
                                        .active = a });
                finish(r, a);
                r->host.reconcile(r->host.userdata);
                schedule(r);
                return;
        }
        log_error("%s: %s at stage %s; mounting it back as its journal says.", a->label, why ?: "died",
                  remount_stage_to_string(a->journal.stage));
        if (a->replay) {
                a->retries++;
                a->backoff_usec = MIN(a->backoff_usec * 2, REMOUNT_RETRY_MAX_USEC);
                park(r, a, why);
                schedule(r);
                return;
        }
        /* At once, and the requester hears the replay's outcome. */
        a->replay = true;
        r->running = a;
        k = spawn(r, a);
        if (k < 0) {
                r->running = NULL;
                log_error_errno(k, "%s is NOT MOUNTED and its replay cannot start: %m", a->label);
                park(r, a, why);
        }
}

static void follow(Remounter *r, RemountActive *a) {
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
                follow(r, r->running);
        return 0;
}

/* --- the queue ------------------------------------------------------------------------------ */

/* Starts the earliest replay that is due. Returns true when one runs. */
static bool start_replay(Remounter *r) {
        uint64_t now = now_usec_monotonic();

        for (size_t i = 0; i < r->n_unmounted; i++) {
                RemountActive *a = r->unmounted[i];
                if (a->give_up || a->due_usec > now)
                        continue;
                unmounted_take(r, a);
                reload_journal(a); /* a cycle of an earlier daemon may have gone on meanwhile */
                r->running = a;
                int k = spawn(r, a);
                if (k < 0) {
                        r->running = NULL;
                        _cleanup_free_ char *why =
                                strdup_printf("its replay cannot start: %s", strerror(-k));
                        log_error_errno(k, "%s is NOT MOUNTED and its replay cannot start: %m", a->label);
                        a->backoff_usec = MIN(a->backoff_usec * 2, REMOUNT_RETRY_MAX_USEC);
                        park(r, a, why ?: a->reason);
                        return false;
                }
                if (!a->io)
                        follow(r, a); /* could not watch it: waited here */
                return true;
        }
        arm_retry(r);
        return false;
}

static void process(Remounter *r) {
        while (!r->running) {
                if (start_replay(r))
                        return;
                RemountRequest *q = r->queue;
                if (!q)
                        return;
                if (q->pos >= q->n_items) {
                        complete_request(r, q);
                        /* Show the reasons of what was refused. */
                        if (!r->queue)
                                r->host.reconcile(r->host.userdata);
                        continue;
                }
                const RemountItem *it = &q->items[q->pos++];
                int k = start_item(r, q, it);
                if (k < 0)
                        conclude(r, q,
                                 &(Conclusion){ .item = it,
                                                .id = it->id,
                                                .outcome = REMOUNT_FAILED,
                                                .why = strerror(-k),
                                                .pending = true });
                if (k > 0 && r->running && !r->running->io)
                        follow(r, r->running); /* could not watch it: wait here */
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

int remount_request(Remounter *r, const RemountDisk *disk, remount_done_t done, void *userdata) {
        const MountTracker *mounts = r->host.mounts;
        RemountRequest *q = calloc(1, sizeof(RemountRequest));

        if (!q)
                return -ENOMEM;
        *q = (RemountRequest){ .explicit = true, .done = done, .userdata = userdata };
        for (size_t i = 0; mounts && i < mounts->n; i++) {
                const TrackedMount *t = &mounts->mounts[i];
                if (t->disk && streq(t->disk, disk->name) && add_item(q, t) < 0) {
                        request_free(q);
                        return -ENOMEM;
                }
        }
        return enqueue(r, q);
}

void remount_auto(Remounter *r) {
        const MountTracker *mounts = r->host.mounts;
        uint64_t now = now_usec_monotonic();
        RemountRequest *q = NULL;

        if (!mounts)
                return;
        for (RemountRequest *p = r->queue; p; p = p->next)
                if (!p->explicit)
                        return; /* one automatic pass at a time; it re-reads what it finds */
        for (size_t i = 0; i < mounts->n; i++) {
                const TrackedMount *t = &mounts->mounts[i];
                const RemountNote *n;
                RemountDisk d;

                if (!t->pending || !t->disk || t->read_only || holder_of(r, t->disk))
                        continue;
                if (r->host.find_disk(r->host.userdata, t->disk, &d) < 0 || !d.managed)
                        continue;
                n = note_find(r, t->target);
                if (n && (n->sticky || (n->id == t->id && now < n->until_usec)))
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
        return r && holder_of(r, disk);
}

/* --- what is left unmounted ----------------------------------------------------------------- */

void remount_foreach_unmounted(const Remounter *r, remount_unmounted_f f, void *userdata) {
        for (size_t i = 0; r && i < r->n_unmounted; i++) {
                const RemountActive *a = r->unmounted[i];
                f(a->item.target, a->item.disk, a->reason ?: "?", !a->give_up, userdata);
        }
        if (r && r->running && r->running->replay)
                f(r->running->item.target, r->running->item.disk, r->running->reason ?: "being mounted back",
                  true, userdata);
}

static void unmounted_json(const char *target, const char *disk, const char *reason, bool retrying,
                           void *userdata) {
        JsonWriter *w = userdata;

        json_object_begin(w);
        json_key(w, "target");
        json_string(w, target);
        json_key(w, "disk");
        json_string(w, disk);
        json_key(w, "reason");
        json_string(w, reason);
        json_key(w, "retrying");
        json_bool(w, retrying);
        json_object_end(w);
}

void remount_unmounted_json(const Remounter *r, JsonWriter *w) {
        json_array_begin(w);
        remount_foreach_unmounted(r, unmounted_json, w);
        json_array_end(w);
}

/* Points the tracked mounts of t away from the retired reasons, and frees them. */
static void retired_free(Remounter *r, MountTracker *t) {
        for (size_t i = 0; t && i < t->n; i++)
                for (size_t k = 0; k < r->n_retired; k++)
                        if (t->mounts[i].reason == r->retired[k])
                                t->mounts[i].reason = REASON_PENDING;
        for (size_t k = 0; k < r->n_retired; k++)
                free(r->retired[k]);
        r->retired = mfree(r->retired);
        r->n_retired = 0;
}

void remount_annotate(Remounter *r, MountTracker *t) {
        retired_free(r, t);
        for (size_t i = 0; t && i < t->n; i++) {
                TrackedMount *m = &t->mounts[i];
                RemountNote *n = m->pending ? note_find(r, m->target) : NULL;
                if (n && (n->sticky || n->id == m->id))
                        m->reason = n->reason;
        }
        /* A filesystem left unmounted that somebody mounted again is not ours to mount. (A
         * journal read at start is checked by its replay first: its cycle may have mounted it.) */
        for (size_t i = 0; t && i < r->n_unmounted;) {
                RemountActive *a = r->unmounted[i];
                const TrackedMount *found = NULL;
                if (!a->checked) {
                        i++;
                        continue;
                }
                for (size_t k = 0; !found && k < t->n; k++)
                        if (t->mounts[k].source_devnum == a->journal.plan.source_devnum &&
                            streq(t->mounts[k].fstype, a->journal.plan.fstype))
                                found = &t->mounts[k];
                if (!found) {
                        i++;
                        continue;
                }
                unmounted_take(r, a);
                _cleanup_free_ char *why =
                        strdup_printf("it was mounted again by someone else, on %s", found->target);
                conclude(r, NULL,
                         &(Conclusion){ .item = &a->item,
                                        .label = a->label,
                                        .id = found->id,
                                        .outcome = REMOUNT_NOTHING,
                                        .why = why ?: "mounted again",
                                        .via = "?",
                                        .is_static = true,
                                        .active = a });
                log_notice("%s: mounted again by someone else on %s; forgetting its journal %s.", a->label,
                           found->target, a->journal_path);
                finish(r, a);
        }
}

/* --- life cycle ---------------------------------------------------------------------------- */

/* The cycles an earlier run left in flight: each is replayed first thing. */
static void load_journals(Remounter *r) {
        const char *runtime_dir = r->host.engine->runtime_dir;
        _cleanup_strv_free_ char **paths = NULL;
        int k = remount_journal_list(runtime_dir, &paths);

        if (k < 0)
                log_error_errno(k,
                                "Cannot read the journals of cycles in %s/cycles: %m; a filesystem an "
                                "interrupted cycle left unmounted stays unmounted",
                                runtime_dir);
        STRV_FOREACH (p, paths) {
                RemountActive *a = calloc(1, sizeof(RemountActive));
                if (!a)
                        return (void) log_oom();
                *a = (RemountActive){ .disk_fd = -EBADF,
                                      .report_fd = -EBADF,
                                      .replay = true,
                                      .backoff_usec = REMOUNT_RETRY_MIN_USEC };
                k = remount_journal_load(*p, &a->journal);
                if (k < 0) {
                        log_error_errno(
                                k,
                                "Cannot read %s, the journal of an interrupted cycle: %m; the filesystem "
                                "it describes may be left unmounted",
                                *p);
                        active_free(a);
                        continue;
                }
                const RemountPlan *plan = &a->journal.plan;
                a->journal_path = strdup(*p);
                a->item = (RemountItem){ .id = plan->id,
                                         .target = strdup(plan->target),
                                         .disk = strdup(a->journal.disk) };
                a->label = strdup_printf("%s (%s on %s)", plan->target, plan->fstype, a->journal.disk);
                a->options = remount_plan_options(plan);
                a->reason = strdup_printf("an interrupted cycle (at stage %s); being checked",
                                          remount_stage_to_string(a->journal.stage));
                if (!a->journal_path || !a->item.target || !a->item.disk || !a->label || !a->options ||
                    !a->reason || unmounted_add(r, a) < 0) {
                        active_free(a);
                        return (void) log_oom();
                }
                /* The disk that has the name now: its replay checks that it is the journal's. */
                k = open_flag(r, a, NULL);
                if (k < 0 && k != -ENOENT)
                        log_warning_errno(k, "%s: cannot open the sysfs directory of %s: %m", a->label,
                                          a->item.disk);
                log_warning("%s: found the journal of an interrupted cycle (at stage %s, stable writes %s "
                            "-> %s); "
                            "checking it first.",
                            a->label, remount_stage_to_string(a->journal.stage),
                            a->journal.old_flag ? "on" : "off", a->journal.new_flag ? "on" : "off");
        }
        if (r->n_unmounted > 0)
                schedule(r);
}

int remount_new(const RemountHost *host, Remounter **ret) {
        Remounter *r = calloc(1, sizeof(Remounter));
        const char *hook = getenv("STABLEPAGES_TEST_REMOUNT_FAIL"),
                   *pause = getenv("STABLEPAGES_TEST_REMOUNT_PAUSE");
        int k;

        if (!r)
                return -ENOMEM;
        r->host = *host;
        k = sd_event_add_defer(host->event, &r->defer, on_defer, r);
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
                else if (n > 8 && strneq(p, "timeout:", 8))
                        r->test_job_timeout_usec = (uint64_t) MAX(atoi(p + 8), 1) * USEC_PER_SEC;
                p += n + (p[n] == ',');
        }
        if (hook)
                log_warning(
                        "STABLEPAGES_TEST_REMOUNT_FAIL=%s (a test hook): the first %u mount attempt(s) of "
                        "cycles fail%s%s.",
                        hook, r->test_fail_mounts, r->test_skip_scan ? ", the process scan is skipped" : "",
                        r->test_job_timeout_usec > 0 ? ", systemd's jobs time out sooner" : "");
        if (!isempty(pause)) {
                r->test_pause = strdup(pause);
                if (!r->test_pause) {
                        remount_free(r);
                        return -ENOMEM;
                }
                log_warning(
                        "STABLEPAGES_TEST_REMOUNT_PAUSE=%s (a test hook): cycles pause at each step while a "
                        "reader has it open.",
                        pause);
        }
        load_journals(r);
        *ret = r;
        return 0;
}

/* Waits at a stop for the running cycle (and for the replay that follows when its process
 * died), asking systemd for more time while it runs. */
static void wait_running(Remounter *r) {
        while (r->running && r->running->pid > 0) {
                RemountActive *a = r->running;
                struct pollfd p = { .fd = a->report_fd, .events = POLLIN };

                log_info("Waiting for the %s of %s to finish...", a->replay ? "replay" : "cycle", a->label);
                (void) kill(a->pid, SIGTERM); /* gives up before the unmount; else goes on to its end */
                while (poll(&p, 1, (int) (STOP_EXTEND_USEC / 2 / 1000)) == 0 ||
                       (p.revents == 0 && errno == EINTR))
                        (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%llu",
                                          (unsigned long long) STOP_EXTEND_USEC);
                follow(r, a);
        }
}

Remounter *remount_free(Remounter *r) {
        if (!r)
                return NULL;
        wait_running(r);
        for (size_t i = 0; i < r->n_unmounted; i++) {
                RemountActive *a = r->unmounted[i];
                log_error("%s is LEFT UNMOUNTED (%s); the next start of the daemon checks it again from its "
                          "journal %s (source %s, type %s, options %s)",
                          a->label, a->reason ?: "?", a->journal_path, a->journal.plan.source,
                          a->journal.plan.fstype, a->options);
                active_free(a);
        }
        free(r->unmounted);
        /* Requesters hear what was done (the rest of their filesystems are not cycled). */
        while (r->queue)
                complete_request(r, r->queue);
        /* The tracked mounts are not read after this (the host frees them next). */
        for (size_t i = 0; i < r->n_notes; i++) {
                free(r->notes[i].target);
                free(r->notes[i].reason);
        }
        free(r->notes);
        retired_free(r, NULL);
        free(r->test_pause);
        sd_event_source_disable_unref(r->defer);
        sd_event_source_disable_unref(r->retry);
        return mfree(r);
}
