/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Remounter's records: requests, cycles and the filesystems left unmounted (RemountActive),
 * the list of these, and the disk each holds. */
#include "flag.h"
#include "log.h"
#include "remount-internal.h"
#include "util.h"

void remount_item_done(RemountItem *i) {
        free(i->target);
        free(i->disk);
}

void remount_result_done(RemountResult *r) {
        free(r->target);
        free(r->disk);
        free(r->message);
        free(r->detail);
}

void remount_request_free(RemountRequest *q) {
        for (size_t i = 0; i < q->n_items; i++)
                remount_item_done(&q->items[i]);
        free(q->items);
        for (size_t i = 0; i < q->n_results; i++)
                remount_result_done(&q->results[i]);
        free(q->results);
        free(q);
}

void remount_active_free(RemountActive *a) {
        if (!a)
                return;
        sd_event_source_disable_unref(a->io);
        if (a->report_fd >= 0)
                close(a->report_fd);
        if (a->disk_fd >= 0)
                close(a->disk_fd);
        remount_item_done(&a->item);
        remount_journal_done(&a->journal);
        free(a->journal_path);
        free(a->label);
        free(a->options);
        free(a->reason);
        free(a);
}

void remount_schedule(Remounter *r) {
        int k = sd_event_source_set_enabled(r->defer, SD_EVENT_ONESHOT);
        if (k < 0)
                log_error_errno(k, "Cannot schedule the remount queue: %m");
}

/* Takes a from the list of filesystems left unmounted, if it is there. */
void remount_unmounted_take(Remounter *r, RemountActive *a) {
        for (size_t i = 0; i < r->n_unmounted; i++)
                if (r->unmounted[i] == a) {
                        memmove(&r->unmounted[i], &r->unmounted[i + 1],
                                sizeof(RemountActive *) * (r->n_unmounted - i - 1));
                        r->n_unmounted--;
                        return;
                }
}

/* Adds a to the list of filesystems left unmounted. Returns 0 or -ENOMEM. */
int remount_unmounted_add(Remounter *r, RemountActive *a) {
        RemountActive **l = realloc(r->unmounted, sizeof(RemountActive *) * (r->n_unmounted + 1));
        if (!l)
                return -ENOMEM;
        r->unmounted = l;
        l[r->n_unmounted++] = a;
        return 0;
}

/* The cycle, replay or left-unmounted filesystem that holds disk, or NULL. */
const RemountActive *remount_holder_of(const Remounter *r, const char *disk) {
        if (r->running && streq(r->running->item.disk, disk))
                return r->running;
        for (size_t i = 0; i < r->n_unmounted; i++)
                if (streq(r->unmounted[i]->item.disk, disk))
                        return r->unmounted[i];
        return NULL;
}

/* The tracked mount id on target, else the one on target, or NULL. */
const TrackedMount *remount_find_tracked(const Remounter *r, int id, const char *target) {
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

/* Pins the sysfs directory of a's disk (flag.h): the child writes its flag when it mounts with
 * another state. */
int remount_open_flag(Remounter *r, RemountActive *a, char **ret_reason) {
        a->disk_fd = flag_pin_disk(r->host.engine->sysfs_root, a->item.disk);
        if (a->disk_fd >= 0)
                return 0;
        if (ret_reason)
                *ret_reason = strdup_printf("cannot open %s/block/%s: %s", r->host.engine->sysfs_root,
                                            a->item.disk, strerror(-a->disk_fd));
        return a->disk_fd;
}

/* The cycle or replay is over: its journal goes. */
void remount_finish(Remounter *r, RemountActive *a) {
        int k = remount_journal_remove(a->journal_path);
        if (k < 0)
                log_warning_errno(k, "Cannot remove the journal %s: %m", a->journal_path);
        remount_active_free(a);
}

/* Takes what the child wrote to the journal (how far it got, where and how it unmounted). */
void remount_reload_journal(RemountActive *a) {
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
