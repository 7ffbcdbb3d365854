/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* need + mode + overrides + stall verdict -> desired state, with the safety interlock.
 * Pure: plain structs in, a decision out. */

#include "classify.h"
#include "config.h"

typedef enum DesiredSource {
        SOURCE_POLICY,    /* the Policy= mode table */
        SOURCE_CONFIG,    /* StableWrites= of a [Device] section */
        SOURCE_RUNTIME,   /* a runtime override (stablepagesctl set --runtime) */
        SOURCE_STALLS,    /* balanced mode: measured stall cost over the budget */
        SOURCE_OBSERVE,   /* Policy=observe: nothing is written */
        SOURCE_UNMANAGED, /* not matched by Devices=: observed only */
        _DESIRED_SOURCE_MAX,
} DesiredSource;

typedef enum StallVerdict {
        STALL_UNMEASURED,    /* no measurement: treated as within budget */
        STALL_WITHIN_BUDGET,
        STALL_OVER_BUDGET,
        _STALL_VERDICT_MAX,
} StallVerdict;

typedef struct PolicyInput {
        const char *name;    /* device, for messages */
        PolicyMode mode;
        Need need;
        const char *need_reason; /* the reason that decided the need */
        bool managed;        /* Devices= allows writing this disk */
        Setting setting;     /* StableWrites= in force for this disk (auto when none) */
        DesiredSource setting_source; /* SOURCE_CONFIG or SOURCE_RUNTIME */
        bool force;          /* Force=yes / --force for this disk */
        StallVerdict stalls;
        const char *stall_summary; /* measured figures for the reason, or NULL */
        int declared;        /* kernel default (the flag at probe time): 0/1 */
        bool integrity_enforced; /* 6.11+ checksum integrity: "off" is impossible */
} PolicyInput;

typedef struct PolicyDecision {
        int desired;          /* -1: leave the flag alone; 0 off; 1 on */
        DesiredSource source;
        bool forced;          /* a protected device turned off by force: warn */
        bool refused;         /* the requested off was refused (interlock, or impossible on
                               * this kernel); desired stays 1 and reason says why */
        char *reason;         /* one sentence */
} PolicyDecision;

/* Decides the desired state for one device. Returns 0 or -ENOMEM. */
int policy_decide(const PolicyInput *in, PolicyDecision *ret);

void policy_decision_done(PolicyDecision *d);

const char *desired_source_to_string(DesiredSource s);
