/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The overrides of stablepagesctl set and reset, as the Manager runs them (the pure side is
 * overrides.h): runtime ones, bound to a disk's diskseq, saved in the runtime dir and applied
 * by a reconcile; persistent ones, one drop-in per disk identity (identity.h), written
 * atomically into the drop-in directory and read back through a reload. Each function takes
 * the disk d as manager_find_device() returned it (a disk, never a partition) and reconciles,
 * after which d is no longer valid. */

#include "manager.h"

/* Sets the runtime override of d to setting, with force, or removes it when setting is
 * SETTING_AUTO and !force; the override is bound to this disk (its diskseq) and dropped when
 * the disk goes away. Saves the overrides to the runtime dir and reconciles, which applies it.
 * Returns 0, -EINVAL for an invalid setting, -EOPNOTSUPP when the kernel gives the disk no
 * diskseq, or -errno when saving failed (nothing changed). */
int manager_set_override(Manager *m, const EngineDevice *d, Setting setting, bool force);

/* Drops the runtime overrides of disks that are gone and binds those an earlier version
 * keyed by name to the disk of that name, each change logged. Needs the table of every disk.
 * Returns > 0 when decisions must be made again, 0, or -ENOMEM. */
int manager_update_overrides(Manager *m);

/* Makes setting (with force) the persistent override of d:
 * writes the drop-in bound to the disk's stable identity, or to its kernel name when
 * by_name; with force, only to an identity of the disk itself (never the slot, never the
 * name: force with by_name is the caller's error). Removes every other drop-in of
 * stablepagesctl that matches the disk (and its runtime override: the newer word wins), then
 * reloads. auto without force removes them all instead. *ret_message says what was written
 * and replaced ("bound to [Device …] in FILE; replaced FILE"), or why it failed (a sentence
 * naming the disk). Returns 0; -ENXIO when the disk has no stable identity (with
 * force: none of its own); -EEXIST when the drop-in's name holds another disk's override;
 * -EINVAL when written but the configuration has errors and was not reloaded; or another
 * -errno when writing or removing failed. */
int manager_set_persistent(Manager *m, const EngineDevice *d, Setting setting, bool force, bool by_name,
                           char **ret_message);

/* The one reset: removes the overrides of d, its runtime override (then reconciles) and, unless
 * runtime_only, every drop-in of stablepagesctl that matches it (then reloads). *ret_removed
 * lists what was removed, one sentence each (NULL: nothing). Returns 0; -EINVAL when the
 * configuration has errors and was not reloaded (*ret_reason says which); or another -errno
 * when removing failed (*ret_reason says which, when it is about a file). */
int manager_reset_overrides(Manager *m, const EngineDevice *d, bool runtime_only, char ***ret_removed,
                            char **ret_reason);
