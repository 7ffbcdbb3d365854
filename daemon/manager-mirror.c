/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The risk side of a mirror without stable writes (mirror.h): per md raid1/raid10 disk, the
 * shadow waits and O_DIRECT writes the probe counted since the last check, and the end of each
 * check (md/sync_action back to "idle" after "check", watched through sysfs' poll notification
 * and at every stall poll), whose md/mismatch_cnt is judged and kept with the learned record.
 * A check is started only with MirrorCheckSec= and only on a disk Devices= allows writing. */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/epoll.h>

#include "learned.h"
#include "log.h"
#include "manager-stalls.h"
#include "sysfs.h"
#include "util.h"

#define MIRROR_SAVE_USEC (60 * USEC_PER_SEC) /* the counts since the check are saved this often */

struct MirrorWatch {
        int fd; /* md/sync_action: its poll notification says an action started or ended */
        sd_event_source *io;
        char *action;          /* sync_action at the last look */
        uint64_t shadow_seen;  /* the probe's shadow_count of the disk, added up to here */
        uint64_t direct_seen;  /* ... and direct_count */
        MirrorFigures fig;     /* what is kept across reboots */
        bool dirty;            /* fig changed since it was saved */
        uint64_t saved_usec;   /* CLOCK_BOOTTIME of the last save */
        uint64_t started_usec; /* CLOCK_BOOTTIME of the last check this daemon started, 0 none */
        char *held;            /* why stable writes stay on (fig.diverged), for policy_adapt() */
        char *last;            /* the last check's sentence */
};

/* Writes "check" to md/sync_action of the md disk name under root: the one sysfs write of this
 * file, and never of queue/stable_writes (flag.h). */
static int md_start_check(const char *root, const char *name) {
        _cleanup_free_ char *p = strdup_printf("%s/block/%s/md/sync_action", root, name);
        _cleanup_close_ int fd = -EBADF;

        if (!p)
                return -ENOMEM;
        fd = open(p, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        ssize_t k = write(fd, "check", 5);
        if (k < 0)
                return -errno;
        return k == 5 ? 0 : -EIO;
}

MirrorWatch *mirror_watch_free(MirrorWatch *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->io);
        if (w->fd >= 0)
                (void) close(w->fd);
        free(w->action);
        free(w->held);
        free(w->last);
        return mfree(w);
}

/* The record of d in the learned set, or NULL. */
static const LearnedRecord *mirror_record(Manager *m, EngineDevice *d) {
        if (engine_learned_key(&m->engine, d) < 0)
                return NULL;
        return learned_find(&m->engine.learned, d->learned_key);
}

static int mirror_set_held(MirrorWatch *w) {
        char when[64] = "";

        free(w->held);
        w->held = NULL;
        if (!w->fig.diverged)
                return 0;
        time_t t = (time_t) (w->fig.check_usec / USEC_PER_SEC);
        struct tm tm;
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&t, &tm));
        w->held = strdup_printf(
                "its legs diverged while they were off (md check of %s: mismatch_cnt %" PRIu64 ")", when,
                w->fig.mismatch_cnt);
        return w->held ? 0 : -ENOMEM;
}

/* Saves w's figures with d's learned record (learned as it is, or a mirror-only one). With
 * learn_on, the record also learns on with reason. */
static int mirror_save(Manager *m, EngineDevice *d, MirrorWatch *w, uint64_t now_boot,
                       const char *learn_on) {
        const LearnedRecord *old;
        LearnedRecord rec;
        int r;

        r = engine_learned_key(&m->engine, d);
        if (r < 0)
                return r == -ENOMEM ? r : 0; /* no identity: kept for this daemon's life only */
        old = learned_find(&m->engine.learned, d->learned_key);
        rec = old ? *old : (LearnedRecord){ .learned = LEARNED_NONE, .reason = (char *) "" };
        rec.key = d->learned_key;
        rec.disk = (char *) d->facts->name;
        rec.has_mirror = true;
        rec.mirror = w->fig;
        if (learn_on) {
                rec.learned = LEARNED_ON;
                rec.since_usec = now_usec_realtime();
                rec.reason = (char *) learn_on;
                rec.p99_usec = rec.count = 0;
                rec.budget_usec = m->engine.config.stall_budget_usec;
        }
        r = learned_set(&m->engine.learned, &rec);
        if (r < 0)
                return r;
        r = learned_save(m->engine.state_dir, &m->engine.learned);
        if (r < 0)
                log_error_errno(r, "%s: cannot save the mirror's figures in %s/learned: %m", d->facts->name,
                                m->engine.state_dir);
        w->dirty = false;
        w->saved_usec = now_boot;
        return 0;
}

/* A check of d ended: judge it. Returns 1 when stable writes were turned on, 0, or -ENOMEM. */
static int mirror_check_end(Manager *m, EngineDevice *d, MirrorWatch *w, uint64_t now_boot) {
        _cleanup_free_ char *mismatch_path = NULL, *value = NULL, *reason = NULL;
        long long mismatch;
        bool verdict;
        int r;

        mismatch_path = strdup_printf("block/%s/md/mismatch_cnt", d->facts->name);
        if (!mismatch_path)
                return -ENOMEM;
        r = sysfs_read_int(m->engine.sysfs_root, mismatch_path, &mismatch);
        if (r < 0 || mismatch < 0) {
                log_warning_errno(r < 0 ? r : -EINVAL,
                                  "%s: a check ended, but md/mismatch_cnt cannot be read: %m",
                                  d->facts->name);
                return 0;
        }
        r = mirror_check_ended(&w->fig, d->facts->name, (uint64_t) mismatch, now_usec_realtime(), &reason,
                               &verdict);
        if (r < 0)
                return r;
        free(w->last);
        w->last = strdup(reason);
        r = mirror_set_held(w);
        if (r < 0 || !w->last)
                return -ENOMEM;
        bool balanced = m->engine.config.policy == POLICY_BALANCED && d->class.need == NEED_RECOMMENDED;
        if (verdict)
                log_warning("%s: %s%s.", d->facts->name, reason,
                            balanced ? ""
                                     : " (reported only: Policy= is not balanced or the disk is not only "
                                       "recommended)");
        else
                log_notice("%s: %s.", d->facts->name, reason);
        r = mirror_save(m, d, w, now_boot, verdict && balanced ? reason : NULL);
        if (r < 0)
                return r;
        if (!(verdict && balanced))
                return 0;
        log_notice("%s: Policy=balanced learned on: %s.", d->facts->name, reason);
        return 1;
}

/* Reads d's sync_action and acts on what changed; starts a check when MirrorCheckSec= asks.
 * Returns 1 when something was learned, 0, or -ENOMEM. */
static int mirror_update(Manager *m, EngineDevice *d, DeviceStalls *s, uint64_t now_boot) {
        MirrorWatch *w = s->mirror;
        _cleanup_free_ char *action = NULL;
        char buf[32];
        ssize_t n;
        int r = 0;

        /* What the probe counted since the last look (a reset of the probe starts over). */
        if (s->total.shadow_count < w->shadow_seen || s->total.direct_count < w->direct_seen)
                w->shadow_seen = w->direct_seen = 0;
        if (s->total.shadow_count > w->shadow_seen || s->total.direct_count > w->direct_seen) {
                w->fig.shadow_pages += s->total.shadow_count - w->shadow_seen;
                w->fig.direct_writes += s->total.direct_count - w->direct_seen;
                w->dirty = true;
        }
        w->shadow_seen = s->total.shadow_count;
        w->direct_seen = s->total.direct_count;

        n = w->fd >= 0 ? pread(w->fd, buf, sizeof buf - 1, 0) : -1;
        if (n > 0) {
                buf[n] = '\0';
                action = strndup(buf, strcspn(buf, " \n"));
                if (!action)
                        return -ENOMEM;
        }
        if (action && w->action && streq(action, "idle") && streq(w->action, "check"))
                r = mirror_check_end(m, d, w, now_boot);
        else if (action && streq(action, "idle") && (!w->action || !streq(w->action, "idle"))) {
                /* Both notifications of a short check came before we looked: last_sync_action. */
                _cleanup_free_ char *last = NULL,
                                    *path = strdup_printf("block/%s/md/last_sync_action", d->facts->name);
                if (!path)
                        return -ENOMEM;
                if (w->action && sysfs_read_string(m->engine.sysfs_root, path, &last) >= 0 &&
                    streq(last, "check"))
                        r = mirror_check_end(m, d, w, now_boot);
        }
        if (r < 0)
                return r;
        if (action) {
                if (w->action && !streq(w->action, action))
                        log_info("%s: md sync_action %s -> %s.", d->facts->name, w->action, action);
                free(w->action);
                w->action = TAKE_PTR(action);
        }

        if (m->engine.config.mirror_check_usec > 0 && d->managed && w->action && streq(w->action, "idle") &&
            w->fig.shadow_pages > 0 &&
            (w->started_usec == 0 || now_boot >= w->started_usec + m->engine.config.mirror_check_usec)) {
                int k = md_start_check(m->engine.sysfs_root, d->facts->name);
                w->started_usec = now_boot;
                if (k < 0)
                        log_warning_errno(k, "%s: cannot start an md check (MirrorCheckSec=): %m",
                                          d->facts->name);
                else
                        log_notice("%s: started an md check (MirrorCheckSec=): %" PRIu64
                                   " pages were modified "
                                   "under writeback while stable writes were off since the last one.",
                                   d->facts->name, w->fig.shadow_pages);
        }
        if (w->dirty && now_boot >= w->saved_usec + MIRROR_SAVE_USEC) {
                int k = mirror_save(m, d, w, now_boot, NULL);
                if (k < 0)
                        return k;
        }
        return r;
}

static int on_sync_action(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;

        if (manager_mirrors_poll(m) > 0)
                (void) manager_reconcile(m);
        return 0;
}

/* A new watch of d's sync_action, with the figures of its learned record. */
static int mirror_watch_new(Manager *m, EngineDevice *d, MirrorWatch **ret) {
        _cleanup_(mirror_watch_freep) MirrorWatch *w = calloc(1, sizeof(MirrorWatch));
        _cleanup_free_ char *path = NULL;
        const LearnedRecord *l;
        int r;

        if (!w)
                return -ENOMEM;
        w->fd = -1;
        path = strdup_printf("%s/block/%s/md/sync_action", m->engine.sysfs_root, d->facts->name);
        if (!path)
                return -ENOMEM;
        w->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (w->fd < 0)
                log_debug_errno(errno, "%s: cannot watch %s: %m", d->facts->name, path);
        else {
                r = sd_event_add_io(m->event, &w->io, w->fd, EPOLLPRI, on_sync_action, m);
                if (r < 0)
                        log_debug_errno(r, "%s: cannot watch md/sync_action, read at each poll only: %m",
                                        d->facts->name);
                else
                        (void) sd_event_source_set_description(w->io, "md-sync-action");
        }
        l = mirror_record(m, d);
        if (l && l->has_mirror)
                w->fig = l->mirror;
        w->saved_usec = now_usec_boottime();
        r = mirror_set_held(w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

int manager_mirrors_poll(Manager *m) {
        uint64_t now_boot = now_usec_boottime();
        bool learned = false;
        int r;

        for (size_t i = 0; i < manager_n_devices(m); i++) {
                EngineDevice *d = manager_device(m, i);
                DeviceStalls *s;

                if (!mirror_level_is_mirror(d->facts->md_level))
                        continue;
                s = manager_stalls_find(m, d->facts->devnum, true);
                if (!s)
                        return log_oom();
                if (!s->mirror && (r = mirror_watch_new(m, d, &s->mirror)) < 0)
                        return log_oom();
                r = mirror_update(m, d, s, now_boot);
                if (r < 0)
                        return log_oom();
                learned = learned || r > 0;
        }
        return learned;
}

const char *manager_mirror_held_on(Manager *m, const EngineDevice *d) {
        DeviceStalls *s = mirror_level_is_mirror(d->facts->md_level)
                                  ? manager_stalls_find(m, d->facts->devnum, false)
                                  : NULL;
        return s && s->mirror ? s->mirror->held : NULL;
}

int manager_mirror_figures(Manager *m, const EngineDevice *d, MirrorFigures *ret, const char **ret_last) {
        DeviceStalls *s = mirror_level_is_mirror(d->facts->md_level)
                                  ? manager_stalls_find(m, d->facts->devnum, false)
                                  : NULL;

        if (!s || !s->mirror)
                return -ENODATA;
        *ret = s->mirror->fig;
        if (ret_last)
                *ret_last = s->mirror->last;
        return 0;
}
