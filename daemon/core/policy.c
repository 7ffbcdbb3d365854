/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy (policy.h): need, mode, overrides and stall verdict to the desired state; the
 * adaptive step from a window of waits; the cost of each state in words. Pure. */
#include <inttypes.h>
#include <stdio.h>

#include "policy.h"
#include "util.h"

static const char *const desired_source_table[_DESIRED_SOURCE_MAX] = {
        [SOURCE_POLICY] = "policy", [SOURCE_CONFIG] = "config",   [SOURCE_RUNTIME] = "runtime",
        [SOURCE_STALLS] = "stalls", [SOURCE_OBSERVE] = "observe", [SOURCE_UNMANAGED] = "unmanaged",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(desired_source, DesiredSource);

static int decide(PolicyDecision *ret, int desired, DesiredSource source, char *reason) {
        if (!reason)
                return -ENOMEM;
        *ret = (PolicyDecision){ .desired = desired, .source = source, .reason = reason };
        return 0;
}

static int decide_by_mode(const PolicyInput *in, PolicyDecision *ret) {
        const char *mode = policy_mode_to_string(in->mode);
        const char *need = need_to_string(in->need);

        if (need_is_protected(in->need))
                return decide(ret, 1, SOURCE_POLICY,
                              strdup_printf("need is %s, so stable writes stay on in every mode", need));
        if (in->need == NEED_NONE) {
                if (in->mode == POLICY_INTEGRITY)
                        return decide(ret, in->declared == 1, SOURCE_POLICY,
                                      strdup_printf("Policy=integrity keeps the kernel's default (%s) "
                                                    "where nothing needs stable writes",
                                                    in->declared == 1 ? "on" : "off"));
                return decide(ret, 0, SOURCE_POLICY,
                              strdup_printf("Policy=%s: nothing reads the page twice, so writers "
                                            "need not wait",
                                            mode));
        }

        /* recommended */
        switch (in->mode) {
        case POLICY_LATENCY:
                return decide(ret, 0, SOURCE_POLICY,
                              strdup_printf("Policy=latency turns stable writes off where they are "
                                            "only recommended"));
        case POLICY_INTEGRITY:
                return decide(ret, 1, SOURCE_POLICY,
                              strdup_printf("Policy=integrity keeps stable writes on where they "
                                            "are recommended"));
        default:
                if (in->stalls == STALL_OVER_BUDGET)
                        return decide(ret, 0, SOURCE_STALLS,
                                      strdup_printf("Policy=balanced: the measured stall cost is over "
                                                    "the budget (%s)",
                                                    in->stall_summary ?: "no figures"));
                return decide(ret, 1, SOURCE_POLICY,
                              strdup_printf("Policy=balanced: recommended, and the stall cost is %s",
                                            in->stalls == STALL_WITHIN_BUDGET
                                                    ? "within the budget"
                                                    : "not measured (treated as within the budget)"));
        }
}

static int policy_decide_unenforced(const PolicyInput *in, PolicyDecision *ret) {
        const char *need = need_to_string(in->need);
        const char *origin = in->setting_source == SOURCE_RUNTIME ? "runtime override " : "StableWrites=";

        if (in->mode == POLICY_OBSERVE)
                return decide(ret, -1, SOURCE_OBSERVE, strdup_printf("Policy=observe: nothing is written"));
        if (!in->managed)
                return decide(ret, -1, SOURCE_UNMANAGED,
                              strdup_printf("%s is not listed in Devices=: observed only", in->name));

        switch (in->setting) {
        case SETTING_ON:
                return decide(ret, 1, in->setting_source, strdup_printf("%son", origin));
        case SETTING_OFF:
                if (!need_is_protected(in->need))
                        return decide(ret, 0, in->setting_source, strdup_printf("%soff", origin));
                if (in->force) {
                        int r = decide(ret, 0, in->setting_source,
                                       strdup_printf("%soff with force, although need is %s (%s)", origin,
                                                     need, in->need_reason ?: "no reason"));
                        ret->forced = true;
                        return r;
                }
                int r = decide(ret, 1, in->setting_source,
                               strdup_printf("refusing to turn off stable writes on %s: need is %s "
                                             "(%s); set Force=yes or use --force to override",
                                             in->name, need, in->need_reason ?: "no reason"));
                ret->refused = true;
                return r;
        default:
                return decide_by_mode(in, ret);
        }
}

int policy_decide(const PolicyInput *in, PolicyDecision *ret) {
        int r = policy_decide_unenforced(in, ret);
        if (r < 0 || ret->desired != 0 || !in->integrity_enforced)
                return r;

        /* On 6.11+ a checksum integrity profile keeps stable writes in force whatever
         * queue/stable_writes says: "off" cannot be had, so do not pretend it can. */
        bool explicit_off = ret->source == SOURCE_CONFIG || ret->source == SOURCE_RUNTIME;
        char *reason = strdup_printf("%s; but on this kernel the integrity profile of %s enforces "
                                     "stable writes whatever queue/stable_writes says, so they stay on",
                                     ret->reason, in->name);
        if (!reason)
                return -ENOMEM;
        free(ret->reason);
        ret->reason = reason;
        ret->desired = 1;
        ret->forced = false;
        ret->refused = explicit_off;
        return 0;
}

void policy_decision_done(PolicyDecision *d) {
        free(d->reason);
        *d = (PolicyDecision){};
}

const char *learned_to_string(Learned l) {
        return l == LEARNED_OFF ? "off" : l == LEARNED_ON ? "on" : NULL;
}

char *format_usec(uint64_t usec, char buf[static 32]) {
        if (usec < USEC_PER_MSEC)
                snprintf(buf, 32, "%" PRIu64 " us", usec);
        else if (usec < USEC_PER_SEC)
                snprintf(buf, 32, "%.1f ms", (double) usec / USEC_PER_MSEC);
        else if (usec % USEC_PER_SEC == 0)
                snprintf(buf, 32, "%" PRIu64 " s", (uint64_t) (usec / USEC_PER_SEC));
        else
                snprintf(buf, 32, "%.2f s", (double) usec / USEC_PER_SEC);
        return buf;
}

static int adapt(AdaptDecision *ret, Learned learned, bool changed, bool over, char *reason) {
        if (!reason)
                return -ENOMEM;
        *ret = (AdaptDecision){ .learned = learned, .changed = changed, .over = over, .reason = reason };
        return 0;
}

/* The waits the p99 of one side is taken from: every real wait; of the shadow waits, the timed. */
static uint64_t p99_sample(const AdaptInput *in, bool shadow) {
        return shadow ? in->shadow_timed : in->count;
}

/* Whether one side's p99 is judged (taken from at least min_waits waits) and exceeds the budget. */
static bool side_over(const AdaptInput *in, bool shadow) {
        uint64_t n = p99_sample(in, shadow);

        return n > 0 && n >= in->min_waits &&
               (shadow ? in->shadow_p99_usec : in->p99_usec) > in->budget_usec;
}

/* "p99 wait 12.5 ms over the last 3 s (40 waits, max 20.1 ms)", of the real or the shadow waits
 * ("(4000 shadow waits, 40 timed, max 20.1 ms)": the p99 of shadows is that of the timed ones),
 * with the verdict against the budget (over: exceeds it). */
static char *figures_format(const AdaptInput *in, bool shadow, bool over) {
        char p99[32], max[32], window[32], budget[32];
        uint64_t count = shadow ? in->shadow_count : in->count;
        uint64_t sample = p99_sample(in, shadow);
        const char *what = shadow ? "shadow " : "";
        _cleanup_free_ char *waits = NULL;

        format_usec(shadow ? in->shadow_p99_usec : in->p99_usec, p99);
        format_usec(shadow ? in->shadow_max_usec : in->max_usec, max);
        format_usec(in->window_usec, window);
        format_usec(in->budget_usec, budget);
        if (count == 0)
                return strdup_printf("no %sstable-pages waits in the last %s (budget %s)", what, window,
                                     budget);
        waits = shadow ? strdup_printf("%" PRIu64 " shadow waits, %" PRIu64 " timed", count, sample)
                       : strdup_printf("%" PRIu64 " waits", count);
        if (!waits)
                return NULL;
        if (sample < in->min_waits)
                return strdup_printf("%sp99 wait %s over the last %s (%s, max %s): too few %swaits to "
                                     "judge (StallMinWaits=%" PRIu64 ")",
                                     what, p99, window, waits, max, shadow ? "timed " : "", in->min_waits);
        return strdup_printf("%sp99 wait %s over the last %s (%s, max %s) %s StallBudgetMSec=%s", what, p99,
                             window, waits, max, over ? "exceeds" : "is within", budget);
}

int policy_adapt(const AdaptInput *in, AdaptDecision *ret) {
        char budget[32], calm[32], ago[32];
        bool over_real = in->measured && side_over(in, false);
        bool over_shadow = in->measured && in->shadows_measured && side_over(in, true);
        bool over = over_real || over_shadow;
        /* The side whose figures speak: the one over the budget, else the one the learned state
         * measures (shadows while off), else the one with waits. */
        bool shadow = over_shadow || (!over_real && in->shadows_measured &&
                                      (in->learned == LEARNED_OFF ? in->count == 0 || in->shadow_count > 0
                                                                  : in->count == 0 && in->shadow_count > 0));
        _cleanup_free_ char *figures = NULL;

        format_usec(in->budget_usec, budget);
        format_usec(in->calm_usec, calm);
        if (!in->measured)
                figures = strdup_printf("stall durations are not measured");
        else
                figures = figures_format(in, shadow, over);
        if (!figures)
                return -ENOMEM;

        if (need_is_protected(in->need))
                return adapt(
                        ret, in->learned, false, over,
                        strdup_printf("need is %s (%s), so stable writes stay on whatever they cost: %s",
                                      need_to_string(in->need), in->need_reason ?: "no reason", figures));
        if (in->mode != POLICY_BALANCED || in->need != NEED_RECOMMENDED)
                return adapt(ret, in->learned, false, over,
                             strdup_printf("%s: nothing to adapt (Policy=%s, need %s)", figures,
                                           policy_mode_to_string(in->mode), need_to_string(in->need)));
        if (!in->measured)
                return adapt(ret, in->learned, false, false,
                             strdup_printf("%s: keeping what was learned (%s)", figures,
                                           learned_to_string(in->learned) ?: "nothing"));
        if (in->held_on)
                return adapt(ret, in->learned, false, over,
                             strdup_printf("%s; stable writes stay on: %s", figures, in->held_on));

        bool held = in->last_change_usec > 0 && in->now_usec < in->last_change_usec + in->calm_usec;
        format_usec(in->now_usec > in->last_change_usec ? in->now_usec - in->last_change_usec : 0, ago);

        if (in->learned != LEARNED_OFF) {
                if (!over)
                        return adapt(ret, in->learned, false, false, strdup_printf("%s", figures));
                if (held)
                        return adapt(ret, in->learned, false, true,
                                     strdup_printf("%s, but the last change was only %s ago: no change "
                                                   "within StallCalmSec=%s",
                                                   figures, ago, calm));
                return adapt(ret, LEARNED_OFF, true, true, strdup_printf("%s: stable writes off", figures));
        }

        /* Learned off: on again after calm_usec without a window over the budget, shadow waits
         * included; a probe that cannot see them cannot see a calm either. */
        if (!in->shadows_measured)
                return adapt(ret, LEARNED_OFF, false, over,
                             strdup_printf("%s; shadow waits (what stable writes would cost now) are not "
                                           "measured (%s): keeping stable writes off as learned",
                                           figures, in->shadows_reason ?: "no reason"));
        if (over)
                return adapt(ret, LEARNED_OFF, false, true,
                             strdup_printf("%s; stays off until no window exceeds it for StallCalmSec=%s",
                                           figures, calm));
        uint64_t calm_since = MAX(in->last_over_usec, in->last_change_usec);
        char calm_for[32];
        format_usec(in->now_usec > calm_since ? in->now_usec - calm_since : 0, calm_for);
        if (in->now_usec < calm_since + in->calm_usec)
                return adapt(ret, LEARNED_OFF, false, false,
                             strdup_printf("%s; off until calm for StallCalmSec=%s (calm for %s)", figures,
                                           calm, calm_for));
        return adapt(ret, LEARNED_ON, true, false,
                     strdup_printf("no window over StallBudgetMSec=%s for %s (StallCalmSec=%s), shadow "
                                   "waits included: stable writes on again",
                                   budget, calm_for, calm));
}

void adapt_decision_done(AdaptDecision *d) {
        free(d->reason);
        *d = (AdaptDecision){};
}

int policy_cost(const CostInput *in, char **ret_on, char **ret_off) {
        char window[32], p99[32];
        _cleanup_free_ char *on = NULL, *off = NULL, *direct = NULL, *risk = NULL;

        format_usec(in->window_usec, window);
        if (!in->measured)
                on = strdup_printf("not measured (%s)", in->unmeasured ?: "no probe");
        else if (in->in_force)
                on = in->count == 0
                             ? strdup_printf("they are on: no writer waited in the last %s", window)
                             : strdup_printf("they are on: writers waited, p99 %s over the last %s (%" PRIu64
                                             " waits)",
                                             format_usec(in->p99_usec, p99), window, in->count);
        else if (!in->shadows_measured)
                on = in->shadows_unmeasured
                             ? strdup_printf("not measured (%s)", in->shadows_unmeasured)
                             : strdup_printf("not measured: shadow waits (what writers would wait) need the "
                                             "BPF probe on a kernel with the tracepoints "
                                             "writeback:writeback_dirty_folio and "
                                             "writeback:sb_clear_inode_writeback");
        else
                on = in->shadow_count == 0
                             ? strdup_printf("writers would not have waited: no page was written under "
                                             "writeback in the last %s",
                                             window)
                             : strdup_printf("writers would wait: shadow p99 %s over the last %s (%" PRIu64
                                             " pages written under writeback)",
                                             format_usec(in->shadow_p99_usec, p99), window,
                                             in->shadow_count);
        if (!on)
                return -ENOMEM;

        if (in->direct_known && in->direct_writes > 0 &&
            !(direct = strdup_printf("; %" PRIu64 " O_DIRECT writes in the last %s, whose buffers no flag "
                                     "protects",
                                     in->direct_writes, window)))
                return -ENOMEM;
        if (in->mirror &&
            !(risk = strdup_printf("the mirror's legs may differ wherever a page is written under writeback "
                                   "(%" PRIu64 " pages since the last check; %s)",
                                   in->shadow_pages,
                                   in->checked ? (in->mismatch_cnt > 0 ? "its mismatch_cnt is not 0"
                                                                       : "its mismatch_cnt was 0")
                                               : "no check seen yet")))
                return -ENOMEM;
        if (need_is_protected(in->need))
                off = strdup_printf("refused without force: need is %s (%s)", need_to_string(in->need),
                                    in->need_reason ?: "no reason");
        else if (in->need == NEED_RECOMMENDED)
                off = strdup_printf(
                        "%s%s%s", in->in_force ? "writers stop waiting; " : "they are off: ",
                        risk ?: "consistency, not correctness: nothing that fails reads the page twice",
                        direct ?: "");
        else
                off = strdup_printf(
                        "%snothing reads the page twice%s",
                        in->in_force ? "writers stop waiting; " : "they are off: ", direct ?: "");
        if (!off)
                return -ENOMEM;
        *ret_on = TAKE_PTR(on);
        *ret_off = TAKE_PTR(off);
        return 0;
}
