/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Remounter (remount.h): its life, from the journals found at start to the wait for the
 * last cycle at a stop, and its queue of requests, one cycle at a time. */
#include <poll.h>
#include <signal.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "remount-internal.h"
#include "util.h"

/* While a stop waits for a cycle, it asks systemd for this much more time at a time. */
#define STOP_EXTEND_USEC (30 * USEC_PER_SEC)

static void complete_request(Remounter *r, RemountRequest *q) {
        RemountRequest **p = &r->queue;

        while (*p && *p != q)
                p = &(*p)->next;
        if (*p)
                *p = q->next;
        if (q->done)
                q->done(q->results, q->n_results, q->userdata);
        remount_request_free(q);
}

/* --- the queue ------------------------------------------------------------------------------ */

/* Starts the earliest replay that is due. Returns true when one runs. */
static bool start_replay(Remounter *r) {
        uint64_t now = now_usec_monotonic();

        for (size_t i = 0; i < r->n_unmounted; i++) {
                RemountActive *a = r->unmounted[i];
                if (a->give_up || a->due_usec > now)
                        continue;
                remount_unmounted_take(r, a);
                remount_reload_journal(a); /* a cycle of an earlier daemon may have gone on meanwhile */
                r->running = a;
                int k = remount_spawn(r, a);
                if (k < 0) {
                        r->running = NULL;
                        _cleanup_free_ char *why =
                                strdup_printf("its replay cannot start: %s", strerror(-k));
                        log_error_errno(k, "%s is NOT MOUNTED and its replay cannot start: %m", a->label);
                        a->backoff_usec = MIN(a->backoff_usec * 2, REMOUNT_RETRY_MAX_USEC);
                        remount_park(r, a, why ?: a->reason);
                        return false;
                }
                if (!a->io)
                        remount_follow(r, a); /* could not watch it: waited here */
                return true;
        }
        remount_arm_retry(r);
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
                int k = remount_start_item(r, q, it);
                if (k < 0)
                        remount_conclude(r, q,
                                         &(Conclusion){ .item = it,
                                                        .id = it->id,
                                                        .outcome = REMOUNT_FAILED,
                                                        .why = strerror(-k),
                                                        .pending = true });
                if (k > 0 && r->running && !r->running->io)
                        remount_follow(r, r->running); /* could not watch it: wait here */
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
        remount_schedule(r);
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
                remount_item_done(&items[q->n_items]);
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
                        remount_request_free(q);
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

                if (!t->pending || !t->disk || t->read_only || remount_holder_of(r, t->disk))
                        continue;
                if (r->host.find_disk(r->host.userdata, t->disk, &d) < 0 || !d.managed)
                        continue;
                n = remount_note_find(r, t->target);
                if (n && (n->sticky || (n->id == t->id && now < n->until_usec)))
                        continue;
                if (!q) {
                        q = calloc(1, sizeof(RemountRequest));
                        if (!q)
                                return (void) log_oom();
                }
                if (add_item(q, t) < 0) {
                        remount_request_free(q);
                        return (void) log_oom();
                }
        }
        if (q)
                (void) enqueue(r, q);
}

bool remount_holds(const Remounter *r, const char *disk) {
        return r && remount_holder_of(r, disk);
}

/* --- life cycle ---------------------------------------------------------------------------- */

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
        remount_load_journals(r);
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
                remount_follow(r, a);
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
                remount_active_free(a);
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
        remount_retired_free(r, NULL);
        free(r->test_pause);
        sd_event_source_disable_unref(r->defer);
        sd_event_source_disable_unref(r->retry);
        return mfree(r);
}
