/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The verbs of stablepagesd; each returns 0 or -errno, which exit_code_from_result()
 * (exit-code.h) maps to the process exit code: -EINVAL usage (2), -ENODEV no such device (4),
 * any other failure 1. */

#include "engine.h"

/* Applies the decision for each named disk (or partition: its disk), recording each disk's
 * first sight in its history: with action "add" (the uevent's) for a disk named itself, as the
 * flag the kernel set at its add. Exit 0 when every device is as desired; -EIO when one was
 * refused or a write failed, -ENODEV when one does not exist (which outweighs). */
int verb_apply(const EngineOptions *o, const char *action, char **names, int n);

/* Puts back the flag of each named disk (every disk with all) that the project changed to
 * what its history says the kernel set (engine_restore()): a disk that needs stable writes is
 * left on. Returns 0 (also when there was nothing to restore or a required disk was left on),
 * -EIO when a write failed, -ENODEV when a named disk does not exist, -EINVAL for usage. */
int verb_restore(const EngineOptions *o, bool all, char **names, int n);

/* Prints the engine's view of every disk (or only the named ones); -ENODEV when one does not
 * exist. */
int verb_dump(const EngineOptions *o, const char *json, char **names, int n);

/* Prints the facts of one disk that only root can read, as udev properties (KEY=value
 * lines) for the udev rule's IMPORT{program}: the device-mapper table of a dm device
 * (dm-table.h), the device under a loop device's backing file (loop-backing.h). Nothing for
 * other disks. Returns 0, -EIO when the table or the loop device cannot be read, -EINVAL for
 * usage errors, -ENODEV when no such disk. */
int verb_udev_facts(const EngineOptions *o, char **names, int n);

/* Runs the daemon until SIGTERM. Returns the exit code itself: 0, or 1 (EXIT_FAILURE, for
 * systemd's Restart=on-failure) on any failure. */
int verb_daemon(const EngineOptions *o);
