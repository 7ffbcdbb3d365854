/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The verbs of stablepagesd; each returns the process exit code. */

#include "engine.h"

/* Applies the decision for each named disk (or partition: its disk). Exit 0 when every
 * device is as desired, 1 when one was refused or a write failed, 4 when one does not exist. */
int verb_apply(const EngineOptions *o, char **names, int n);

/* Prints the engine's view of every disk (or only the named ones). */
int verb_dump(const EngineOptions *o, const char *json, char **names, int n);

/* Runs the daemon until SIGTERM. */
int verb_daemon(const EngineOptions *o);
