/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The persistent overrides of stablepagesctl set and reset, as the Manager runs them: one
 * drop-in per disk identity (identity.h), written atomically into the drop-in directory and
 * read back through a reload. Runtime overrides are manager_set_override()'s. */

#include "manager.h"

/* Makes setting (with force) the persistent override of a disk (or partition: its disk):
 * writes the drop-in bound to the disk's stable identity, or to its kernel name when
 * by_name; with force, only to an identity of the disk itself (never the slot, never the
 * name: force with by_name is the caller's error). Removes every other drop-in of
 * stablepagesctl that matches the disk (and its runtime override: the newer word wins), then
 * reloads. auto without force removes them all instead. *ret_message says what was written
 * and replaced ("bound to [Device …] in FILE; replaced FILE"), or why it failed (a sentence
 * naming the disk). Returns 0; -ENODEV; -ENXIO when the disk has no stable identity (with
 * force: none of its own); -EEXIST when the drop-in's name holds another disk's override;
 * -EINVAL when written but the configuration has errors and was not reloaded; or another
 * -errno when writing or removing failed. */
int manager_set_persistent(Manager *m, const char *name, Setting setting, bool force, bool by_name,
                           char **ret_message);

/* Removes the overrides of a disk (or partition: its disk): its runtime override and, unless
 * runtime_only, every drop-in of stablepagesctl that matches it, then reloads. *ret_removed
 * lists what was removed, one sentence each (NULL: nothing). Returns 0; -ENODEV; -EINVAL
 * when the configuration has errors and was not reloaded (*ret_message says which); or
 * another -errno when removing failed (*ret_message says which). */
int manager_reset_overrides(Manager *m, const char *name, bool runtime_only, char ***ret_removed,
                            char **ret_message);
