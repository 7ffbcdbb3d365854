/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which configuration is in force, one rule for the daemon and for the udev applier (and
 * stablepagesd dump), so that they never decide differently about a disk (stablepages.conf(5),
 * IN FORCE):
 *
 * - The daemon reads the files at start, a bad line reported and ignored; at a reload it takes
 *   them only when they have no error, and otherwise keeps the configuration in force. After
 *   each load it writes the configuration in force, as config_format() (config-show.h) formats it, to
 *   CONFIG_IN_FORCE_FILE in its runtime directory, and for as long as it runs it holds a POSIX
 *   write lock on CONFIG_IN_FORCE_LOCK there (a record lock: its children do not inherit it,
 *   its death releases it).
 * - The applier reads the files the same way; when they have errors and a daemon holds the
 *   lock, it uses CONFIG_IN_FORCE_FILE instead and says so: what the daemon keeps. With no
 *   daemon running it uses the files without their bad lines, as the daemon will at its start.
 *
 * CONFIG_IN_FORCE_FILE is a configuration file in stablepages.conf syntax with every key, so
 * that anything may read it (config_parse_file(), stablepagesctl check-config). */

#include <sys/types.h>

#include "config.h"

#define CONFIG_IN_FORCE_FILE "config.conf"
#define CONFIG_IN_FORCE_LOCK "daemon.lock"

/* The daemon: takes the lock of runtime_dir. Returns the file descriptor that holds it (to keep
 * open), -EBUSY with *ret_holder when another process holds it, or -errno. */
int config_in_force_lock(const char *runtime_dir, pid_t *ret_holder);

/* The daemon: writes c to runtime_dir/CONFIG_IN_FORCE_FILE atomically. Returns 0 or -errno. */
int config_in_force_save(const char *runtime_dir, const Config *c);

/* The applier: the files config_file and dropin_dir into *ret with their diagnostics in *diags,
 * as config_load() reads them; when they have errors and a daemon holds the lock of
 * runtime_dir, the configuration it has in force instead, and *ret_note says so (else NULL).
 * Returns 0; -EIO when the daemon's copy does not read cleanly (*ret then holds the files, and
 * *ret_note says why the copy was not used); or -ENOMEM (*ret to be freed with config_done()). */
int config_load_in_force(const char *config_file, const char *dropin_dir, const char *runtime_dir,
                         Config *ret, ConfigDiags *diags, char **ret_note);
