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

/* The figures of disk devnum; with create, created when it has none yet (NULL on ENOMEM; that
 * moves the others'), else NULL when it has none. */
DeviceStalls *manager_stalls_find(Manager *m, dev_t devnum, bool create);

/* ---- mirrors (manager-mirror.c) ---- */

MirrorWatch *mirror_watch_free(MirrorWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(MirrorWatch *, mirror_watch_free);

/* Watches every md raid1/raid10 disk: counts what could diverge, judges each check that ended
 * (mirror.h), keeps the figures with the learned record, starts a check per MirrorCheckSec=.
 * Returns 1 when a verdict turned stable writes on (reconcile), 0, or -ENOMEM. */
int manager_mirrors_poll(Manager *m);

/* Why stable writes stay on for d (its legs diverged while they were off), or NULL. */
const char *manager_mirror_held_on(Manager *m, const EngineDevice *d);

/* d's mirror figures and the last check's sentence (NULL before one). Returns 0, or -ENODATA
 * when d is no mirror watched. */
int manager_mirror_figures(Manager *m, const EngineDevice *d, MirrorFigures *ret, const char **ret_last);

/* What turning stable writes on and off would cost d (policy_cost()), from its last window and
 * its mirror's figures. Returns 0 or -ENOMEM. */
int manager_device_cost(Manager *m, const EngineDevice *d, char **ret_on, char **ret_off);
