/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy table of DESIGN.md section 2, row by row, and the safety interlock. */
#include "policy.h"
#include "tests.h"

typedef struct Row {
        PolicyMode mode;
        Need need;
        Setting setting;
        bool force;
        StallVerdict stalls;
        int declared;
        bool enforced;
        int desired;
        DesiredSource source;
        bool refused, forced;
        const char *reason_part;
} Row;

static const Row rows[] = {
        /* observe never writes */
        { POLICY_OBSERVE, NEED_REQUIRED, SETTING_AUTO, false, 0, 1, false, -1, SOURCE_OBSERVE, false, false,
          "observe" },
        { POLICY_OBSERVE, NEED_NONE, SETTING_OFF, false, 0, 1, false, -1, SOURCE_OBSERVE, false, false,
          "observe" },
        /* latency */
        { POLICY_LATENCY, NEED_REQUIRED, SETTING_AUTO, false, 0, 1, false, 1, SOURCE_POLICY, false, false,
          "required" },
        { POLICY_LATENCY, NEED_UNKNOWN, SETTING_AUTO, false, 0, 1, false, 1, SOURCE_POLICY, false, false,
          "unknown" },
        { POLICY_LATENCY, NEED_RECOMMENDED, SETTING_AUTO, false, 0, 1, false, 0, SOURCE_POLICY, false, false,
          "latency" },
        { POLICY_LATENCY, NEED_NONE, SETTING_AUTO, false, 0, 1, false, 0, SOURCE_POLICY, false, false,
          "nothing reads" },
        /* balanced */
        { POLICY_BALANCED, NEED_REQUIRED, SETTING_AUTO, false, STALL_OVER_BUDGET, 1, false, 1, SOURCE_POLICY,
          false, false, "required" },
        { POLICY_BALANCED, NEED_RECOMMENDED, SETTING_AUTO, false, STALL_UNMEASURED, 0, false, 1,
          SOURCE_POLICY, false, false, "not measured" },
        { POLICY_BALANCED, NEED_RECOMMENDED, SETTING_AUTO, false, STALL_WITHIN_BUDGET, 0, false, 1,
          SOURCE_POLICY, false, false, "within" },
        { POLICY_BALANCED, NEED_RECOMMENDED, SETTING_AUTO, false, STALL_OVER_BUDGET, 1, false, 0,
          SOURCE_STALLS, false, false, "over the budget (p99 250 ms)" },
        { POLICY_BALANCED, NEED_NONE, SETTING_AUTO, false, 0, 1, false, 0, SOURCE_POLICY, false, false,
          "balanced" },
        /* integrity */
        { POLICY_INTEGRITY, NEED_RECOMMENDED, SETTING_AUTO, false, STALL_OVER_BUDGET, 0, false, 1,
          SOURCE_POLICY, false, false, "integrity" },
        { POLICY_INTEGRITY, NEED_NONE, SETTING_AUTO, false, 0, 1, false, 1, SOURCE_POLICY, false, false,
          "kernel's default (on)" },
        { POLICY_INTEGRITY, NEED_NONE, SETTING_AUTO, false, 0, 0, false, 0, SOURCE_POLICY, false, false,
          "kernel's default (off)" },
        /* overrides */
        { POLICY_LATENCY, NEED_NONE, SETTING_ON, false, 0, 0, false, 1, SOURCE_CONFIG, false, false,
          "StableWrites=on" },
        { POLICY_INTEGRITY, NEED_RECOMMENDED, SETTING_OFF, false, 0, 1, false, 0, SOURCE_CONFIG, false,
          false, "StableWrites=off" },
        /* the interlock: off on required/unknown without force is refused, flag stays on */
        { POLICY_BALANCED, NEED_REQUIRED, SETTING_OFF, false, 0, 1, false, 1, SOURCE_CONFIG, true, false,
          "refusing to turn off stable writes on dev0: need is required (the reason); set Force=yes" },
        { POLICY_LATENCY, NEED_UNKNOWN, SETTING_OFF, false, 0, 1, false, 1, SOURCE_CONFIG, true, false,
          "need is unknown" },
        { POLICY_LATENCY, NEED_REQUIRED, SETTING_OFF, true, 0, 1, false, 0, SOURCE_CONFIG, false, true,
          "with force" },
        /* 6.11+ integrity profile: off cannot be had */
        { POLICY_LATENCY, NEED_RECOMMENDED, SETTING_AUTO, false, 0, 0, true, 1, SOURCE_POLICY, false, false,
          "integrity profile" },
        { POLICY_LATENCY, NEED_REQUIRED, SETTING_OFF, true, 0, 0, true, 1, SOURCE_CONFIG, true, false,
          "integrity profile" },
};

/* The adaptive step of Policy=balanced: one window of measured stalls at a time. */
typedef struct AdaptRow {
        const char *what;
        PolicyMode mode;
        Need need;
        Learned learned;
        uint64_t last_change, last_over; /* seconds, 0 never */
        bool measured;
        uint64_t count, p99_ms;
        uint64_t now; /* seconds */
        Learned want;
        bool changed, over;
        const char *reason_part;
        bool no_shadows;                                    /* shadow waits are not measured */
        uint64_t shadow_count, shadow_timed, shadow_p99_ms; /* shadow waits in the window */
        const char *held;                                   /* a risk verdict that keeps stable writes on */
} AdaptRow;

#define S USEC_PER_SEC
static const AdaptRow adapt_rows[] = {
        { "over the budget: off, quoting the figures", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_NONE, 0, 0,
          true, 40, 128, 5000, LEARNED_OFF, true, true,
          "p99 wait 128.0 ms over the last 30 s (40 waits, max 130.0 ms) exceeds StallBudgetMSec=10.0 ms: "
          "stable "
          "writes off" },
        { "too few waits to judge: nothing learned", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_NONE, 0, 0,
          true, 9, 128, 5000, LEARNED_NONE, false, false,
          "(9 waits, max 130.0 ms): too few waits to judge (StallMinWaits=10)" },
        { "at the budget is within it", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_NONE, 0, 0, true, 40, 10,
          5000, LEARNED_NONE, false, false, "is within StallBudgetMSec=10.0 ms" },
        { "no waits", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_NONE, 0, 0, true, 0, 0, 5000, LEARNED_NONE,
          false, false, "no stable-pages waits in the last 30 s" },
        { "not measured (tracefs): nothing changes", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_NONE, 0, 0,
          false, 40, 128, 5000, LEARNED_NONE, false, false, "not measured" },
        { "not measured keeps a learned off", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_OFF, 1000, 1000,
          false, 0, 0, 9000, LEARNED_OFF, false, false, "keeping what was learned (off)" },
        { "learned on again, over again within the calm: held", POLICY_BALANCED, NEED_RECOMMENDED,
          LEARNED_ON, 4500, 1000, true, 40, 128, 5000, LEARNED_ON, false, true,
          "the last change was only 500 s ago" },
        { "learned on again, over after the calm: off", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_ON, 1000,
          900, true, 40, 128, 5000, LEARNED_OFF, true, true, "stable writes off" },
        { "off, still over: stays off", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_OFF, 1000, 4990, true, 40,
          128, 5000, LEARNED_OFF, false, true,
          "stays off until no window exceeds it for StallCalmSec=1800 s" },
        { "off, calm but not for long enough", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_OFF, 1000, 4000,
          true, 0, 0, 5000, LEARNED_OFF, false, false, "(calm for 1000 s)" },
        { "off, calm since the change only", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_OFF, 4000, 0, true,
          0, 0, 5000, LEARNED_OFF, false, false, "(calm for 1000 s)" },
        { "off, calm for StallCalmSec: on again", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_OFF, 1000, 3200,
          true, 3, 2, 5000, LEARNED_ON, true, false,
          "no window over StallBudgetMSec=10.0 ms for 1800 s (StallCalmSec=1800 s), shadow waits included: "
          "stable writes on again" },
        /* The other side: shadow waits while off, judged by the same budget. */
        { "off, shadow p99 over the budget: stays off", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_OFF, 1000,
          1000, true, 0, 0, 5000, LEARNED_OFF, false, true,
          "shadow p99 wait 128.0 ms over the last 30 s (4000 shadow waits, 40 timed, max 130.0 ms) exceeds "
          "StallBudgetMSec=10.0 ms; stays off",
          false, 4000, 40, 128 },
        { "off, shadow waits within the budget for the calm: on again", POLICY_BALANCED, NEED_RECOMMENDED,
          LEARNED_OFF, 1000, 3200, true, 0, 0, 5000, LEARNED_ON, true, false, "stable writes on again",
          false, 40, 40, 2 },
        { "off, too few shadow waits to judge: calm", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_OFF, 1000,
          1000, true, 0, 0, 5000, LEARNED_ON, true, false, "stable writes on again", false, 9, 9, 128 },
        /* The p99 of shadows is that of the timed ones: many counted, few timed is a handful. */
        { "off, many shadow waits but too few timed: not judged", POLICY_BALANCED, NEED_RECOMMENDED,
          LEARNED_OFF, 1000, 4990, true, 0, 0, 5000, LEARNED_OFF, false, false,
          "shadow p99 wait 128.0 ms over the last 30 s (4000 shadow waits, 9 timed, max 130.0 ms): too few "
          "timed waits to judge (StallMinWaits=10); off until calm",
          false, 4000, 9, 128 },
        { "off, shadow waits none timed yet: not judged", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_OFF,
          1000, 4990, true, 0, 0, 5000, LEARNED_OFF, false, false,
          "(12 shadow waits, 0 timed, max 0 us): too few timed", false, 12, 0, 0 },
        { "off, shadows not measured: kept, and said so", POLICY_BALANCED, NEED_RECOMMENDED, LEARNED_OFF,
          1000, 1000, true, 0, 0, 9000, LEARNED_OFF, false, false,
          "shadow waits (what stable writes would cost now) are not measured (the probe's reason): keeping "
          "stable writes off as learned",
          true },
        { "on, real waits over but a mirror verdict holds them on", POLICY_BALANCED, NEED_RECOMMENDED,
          LEARNED_ON, 1000, 0, true, 40, 128, 5000, LEARNED_ON, false, true,
          "exceeds StallBudgetMSec=10.0 ms; stable writes stay on: its legs diverged", false, 0, 0, 0,
          "its legs diverged" },
        { "required: never relaxed, cost and reason reported", POLICY_BALANCED, NEED_REQUIRED, LEARNED_NONE,
          0, 0, true, 40, 128, 5000, LEARNED_NONE, false, true,
          "need is required (the reason), so stable writes stay on whatever they cost: p99 wait 128.0 ms" },
        { "unknown: never relaxed", POLICY_BALANCED, NEED_UNKNOWN, LEARNED_NONE, 0, 0, true, 40, 128, 5000,
          LEARNED_NONE, false, true, "need is unknown (the reason), so stable writes stay on" },
        { "need none: nothing to adapt", POLICY_BALANCED, NEED_NONE, LEARNED_NONE, 0, 0, true, 40, 128, 5000,
          LEARNED_NONE, false, true, "nothing to adapt (Policy=balanced, need none)" },
        { "Policy=integrity does not adapt", POLICY_INTEGRITY, NEED_RECOMMENDED, LEARNED_NONE, 0, 0, true,
          40, 128, 5000, LEARNED_NONE, false, true, "nothing to adapt (Policy=integrity" },
        { "Policy=latency does not adapt", POLICY_LATENCY, NEED_RECOMMENDED, LEARNED_NONE, 0, 0, true, 40,
          128, 5000, LEARNED_NONE, false, true, "nothing to adapt (Policy=latency" },
};

/* Runs policy_adapt() over a load whose window is over the budget every period; checks that
 * no two changes come within StallCalmSec= and returns the number of changes. With steady, the
 * load is a steady writer instead: over the budget in every window, its real waits while stable
 * writes are on and, while they are off, its shadow waits (seen only when shadows). */
static unsigned simulate(uint64_t period, bool steady, bool shadows) {
        Learned learned = LEARNED_NONE;
        uint64_t last_change = 0, last_over = 0;
        unsigned changes = 0;

        for (uint64_t now = 10 * S; now <= 14400 * S; now += 10 * S) {
                bool over = steady ? learned != LEARNED_OFF : now % period == 10 * S;
                bool shadow_over = steady && learned == LEARNED_OFF;
                AdaptInput in = { .name = "dev0",
                                  .mode = POLICY_BALANCED,
                                  .need = NEED_RECOMMENDED,
                                  .learned = learned,
                                  .last_change_usec = last_change,
                                  .last_over_usec = last_over,
                                  .measured = true,
                                  .count = 10,
                                  .p99_usec = over ? 50 * USEC_PER_MSEC : USEC_PER_MSEC,
                                  .max_usec = 60 * USEC_PER_MSEC,
                                  .shadows_measured = shadows,
                                  .shadow_count = shadow_over && shadows ? 1000 : 0,
                                  .shadow_timed = shadow_over && shadows ? 10 : 0,
                                  .shadow_p99_usec = shadow_over && shadows ? 50 * USEC_PER_MSEC : 0,
                                  .shadow_max_usec = shadow_over && shadows ? 60 * USEC_PER_MSEC : 0,
                                  .window_usec = 10 * S,
                                  .budget_usec = 10 * USEC_PER_MSEC,
                                  .calm_usec = 1800 * S,
                                  .min_waits = 10,
                                  .now_usec = now };
                AdaptDecision d = {};
                CHECK_INT(policy_adapt(&in, &d), 0);
                if (d.over)
                        last_over = now;
                if (d.changed) {
                        CHECK(last_change == 0 || now - last_change >= 1800 * S);
                        last_change = now;
                        changes++;
                }
                learned = d.learned;
                adapt_decision_done(&d);
        }
        return changes;
}

static void test_adapt(void) {
        for (size_t i = 0; i < sizeof adapt_rows / sizeof adapt_rows[0]; i++) {
                const AdaptRow *t = &adapt_rows[i];
                AdaptInput in = {
                        .name = "dev0",
                        .mode = t->mode,
                        .need = t->need,
                        .need_reason = "the reason",
                        .learned = t->learned,
                        .last_change_usec = t->last_change * S,
                        .last_over_usec = t->last_over * S,
                        .measured = t->measured,
                        .count = t->count,
                        .p99_usec = t->p99_ms * USEC_PER_MSEC,
                        .max_usec = t->count ? 130 * USEC_PER_MSEC : 0,
                        .shadows_measured = !t->no_shadows,
                        .shadows_reason = "the probe's reason",
                        .shadow_count = t->shadow_count,
                        .shadow_timed = t->shadow_timed,
                        .shadow_p99_usec = t->shadow_p99_ms * USEC_PER_MSEC,
                        .shadow_max_usec = t->shadow_timed ? 130 * USEC_PER_MSEC : 0,
                        .held_on = t->held,
                        .window_usec = 30 * S,
                        .budget_usec = 10 * USEC_PER_MSEC,
                        .calm_usec = 1800 * S,
                        .min_waits = 10,
                        .now_usec = t->now * S,
                };
                AdaptDecision d = {};

                fprintf(stderr, "adapt row %zu: %s\n", i, t->what);
                CHECK_INT(policy_adapt(&in, &d), 0);
                CHECK_INT(d.learned, t->want);
                CHECK_INT(d.changed, t->changed);
                CHECK_INT(d.over, t->over);
                CHECK_CONTAINS(d.reason, t->reason_part);
                adapt_decision_done(&d);
        }

        /* Never flapping faster than StallCalmSec=: one window every 10 s for 4 hours. A load
         * alternating over and under the budget at every window learns off once and is never
         * calm long enough to go back; a load over the budget for one window every 2000 s
         * flaps, but never within 1800 s of the last change. */
        CHECK_INT(simulate(20 * S, false, true), 1);
        CHECK(simulate(2000 * S, false, true) >= 3);
        /* A steady writer: off once and no more, its shadow waits over the budget keep it off. A
         * probe that sees no shadow waits keeps the learned off too (the policy before them saw a
         * calm there and flapped at every StallCalmSec=). */
        CHECK_INT(simulate(0, true, true), 1);
        CHECK_INT(simulate(0, true, false), 1);
        char buf[32];
        CHECK_STR(format_usec(850, buf), "850 us");
        CHECK_STR(format_usec(12500, buf), "12.5 ms");
        CHECK_STR(format_usec(300 * S, buf), "300 s");
        CHECK_STR(format_usec(3200000, buf), "3.20 s");
        CHECK_STR(learned_to_string(LEARNED_OFF), "off");
        CHECK(!learned_to_string(LEARNED_NONE));
}

int main(void) {
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
                const Row *t = &rows[i];
                PolicyInput in = {
                        .name = "dev0",
                        .mode = t->mode,
                        .need = t->need,
                        .need_reason = "the reason",
                        .managed = true,
                        .setting = t->setting,
                        .setting_source = SOURCE_CONFIG,
                        .force = t->force,
                        .stalls = t->stalls,
                        .stall_summary = "p99 250 ms",
                        .declared = t->declared,
                        .integrity_enforced = t->enforced,
                };
                PolicyDecision d = {};

                fprintf(stderr, "row %zu\n", i);
                CHECK_INT(policy_decide(&in, &d), 0);
                CHECK_INT(d.desired, t->desired);
                CHECK_INT(d.source, t->source);
                CHECK_INT(d.refused, t->refused);
                CHECK_INT(d.forced, t->forced);
                CHECK_CONTAINS(d.reason, t->reason_part);
                policy_decision_done(&d);
        }

        /* Devices= not matching: observed only, whatever the override says. */
        PolicyInput in = { .name = "sdz",
                           .mode = POLICY_LATENCY,
                           .need = NEED_NONE,
                           .managed = false,
                           .setting = SETTING_OFF };
        PolicyDecision d = {};
        CHECK_INT(policy_decide(&in, &d), 0);
        CHECK_INT(d.desired, -1);
        CHECK_INT(d.source, SOURCE_UNMANAGED);
        CHECK_CONTAINS(d.reason, "sdz is not listed in Devices=");
        policy_decision_done(&d);

        test_adapt();
        return tests_finish();
}
