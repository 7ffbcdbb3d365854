/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Runtime state under /run/stablepages (a parameter for tests), written atomically (the
 * history of each disk's flag, history/<disk>, is history.h's):
 *   overrides         runtime overrides, one "diskseq=<N> <disk> on|off|auto [force]" per
 *                     line: bound to the disk with that diskseq (unique for this boot), the
 *                     name only shown; lines "<disk> on|off|auto [force]" written by earlier
 *                     versions (keyed by name only) are read as unbound entries, see
 *                     runtime_overrides_update()
 *   mounts            effective-state records of mounted filesystems, one per line:
 *                     "<mount id> <sb MAJ:MIN> <source MAJ:MIN> <0|1> <origin> <since usec>
 *                     <unique mount id> <mount ns inode> <fstype> <target>", fstype and
 *                     target escaped as in mountinfo (\040 for a space)
 *   swaps             what the daemon saw of active swap areas, swap-areas.h's */

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "device.h"

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

/* Writes s to f with blanks, control characters and backslashes as \ooo, as mountinfo and
 * /proc/swaps do (the state files' fields are separated by blanks). */
void fputs_escaped(const char *s, FILE *f);

/* How the effective state of a mounted filesystem was learnt. */
typedef enum EffectiveOrigin {
        EFFECTIVE_OBSERVED,   /* we saw it appear: the device's state at that moment */
        EFFECTIVE_ASSUMED,    /* older than the daemon, no record: the state when first seen */
        EFFECTIVE_FILESYSTEM, /* the filesystem decides itself (NFS) */
        _EFFECTIVE_ORIGIN_MAX,
        _EFFECTIVE_ORIGIN_INVALID = -EINVAL,
} EffectiveOrigin;

const char *effective_origin_to_string(EffectiveOrigin o);
EffectiveOrigin effective_origin_from_string(const char *s);

/* What the daemon knew about one mounted filesystem, kept across restarts. */
typedef struct MountRecord {
        int id;              /* mount id (first field of mountinfo) */
        dev_t devnum;        /* the superblock's MAJ:MIN */
        dev_t source_devnum; /* the block device it was mounted from, 0 if none */
        bool effective;      /* stable writes captured by the filesystem at mount */
        EffectiveOrigin origin;
        uint64_t since_usec; /* CLOCK_REALTIME when the effective state was determined */
        uint64_t unique_id;  /* the kernel's 64-bit mount id (6.8+) as seen in mntns, 0 if unknown */
        uint64_t mntns;      /* inode of the mount namespace unique_id was read in */
        char *fstype;
        char *target;
} MountRecord;

typedef struct MountRecords {
        MountRecord *items;
        size_t n;
} MountRecords;

/* Loads dir/mounts. A missing file is an empty set; malformed lines are skipped with a
 * warning. Returns 0 or -errno. */
int state_load_mount_records(const char *dir, MountRecords *ret);

/* Writes the set atomically to dir/mounts. Returns 0 or -errno. */
int state_save_mount_records(const char *dir, const MountRecords *r);

/* Appends a copy of *rec. Returns 0 or -ENOMEM. */
int mount_records_add(MountRecords *r, const MountRecord *rec);

void mount_records_done(MountRecords *r);
