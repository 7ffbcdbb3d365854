/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The cycle through systemd, for mounts systemd manages: a restart of the .mount unit
 * makes systemd unmount and mount it with the options of /etc/fstab or the unit file, and
 * run its dependencies. Blocking sd-bus calls: used only in the cycle's child process.
 *
 * Absence is normal and detected, never an error: no system bus, or no
 * org.freedesktop.systemd1 on it, or no loaded and active unit for the mount point, or a
 * unit systemd could not mount again (made from the mount table, with neither FragmentPath
 * nor SourcePath) all make remount_systemd_find() return 0, and the caller falls back to
 * doing the cycle itself in the host's mount namespace. */

#include <stdint.h>
#include <systemd/sd-bus.h>

/* Whether systemd manages the mount on target. Returns 1 with the bus connection and the
 * unit name, 0 with a reason for the log in *ret_why (systemd is not there or does not
 * manage it), or -errno. */
int remount_systemd_find(const char *target, sd_bus **ret_bus, char **ret_unit, char **ret_why);

/* Active units, other than targets, that restarting unit would stop or restart too
 * (RequiredBy=, BoundBy=). Returns 0 with a comma-separated list in *ret, or NULL when
 * there are none; -errno on bus errors. */
int remount_systemd_dependents(sd_bus *bus, const char *unit, char **ret);

/* Calls method ("RestartUnit", "StartUnit") on unit with job mode "replace" and waits at
 * most timeout_usec for the job to finish. Returns 0 when its result is "done", -EIO with
 * the result ("failed", "dependency", "timeout"...) in *ret_result, -ETIMEDOUT, or -errno. */
int remount_systemd_run_job(sd_bus *bus, const char *unit, const char *method, uint64_t timeout_usec,
                            char **ret_result);
