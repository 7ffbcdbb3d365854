/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* MetricsFile=: the Prometheus text exposition format (version 0.0.4), for node_exporter's
 * textfile collector. The version (build_info). Per disk: the flag, whether stable writes are
 * in force, the desired state, the need, pending mounts, consumers at risk (only where any is), what was
 * learned, the waits, the stall histogram as a Prometheus histogram in seconds (only once the disk had a
 * wait) and whether the last window was over the budget; for the probe: its mode, the waits it lost, the
 * budget. Stall series are absent, not zero, for what the probe does not measure. Pure:
 * figures in, text out. conf/stablepages.rules.yml alerts on them. */

#include <stdio.h>

#include "classify.h"
#include "mirror.h"
#include "policy.h"
#include "stalls.h"

typedef struct MetricsDevice {
        const char *name;
        int flag;      /* queue/stable_writes, ATTR_ABSENT when the kernel has none */
        bool in_force; /* stable writes in force now (the flag, or the integrity profile) */
        int desired;   /* -1 left alone, 0, 1 */
        Need need;
        unsigned pending; /* mounts that did not capture the desired state yet */
        unsigned hazards; /* consumers that run without stable writes the disk needs (consumers.h) */
        Learned learned;
        const StallStats *stalls;    /* NULL when nothing measures */
        bool over_budget;            /* the last window's p99 exceeded the budget (with durations only) */
        const MirrorFigures *mirror; /* an md mirror's checks (mirror.h), NULL for other disks */
} MetricsDevice;

typedef struct MetricsProbe {
        const char *mode;     /* the probe's mode name */
        uint64_t lost;        /* waits seen but not recorded since the probe started */
        uint64_t lost_comms;  /* waits recorded without their command (a full table) */
        uint64_t budget_usec; /* StallBudgetMSec= */
} MetricsProbe;

/* Writes the exposition of the probe and of n disks to f. */
void metrics_write(FILE *f, const MetricsProbe *probe, const MetricsDevice *devs, size_t n);
