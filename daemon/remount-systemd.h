/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The cycle through systemd, the way it is done whenever systemd runs: systemd unmounts
 * (StopUnit of the .mount unit) and systemd mounts again (StartUnit of the unit when it has
 * a unit file, such as an /etc/fstab line; else StartTransientUnit of a mount unit of the
 * same name with the recorded What=, Type= and Options=, as systemd-mount(1) does: the unit
 * systemd makes from the mount table has no What= to mount again, and is unloaded once
 * stopped). The daemon needs no privilege for it: no capability, no mount namespace, no
 * device access; systemd checks the path (it refuses a Where= that is not canonical) and
 * the daemon closes the rest of the window (remount-pin.h).
 *
 * Stopping a unit stops the units that depend on it (Requires=, Requisite=, BindsTo=,
 * PartOf=, PropagatesStopTo=, recursively), its triggering .automount, and the units only it
 * kept (StopWhenUnneeded=); an Upholds= would start it again at once. remount_systemd_check_stop()
 * walks those and refuses, naming them. Targets have no processes: they are stopped with it
 * and started again after the mount (as RestartUnit would).
 *
 * Blocking sd-bus calls: used only in the cycle's child process. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "remount-check.h"

/* Connects to the system bus and checks that systemd is on it. Returns 1 with the
 * connection, 0 with a reason for the log in *ret_reason (no bus, or no systemd), or -errno. */
int remount_systemd_connect(sd_bus **ret_bus, char **ret_reason);

/* The loaded, active mount unit of target. Returns 1 with its name and whether it has a unit
 * file (not transient, not made from the mount table), 0 with a reason in *ret_reason (no such
 * unit, inactive, for another path, with a job queued, with LazyUnmount= or ForceUnmount=:
 * systemd would detach or force a busy filesystem rather than fail), or -errno. */
int remount_systemd_find(sd_bus *bus, const char *target, char **ret_unit, bool *ret_unit_file,
                         char **ret_reason);

/* Whether starting unit, which has a unit file, mounts plan again as it is mounted now: its
 * files (FragmentPath, then DropInPaths) are read (systemd's What= and Options= properties say
 * what is mounted, not what a start would mount) and compared (remount_check_unit_file()), What=
 * resolved to a device number. Returns 0, 1 with a sentence naming the difference (or why it
 * cannot be known) in *ret_refusal, or -errno. */
int remount_systemd_check_unit_file(sd_bus *bus, const char *unit, const RemountPlan *plan,
                                    char **ret_refusal);

/* What stopping unit would do to other units. Returns 0 with the active targets it would
 * stop in *ret_targets (NULL: none), 1 with a sentence naming the units in *ret_refusal, or
 * -errno on bus errors. */
int remount_systemd_check_stop(sd_bus *bus, const char *unit, char **ret_refusal, char ***ret_targets);

/* Waits (at most timeout_usec) until unit has no job queued and no control process at work
 * (not activating, deactivating or reloading). Returns 0, -ETIMEDOUT or -errno. */
int remount_systemd_wait_idle(sd_bus *bus, const char *unit, uint64_t timeout_usec);

/* Calls method ("StopUnit", "StartUnit") on unit with job mode mode and waits at most
 * timeout_usec for the job to finish. Returns 0 when its result is "done", -EIO with the
 * result ("failed", "dependency", "timeout"...; for a mount unit with its own result, such
 * as "exit-code", and where systemd logged why: "failed, result exit-code: see journalctl
 * -u UNIT") or the bus error in *ret_result, -ETIMEDOUT with a sentence in *ret_result when
 * the job did not end in time (it is cancelled then: a job left queued would run later,
 * unfollowed; its control process may still be at work, see remount_systemd_wait_idle()), or
 * -errno. */
int remount_systemd_run_job(sd_bus *bus, const char *unit, const char *method, const char *mode,
                            uint64_t timeout_usec, char **ret_result);

/* Starts a transient mount unit named unit (replacing a stopped one made from the mount
 * table) with What=what, Type=type, Options=options, and waits as remount_systemd_run_job(). */
int remount_systemd_start_transient(sd_bus *bus, const char *unit, const char *what, const char *type,
                                    const char *options, uint64_t timeout_usec, char **ret_result);

/* Whether unit is active now (ActiveState active, reloading or activating). Returns 1, 0,
 * or -errno. */
int remount_systemd_is_active(sd_bus *bus, const char *unit);

/* Forgets the failed state of unit (a failed transient unit would refuse a new one of its
 * name). Returns 0 or -errno. */
int remount_systemd_reset_failed(sd_bus *bus, const char *unit);
