/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Manager's stall figures and MetricsFile=, for manager.c: the probe is polled on a timer
 * (manager-stalls.c), each poll feeds the windows and runs the adaptive policy on every disk;
 * the metrics timer writes the Prometheus text (manager-metrics.c). What the bus and the dump
 * read of the figures is declared in manager.h. */

#include "manager.h"

/* Frees the figures of every disk and the probe's counts read in this iteration. */
void manager_stalls_done(Manager *m);

/* Arms the stall poll and, per the configuration, the metrics timer (again after a reload).
 * Returns 0 or -errno. */
int manager_arm_stall_timers(Manager *m);

/* Whether d's last window was over StallBudgetSec=. */
bool manager_device_over_budget(Manager *m, const EngineDevice *d);

/* Arms the metrics timer to write MetricsFile= now and every MetricsIntervalSec=, or stops it
 * without MetricsFile=. Returns 0 or -errno. */
int manager_arm_metrics_timer(Manager *m);
