/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The device-mapper table of one dm device, reduced to what decides stable writes: each
 * target's type and, for dm-integrity, its mode and internal hash; for dm-crypt, its
 * integrity (AEAD) option; for dm-raid, its raid type. Nothing secret is kept: keys in the
 * table (dm-crypt, keyed hashes) are never copied out of the buffer they arrive in.
 *
 * The table is read with the DM_TABLE_STATUS ioctl, which needs CAP_SYS_ADMIN. The udev rule
 * runs as root and records it in the udev database (`stablepagesd udev-facts`), from which
 * the sandboxed daemon reads it:
 *   STABLEPAGES_DM_TABLE=N       number of targets of the live table (0: none loaded)
 *   STABLEPAGES_DM_TARGETS=T...  the distinct targets, space separated, each
 *                                "type[,key=value]..." with keys mode, hash (integrity),
 *                                integrity (crypt) and level (raid), e.g.
 *                                "integrity,mode=B,hash=crc32c linear" */

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "macro.h"

#define DM_TABLE_PROPERTY "STABLEPAGES_DM_TABLE"
#define DM_TARGETS_PROPERTY "STABLEPAGES_DM_TARGETS"

typedef struct DmTarget {
        char *type;            /* "integrity", "crypt", "linear"… */
        char mode;             /* integrity: 'J' 'B' 'D' 'I' 'R' as the table says; '?' when the
                                * table has none; '\0' for other targets */
        char *hash;            /* integrity: its internal_hash algorithm, NULL without one */
        char *crypt_integrity; /* crypt: the tag type of its integrity option ("aead",
                                * "hmac(sha256)"), NULL without one */
        char *raid_level;      /* raid: the raid type ("raid1", "raid5_ls"…) */
} DmTarget;

typedef struct DmTable {
        unsigned count;    /* targets in the live table, 0 when none is loaded */
        DmTarget *targets; /* the distinct ones (a table of many linear segments is one) */
        size_t n;
} DmTable;

void dm_table_done(DmTable *t);

/* Adds the target of TYPE with parameters PARAMS (as the kernel prints them for
 * STATUSTYPE_TABLE, or `dmsetup table` shows them) to t, unless an equal one is there.
 * Returns 0 or -ENOMEM. */
int dm_table_add(DmTable *t, const char *type, const char *params);

/* Parses `dmsetup table` lines ("START LENGTH TYPE PARAMS") into *ret. Returns 0, -EINVAL
 * for a line without a target type, or -ENOMEM. */
int dm_table_from_lines(char *const *lines, DmTable *ret);

/* Reads the live table of the dm device devnum from the kernel (DM_TABLE_STATUS on
 * /dev/mapper/control). Returns 0, -EACCES/-EPERM without CAP_SYS_ADMIN, -ENXIO when no
 * such dm device, or another -errno. */
int dm_table_read_kernel(dev_t devnum, DmTable *ret);

/* The callback form of dm_table_read_kernel() (userdata unused), for DeviceScanOptions. */
int dm_table_reader_kernel(dev_t devnum, void *userdata, DmTable *ret);

/* Formats t as udev properties ("KEY=value" strings). Returns 0 or -ENOMEM. */
int dm_table_to_properties(const DmTable *t, char ***ret);

/* Parses the properties above out of "KEY=value" strings. Returns 0, -ENODATA when
 * STABLEPAGES_DM_TABLE is absent, -EINVAL when it is malformed, or -ENOMEM. */
int dm_table_from_properties(char *const *properties, DmTable *ret);

/* One target as "type[,key=value]..." (its udev form). Returns a new string or NULL. */
char *dm_target_to_string(const DmTarget *t);
