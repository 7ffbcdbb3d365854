/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The consumers stablepagesctl and stablepagesd dump find without the daemon: the mounts of
 * /proc/self/mountinfo and the swap areas of /proc/swaps on a disk of the engine, each "assumed"
 * to have taken the flag as it is now (consumers.h dates them by the disk's history). Read only
 * when the engine reads the running kernel's /sys: a captured tree's disks are not this
 * machine's. */

#include <libmount/libmount.h>

#include "consumers.h"
#include "swap-areas.h"

typedef struct LocalConsumers {
        ConsumerMount *mounts;
        size_t n_mounts;
        char **strings; /* what the mounts point to */
        SwapAreas areas;
        ConsumerSwap *swaps;
        size_t n_swaps;
} LocalConsumers;

void local_consumers_done(LocalConsumers *l);

/* Reads the mounts and swap areas on the disks of e. Returns 0 (nothing read for a sysfs root
 * other than /sys; a table that cannot be read is left empty) or -ENOMEM. */
int local_consumers_read(const Engine *e, LocalConsumers *ret);

/* The inputs of consumers_of() that l holds. */
ConsumerInputs local_consumers_inputs(const LocalConsumers *l);

/* The block device a mount was made from, by the superblock's device number (mountinfo's
 * MAJ:MIN). btrfs superblocks have anonymous device numbers: for btrfs only, the source, which
 * btrfs writes itself (its show_devname: the member device with the lowest id) and only root can
 * mount. Never the source text of anything else: a FUSE mount sets it to anything (any user:
 * fusermount -o fsname=/dev/sda1). 0 when there is none. */
dev_t mount_fs_source_devnum(struct libmnt_fs *fs);
