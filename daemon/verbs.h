/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The verbs of stablepagesd; each returns the process exit code. */

#include "engine.h"

/* Applies the decision for each named disk (or partition: its disk). Exit 0 when every
 * device is as desired, 1 when one was refused or a write failed, 4 when one does not exist. */
int verb_apply(const EngineOptions *o, char **names, int n);

/* Prints the engine's view of every disk (or only the named ones). */
int verb_dump(const EngineOptions *o, const char *json, char **names, int n);

/* Prints the facts of one disk that only root can read, as udev properties (KEY=value
 * lines) for the udev rule's IMPORT{program}: the device-mapper table of a dm device
 * (dm-table.h). Nothing for other disks. Exit 0, 1 when the table cannot be read, 2 for
 * usage errors, 4 when no such disk. */
int verb_udev_facts(const EngineOptions *o, char **names, int n);

/* Runs the daemon until SIGTERM. */
int verb_daemon(const EngineOptions *o);
