/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Runtime state under /run/stablepages (a parameter for tests), written atomically (the
 * history of each disk's flag, history/<disk>, is history.h's):
 *   overrides         runtime overrides, overrides.h's
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
