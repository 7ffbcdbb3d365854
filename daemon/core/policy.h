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
        STALL_UNMEASURED, /* no measurement: treated as within budget */
        STALL_WITHIN_BUDGET,
        STALL_OVER_BUDGET,
        _STALL_VERDICT_MAX,
} StallVerdict;

typedef struct PolicyInput {
        const char *name; /* device, for messages */
        PolicyMode mode;
        Need need;
        const char *need_reason;      /* the reason that decided the need */
        bool managed;                 /* Devices= allows writing this disk */
        Setting setting;              /* StableWrites= in force for this disk (auto when none) */
        DesiredSource setting_source; /* SOURCE_CONFIG or SOURCE_RUNTIME */
        bool force;                   /* Force=yes / --force for this disk */
        StallVerdict stalls;
        const char *stall_summary; /* measured figures for the reason, or NULL */
        int declared;              /* kernel default (the flag at probe time): 0/1 */
        bool integrity_enforced;   /* 6.11+ checksum integrity: "off" is impossible */
} PolicyInput;

typedef struct PolicyDecision {
        int desired; /* -1: leave the flag alone; 0 off; 1 on */
        DesiredSource source;
        bool forced;  /* a protected device turned off by force: warn */
        bool refused; /* the requested off was refused (interlock, or impossible on
                       * this kernel); desired stays 1 and reason says why */
        char *reason; /* one sentence */
} PolicyDecision;

/* Decides the desired state for one device. Returns 0 or -ENOMEM. */
int policy_decide(const PolicyInput *in, PolicyDecision *ret);

void policy_decision_done(PolicyDecision *d);

const char *desired_source_to_string(DesiredSource s);

/* ---- the adaptive part of Policy=balanced ---- */

/* What the daemon learned from measured stalls about one disk. */
typedef enum Learned {
        LEARNED_NONE = -1, /* nothing learned: the policy table decides */
        LEARNED_OFF = 0,   /* over the budget: stable writes off */
        LEARNED_ON = 1,    /* calm again after an off: back on */
} Learned;

typedef struct AdaptInput {
        const char *name; /* device, for messages */
        PolicyMode mode;
        Need need;
        const char *need_reason;   /* why the need, for the cost sentence of protected devices */
        Learned learned;           /* the learned state in force */
        uint64_t last_change_usec; /* when learned last changed (CLOCK_REALTIME), 0 never */
        uint64_t last_over_usec;   /* when a window was last over the budget, 0 never */
        bool measured;             /* the window has durations (BPF mode) */
        uint64_t count;            /* stable-pages waits in the window */
        uint64_t p99_usec;         /* their p99 (upper bound of its log2 bucket) */
        uint64_t max_usec;
        bool shadows_measured;      /* shadow waits are measured (stalls.h): the cost of stable writes
                                     * while they are off */
        const char *shadows_reason; /* why not, when not (the probe's mode reason) */
        uint64_t shadow_count;      /* shadow waits in the window */
        uint64_t shadow_timed;      /* those of them timed: the sample their p99 and max come from */
        uint64_t shadow_p99_usec;
        uint64_t shadow_max_usec;
        const char *held_on;  /* a risk verdict that keeps stable writes on (a mirror whose
                               * legs diverged while they were off), or NULL */
        uint64_t window_usec; /* StallWindowSec= */
        uint64_t budget_usec; /* StallBudgetMSec= */
        uint64_t calm_usec;   /* StallCalmSec= */
        uint64_t min_waits;   /* StallMinWaits=: a p99 from fewer waits (timed ones for shadows) is
                               * not judged */
        uint64_t now_usec;    /* CLOCK_REALTIME */
} AdaptInput;

typedef struct AdaptDecision {
        Learned learned; /* the learned state from now on */
        bool changed;    /* learned differs from the input's */
        bool over;       /* this window is over the budget (the caller records now as last_over) */
        char *reason;    /* one sentence quoting the measured figures */
} AdaptDecision;

/* The adaptive step of Policy=balanced for one disk and one stall window. The cost of stable
 * writes is judged on both sides by the same figure against the same budget: the p99 of the
 * real waits (while stable writes are in force) and of the shadow waits (while they are not: the
 * waits they would cause), each taken from at least min_waits waits (for shadows: timed ones, the
 * sample their p99 comes from). A recommended disk whose window
 * is over the budget learns off; it learns on again after calm_usec without a window over the
 * budget, which only a probe that measures shadow waits can see: without them a learned off is
 * kept, and the reason says why. No change follows another within calm_usec. held_on (a risk
 * verdict) keeps stable writes on. Required and unknown disks never learn anything: the reason
 * states what they cost and why it is paid. Pure. Returns 0 or -ENOMEM. */
int policy_adapt(const AdaptInput *in, AdaptDecision *ret);

void adapt_decision_done(AdaptDecision *d);

/* What explain answers for one disk: what turning stable writes on, and off, would cost, from
 * the figures of the last window. */
typedef struct CostInput {
        const char *name;
        Need need;
        const char *need_reason;
        bool in_force;          /* stable writes are in force on the disk now */
        bool measured;          /* the probe measures durations */
        const char *unmeasured; /* why not, when not */
        uint64_t window_usec;
        uint64_t count, p99_usec;               /* real waits in the window */
        bool shadows_measured;                  /* shadow waits are measured */
        const char *shadows_unmeasured;         /* why not, when not */
        uint64_t shadow_count, shadow_p99_usec; /* shadow waits in the window */
        bool mirror;                            /* an md raid1/raid10: the figures below */
        uint64_t shadow_pages;                  /* since the last check */
        uint64_t mismatch_cnt;                  /* the last check's */
        bool checked;                           /* a check was seen */
        bool direct_known;                      /* O_DIRECT writes are counted */
        uint64_t direct_writes;                 /* in the window */
} CostInput;

/* Two sentences: what stable writes on costs (*ret_on: the writers' waits, real while they are in
 * force, shadow while they are not) and what off costs (*ret_off: what the data risks, or why
 * it is not possible). Pure. Returns 0 or -ENOMEM. */
int policy_cost(const CostInput *in, char **ret_on, char **ret_off);

/* "off", "on" or NULL (LEARNED_NONE). */
const char *learned_to_string(Learned l);

/* Formats usec for people: "850 us", "12.5 ms", "3.20 s". Returns buf. */
char *format_usec(uint64_t usec, char buf[static 32]);
