/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The filesystems a cycle left unmounted: the journals found at start, the retries of their
 * replays, what is listed of them, and those that someone mounted again. */
#include "log.h"
#include "remount-internal.h"
#include "util.h"

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        remount_schedule(userdata);
        return 0;
}

/* Arms the retry timer for the earliest replay due. */
void remount_arm_retry(Remounter *r) {
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

/* a is left unmounted: it waits for its next replay (or for someone to mount it). why may be
 * a->reason itself. */
void remount_park(Remounter *r, RemountActive *a, const char *why) {
        char *reason = strdup(why ?: "?");

        free(a->reason);
        a->reason = reason;
        a->replay = true;
        a->due_usec = now_usec_monotonic() + a->backoff_usec;
        if (remount_unmounted_add(r, a) < 0) {
                log_oom();
                log_error("%s is NOT MOUNTED; its journal %s stays for the next start.", a->label,
                          a->journal_path);
                remount_active_free(a);
                return;
        }
        remount_arm_retry(r);
}

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

void remount_annotate(Remounter *r, MountTracker *t) {
        remount_retired_free(r, t);
        for (size_t i = 0; t && i < t->n; i++) {
                TrackedMount *m = &t->mounts[i];
                RemountNote *n = m->pending ? remount_note_find(r, m->target) : NULL;
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
                remount_unmounted_take(r, a);
                _cleanup_free_ char *why =
                        strdup_printf("it was mounted again by someone else, on %s", found->target);
                remount_conclude(r, NULL,
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
                remount_finish(r, a);
        }
}

/* The cycles an earlier run left in flight: each is replayed first thing. */
void remount_load_journals(Remounter *r) {
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
                        remount_active_free(a);
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
                    !a->reason || remount_unmounted_add(r, a) < 0) {
                        remount_active_free(a);
                        return (void) log_oom();
                }
                /* The disk that has the name now: its replay checks that it is the journal's. */
                k = remount_open_flag(r, a, NULL);
                if (k < 0 && k != -ENOENT)
                        log_warning_errno(k, "%s: cannot open the sysfs directory of %s: %m", a->label,
                                          a->item.disk);
                log_warning("%s: found the journal of an interrupted cycle (at stage %s, stable writes %s "
                            "-> %s); checking it first.",
                            a->label, remount_stage_to_string(a->journal.stage),
                            a->journal.old_flag ? "on" : "off", a->journal.new_flag ? "on" : "off");
        }
        if (r->n_unmounted > 0)
                remount_schedule(r);
}
