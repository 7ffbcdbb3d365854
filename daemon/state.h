/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Runtime state under /run/stablepages (a parameter for tests), written atomically:
 *   original/<disk>   the flag as the kernel set it, recorded before our first write
 *                     ("diskseq=N\nstable_writes=V\n"), so that "declared" survives us
 *   overrides         runtime overrides, one "<disk> on|off|auto [force]" per line
 *   mounts            effective-state records of mounted filesystems, one per line:
 *                     "<mount id> <sb MAJ:MIN> <source MAJ:MIN> <0|1> <origin> <since usec>
 *                     <unique mount id> <mount ns inode> <fstype> <target>", fstype and
 *                     target escaped as in mountinfo (\040 for a space) */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* Reads the recorded original flag of disk for diskseq. Returns 0/1, -ENOENT when nothing
 * (or a record of an earlier device of the same name) is recorded, or -errno. */
int state_read_original(const char *dir, const char *disk, uint64_t diskseq);

/* Records value as the original flag of disk unless a record for this diskseq exists.
 * Returns 0 or -errno. */
int state_record_original(const char *dir, const char *disk, uint64_t diskseq, int value);

/* Forgets the original record of a disk (removed devices). Returns 0 or -errno. */
int state_forget_original(const char *dir, const char *disk);

typedef struct RuntimeOverride {
        char *disk;
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

/* Sets (setting != auto or force) or removes (auto without force) the override of disk. */
int runtime_overrides_set(RuntimeOverrides *o, const char *disk, Setting setting, bool force);

/* The override of disk or NULL. */
const RuntimeOverride *runtime_overrides_find(const RuntimeOverrides *o, const char *disk);

void runtime_overrides_done(RuntimeOverrides *o);

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
