/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Deterministic fault injection for unit tests linked with
 *     -Wl,--wrap=open64,--wrap=openat64,--wrap=fopen64,--wrap=write,--wrap=read
 * (see tests/meson.build): the code under test calls the wrappers below instead of libc.
 * One fault is armed at a time; it fires for paths ending in its suffix:
 *
 * - before_open: runs just before open()/openat()/fopen() of such a path (openat() relative to
 *   a directory matches the directory's path joined with it), so a test can make the
 *   file vanish, or replace it, exactly between the caller's listing/stat and its open;
 * - write_errno: write() to an fd open on such a path fails with that errno, or (swallow)
 *   reports success without writing anything;
 * - mid_read: runs after the first (short) read() from such a path.
 *
 * Each firing is counted in fault_hits(), so a test can check that the window it meant to
 * hit was really hit. */

#include <errno.h>
#include <stdbool.h>

typedef void (*fault_action_t)(const char *path, void *userdata);

/* Arms a fault for paths ending in suffix (a copy is kept). */
void fault_arm_open(const char *suffix, fault_action_t before_open, void *userdata);
void fault_arm_write(const char *suffix, int write_errno);

/* write() to such a path reports success but writes nothing (a switch that ignores us). */
void fault_arm_write_swallow(const char *suffix);

/* The first read() from an fd open on such a path returns at most 16 bytes, then
 * mid_read runs (the path is the fd's), then reading goes on as usual: the file changes
 * while the caller is in the middle of reading it. */
void fault_arm_read(const char *suffix, fault_action_t mid_read, void *userdata);

/* Disarms any fault and resets the hit count. */
void fault_disarm(void);

/* How many times the armed fault fired since it was armed. */
unsigned fault_hits(void);
