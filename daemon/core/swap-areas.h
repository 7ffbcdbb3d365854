/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Active swap areas (/proc/swaps) and what each took at swapon: the kernel copies
 * bdev_stable_writes() of the block device a swap area writes to into SWP_STABLE_WRITES when it
 * is activated (a swap file: its filesystem's device, inode->i_sb->s_bdev), and never looks
 * again. The text of /proc/swaps is parsed here, paths are resolved to the block device with
 * stat(2), and the daemon keeps what it saw in RUNTIME_DIR/swaps across its restarts. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "state.h"

typedef struct SwapArea {
        char *path;    /* as /proc/swaps shows it, unescaped */
        bool file;     /* a swap file (else a block device or partition) */
        dev_t devnum;  /* the block device it writes to; 0 until resolved, or when unknown */
        uint64_t ino;  /* a swap file's inode, 0 for a device: tells this swapon from another */
        char *disk;    /* the whole disk of devnum, NULL when unknown */
        bool captured; /* stable writes taken at swapon */
        EffectiveOrigin origin;
        uint64_t since_usec; /* CLOCK_REALTIME when it was seen active (observed) or first seen */
} SwapArea;

typedef struct SwapAreas {
        SwapArea *items;
        size_t n;
} SwapAreas;

void swap_areas_done(SwapAreas *a);

/* Parses the text of /proc/swaps ("Filename Type Size Used Priority", then one line per area)
 * into paths and types. Returns 0 or -ENOMEM. */
int swap_areas_parse(const char *text, SwapAreas *ret);

/* Sets a->devnum and a->ino from stat(2) of a->path: a block device's own number, or a file's
 * filesystem device; fs_source maps an anonymous device number (btrfs) to the block device it
 * was mounted from (may be NULL). Returns 0 or -errno (the path cannot be seen from here). */
int swap_area_resolve(SwapArea *a, dev_t (*fs_source)(dev_t devnum, void *userdata), void *userdata);

/* The area of set with a's path, devnum and inode, or NULL. */
const SwapArea *swap_areas_find(const SwapAreas *set, const SwapArea *a);

/* Loads dir/swaps (what an earlier run saw; missing: none). Malformed lines are skipped.
 * Returns 0 or -errno. */
int swap_records_load(const char *dir, SwapAreas *ret);

/* Writes the set atomically to dir/swaps. Returns 0 or -errno. */
int swap_records_save(const char *dir, const SwapAreas *a);
