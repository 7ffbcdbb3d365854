/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* How each filesystem's cycle, or the decision not to cycle it, ends: its result, its log
 * line, and the note that says why its flag is still pending. */
#include "log.h"
#include "message-id.h"
#include "remount-internal.h"
#include "util.h"

#define REASON_PENDING "takes effect at next mount"

RemountNote *remount_note_find(Remounter *r, const char *target) {
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
        RemountNote *n = remount_note_find(r, target);
        if (!n)
                return;
        free(n->target);
        reason_retire(r, n->reason);
        *n = r->notes[--r->n_notes];
}

static void note_set(Remounter *r, const char *target, int id, bool sticky, uint64_t until, const char *why,
                     bool failed) {
        RemountNote *n = remount_note_find(r, target);
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

/* Points the tracked mounts of t away from the retired reasons, and frees them. */
void remount_retired_free(Remounter *r, MountTracker *t) {
        for (size_t i = 0; t && i < t->n; i++)
                for (size_t k = 0; k < r->n_retired; k++)
                        if (t->mounts[i].reason == r->retired[k])
                                t->mounts[i].reason = REASON_PENDING;
        for (size_t k = 0; k < r->n_retired; k++)
                free(r->retired[k]);
        r->retired = mfree(r->retired);
        r->n_retired = 0;
}

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
void remount_conclude(Remounter *r, RemountRequest *q, const Conclusion *c) {
        const RemountNote *prior = remount_note_find(r, c->item->target);
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
                remount_result_done(&res);
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
        remount_result_done(&res);
}
