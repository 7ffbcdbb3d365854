/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* MetricsFile=: the Prometheus text exposition format (version 0.0.4), for node_exporter's
 * textfile collector. Per disk: the flag, the desired state, the need, pending mounts, what
 * was learned, and the stall histogram as a Prometheus histogram in seconds. Stall series
 * are absent, not zero, for what the probe does not measure. Pure: figures in, text out. */

#include <stdio.h>

#include "classify.h"
#include "policy.h"
#include "stalls.h"

typedef struct MetricsDevice {
        const char *name;
        int flag;    /* queue/stable_writes, ATTR_ABSENT when the kernel has none */
        int desired; /* -1 left alone, 0, 1 */
        Need need;
        unsigned pending; /* mounts that did not capture the desired state yet */
        Learned learned;
        const StallStats *stalls; /* NULL when nothing measures */
} MetricsDevice;

/* Writes the exposition of n disks to f; mode is the probe's mode name. */
void metrics_write(FILE *f, const char *mode, const MetricsDevice *devs, size_t n);
