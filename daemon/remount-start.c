/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The start of one filesystem's cycle: what the daemon knows against it, its plan from the
 * system's mount table, the flag written, the journal saved and the child started. */
#include "log.h"
#include "remount-internal.h"
#include "sysfs.h"
#include "util.h"

/* Why a filesystem is not cycled now, found by the checks of remount_start_item(). */
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
        const RemountActive *h = remount_holder_of(r, it->disk);
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
        *t = remount_find_tracked(r, plan->id, plan->target);
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
                remount_active_free(a);
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
        k = remount_open_flag(r, a, &reason);
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
        k = remount_spawn(r, a);
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
int remount_start_item(Remounter *r, RemountRequest *q, const RemountItem *it) {
        uint64_t start = now_usec_monotonic();
        _cleanup_(refusal_done) Refusal no = {};
        _cleanup_(remount_plan_done) RemountPlan plan = {};
        _cleanup_free_ char *label = NULL;
        const TrackedMount *t;
        RemountDisk d = {};
        RemountActive *a;
        int k;

        t = remount_find_tracked(r, it->id, it->target);
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
                remount_active_free(a);
        }
        if (k < 0)
                return k;
        remount_conclude(r, q,
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
