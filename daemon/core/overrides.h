/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The overrides of stablepagesctl set, pure: the runtime ones (a store in the runtime dir,
 * each bound to a disk's diskseq), the persistent ones (drop-ins of stablepagesctl, each
 * matching a disk identity), which one is in force for a disk, and the list of them all.
 * The runtime dir's file:
 *   overrides         runtime overrides, one "diskseq=<N> <disk> on|off|auto [force]" per
 *                     line: bound to the disk with that diskseq (unique for this boot), the
 *                     name only shown; lines "<disk> on|off|auto [force]" written by earlier
 *                     versions (keyed by name only) are read as unbound entries, see
 *                     runtime_overrides_update() */

#include "config.h"
#include "device.h"

typedef struct Engine Engine;
typedef struct EngineDevice EngineDevice;

typedef struct RuntimeOverride {
        uint64_t diskseq; /* the disk it is bound to (its diskseq); 0: an entry of an older
                           * version keyed by the kernel name only, never applied */
        char *disk;       /* the kernel name of that disk, for messages */
        Setting setting;
        bool force;
} RuntimeOverride;

typedef struct RuntimeOverrides {
        RuntimeOverride *items;
        size_t n;
} RuntimeOverrides;

/* Loads dir/overrides. A missing file is an empty set. Malformed lines are skipped with a
 * warning. Returns 0 or -errno. */
int state_load_overrides(const char *dir, RuntimeOverrides *ret);

/* Writes the set atomically to dir/overrides. Returns 0 or -errno. */
int state_save_overrides(const char *dir, const RuntimeOverrides *o);

/* Sets the override of the disk with diskseq (named disk) to setting and force, or removes
 * it (auto without force). diskseq 0 keys an unbound entry by disk instead (what an older
 * version wrote). Returns 0, or -EINVAL for an invalid name, or -ENOMEM. */
int runtime_overrides_set(RuntimeOverrides *o, uint64_t diskseq, const char *disk, Setting setting,
                          bool force);

/* Removes the override of the disk with diskseq (or the unbound entry of disk when diskseq is
 * 0). Returns 1 when there was one, else 0. */
int runtime_overrides_remove(RuntimeOverrides *o, uint64_t diskseq, const char *disk);

/* The override bound to diskseq, or NULL (always NULL for 0: a disk without a diskseq has no
 * identity for this boot, and unbound entries apply to no disk). */
const RuntimeOverride *runtime_overrides_find(const RuntimeOverrides *o, uint64_t diskseq);

/* "off (force)": the setting and force of o, in buf (at least 32 bytes). Returns buf. */
char *runtime_override_format(const RuntimeOverride *o, char buf[static 32]);

/* Brings the set in line with the disks of t (every disk of the machine): an override whose
 * disk is gone is dropped, also when another disk took its name (a disk whose diskseq could
 * not be read keeps the override of its name: it may still be that disk); an unbound entry
 * of an older version is bound to the disk that has its name now, or dropped when there is
 * none. Each change is described by one sentence appended to *ret_changes. Returns the
 * number of entries bound (decisions must then be made again), or -ENOMEM. */
int runtime_overrides_update(RuntimeOverrides *o, const DeviceTable *t, char ***ret_changes);

void runtime_overrides_done(RuntimeOverrides *o);

/* True when the file name (or path) is a drop-in written by stablepagesctl. */
bool dropin_is_ours(const char *path);

/* The paths of the drop-ins of stablepagesctl in dir with a [Device] section that matches id,
 * sorted. A missing dir has none. Returns the number or -errno. */
int dropins_matching(const char *dir, const DeviceIdentity *id, char ***ret_paths);

/* Says which override is in force for d and what it is bound to: a runtime one (o) to the
 * disk's diskseq, a [Device] section to its match. Returns 0 or -ENOMEM. */
int engine_describe_override(const Engine *e, EngineDevice *d, const RuntimeOverride *o,
                             const DeviceRule *force_rule);

/* One override in force, or kept for a disk that is not there. */
typedef struct OverrideEntry {
        const char *disk; /* the disk it applies to now, NULL when none */
        Setting setting;
        bool force;
        const char *scope; /* "runtime" or "config" */
        char *binding;     /* as EngineDevice.override_binding */
        char *source;      /* as EngineDevice.override_source */
} OverrideEntry;

/* The overrides in force for the disks of e (only those of disks when disks is not NULL),
 * then, when disks is NULL, the drop-ins of stablepagesctl that match no disk present, as an
 * array of *ret_n entries; the strings are owned by the entries. Returns 0 or -ENOMEM. */
int engine_list_overrides(const Engine *e, char *const *disks, OverrideEntry **ret, size_t *ret_n);

void override_entries_free(OverrideEntry *entries, size_t n);
