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
        { POLICY_OBSERVE, NEED_REQUIRED, SETTING_AUTO, false, 0, 1, false, -1, SOURCE_OBSERVE, false, false, "observe" },
        { POLICY_OBSERVE, NEED_NONE, SETTING_OFF, false, 0, 1, false, -1, SOURCE_OBSERVE, false, false, "observe" },
        /* latency */
        { POLICY_LATENCY, NEED_REQUIRED, SETTING_AUTO, false, 0, 1, false, 1, SOURCE_POLICY, false, false, "required" },
        { POLICY_LATENCY, NEED_UNKNOWN, SETTING_AUTO, false, 0, 1, false, 1, SOURCE_POLICY, false, false, "unknown" },
        { POLICY_LATENCY, NEED_RECOMMENDED, SETTING_AUTO, false, 0, 1, false, 0, SOURCE_POLICY, false, false, "latency" },
        { POLICY_LATENCY, NEED_NONE, SETTING_AUTO, false, 0, 1, false, 0, SOURCE_POLICY, false, false, "nothing reads" },
        /* balanced */
        { POLICY_BALANCED, NEED_REQUIRED, SETTING_AUTO, false, STALL_OVER_BUDGET, 1, false, 1, SOURCE_POLICY, false, false, "required" },
        { POLICY_BALANCED, NEED_RECOMMENDED, SETTING_AUTO, false, STALL_UNMEASURED, 0, false, 1, SOURCE_POLICY, false, false, "not measured" },
        { POLICY_BALANCED, NEED_RECOMMENDED, SETTING_AUTO, false, STALL_WITHIN_BUDGET, 0, false, 1, SOURCE_POLICY, false, false, "within" },
        { POLICY_BALANCED, NEED_RECOMMENDED, SETTING_AUTO, false, STALL_OVER_BUDGET, 1, false, 0, SOURCE_STALLS, false, false, "over the budget (p99 250 ms)" },
        { POLICY_BALANCED, NEED_NONE, SETTING_AUTO, false, 0, 1, false, 0, SOURCE_POLICY, false, false, "balanced" },
        /* integrity */
        { POLICY_INTEGRITY, NEED_RECOMMENDED, SETTING_AUTO, false, STALL_OVER_BUDGET, 0, false, 1, SOURCE_POLICY, false, false, "integrity" },
        { POLICY_INTEGRITY, NEED_NONE, SETTING_AUTO, false, 0, 1, false, 1, SOURCE_POLICY, false, false, "kernel's default (on)" },
        { POLICY_INTEGRITY, NEED_NONE, SETTING_AUTO, false, 0, 0, false, 0, SOURCE_POLICY, false, false, "kernel's default (off)" },
        /* overrides */
        { POLICY_LATENCY, NEED_NONE, SETTING_ON, false, 0, 0, false, 1, SOURCE_CONFIG, false, false, "StableWrites=on" },
        { POLICY_INTEGRITY, NEED_RECOMMENDED, SETTING_OFF, false, 0, 1, false, 0, SOURCE_CONFIG, false, false, "StableWrites=off" },
        /* the interlock: off on required/unknown without force is refused, flag stays on */
        { POLICY_BALANCED, NEED_REQUIRED, SETTING_OFF, false, 0, 1, false, 1, SOURCE_CONFIG, true, false,
          "refusing to turn off stable writes on dev0: need is required (the reason); set Force=yes" },
        { POLICY_LATENCY, NEED_UNKNOWN, SETTING_OFF, false, 0, 1, false, 1, SOURCE_CONFIG, true, false, "need is unknown" },
        { POLICY_LATENCY, NEED_REQUIRED, SETTING_OFF, true, 0, 1, false, 0, SOURCE_CONFIG, false, true, "with force" },
        /* 6.11+ integrity profile: off cannot be had */
        { POLICY_LATENCY, NEED_RECOMMENDED, SETTING_AUTO, false, 0, 0, true, 1, SOURCE_POLICY, false, false, "integrity profile" },
        { POLICY_LATENCY, NEED_REQUIRED, SETTING_OFF, true, 0, 0, true, 1, SOURCE_CONFIG, true, false, "integrity profile" },
};

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
        PolicyInput in = { .name = "sdz", .mode = POLICY_LATENCY, .need = NEED_NONE, .managed = false,
                           .setting = SETTING_OFF };
        PolicyDecision d = {};
        CHECK_INT(policy_decide(&in, &d), 0);
        CHECK_INT(d.desired, -1);
        CHECK_INT(d.source, SOURCE_UNMANAGED);
        CHECK_CONTAINS(d.reason, "sdz is not listed in Devices=");
        policy_decision_done(&d);

        return tests_finish();
}
