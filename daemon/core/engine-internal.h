/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Between the engine's files (engine.c, engine-scan.c): private to them. */

#include "engine.h"

/* Frees what was derived about d (not its facts) and zeroes it. */
void engine_device_done(EngineDevice *d);

/* Frees the engine's device tables (facts and what was derived). */
void engine_devices_free(Engine *e);

/* Order of protection: a Need= may move a disk up this list, never down. */
int need_rank(Need n);

/* Derives the override in force, Need=, what was learned and the policy's decision for d,
 * whose facts and classification are set. Returns 0 or -errno. */
int engine_decide(Engine *e, EngineDevice *d);
