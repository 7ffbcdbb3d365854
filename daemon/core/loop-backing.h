/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The device holding the backing file of a loop device: a loop device in direct I/O mode
 * writes straight to it, so it needs what that disk needs (classify.c). Finding it must never
 * hang: stat(2) of the backing file's path waits for its filesystem, which a hung NFS server or
 * a stopped FUSE daemon never answers, and the daemon's event loop and the udev applier must go
 * on. In this order:
 *
 * 1. The udev rule's record. "stablepagesd udev-facts" runs as root under udevd for every loop
 *    device and asks the kernel (LOOP_GET_STATUS64 on the device node: no path is walked;
 *    the kernel asks the filesystem for the file's inode number only, which NFS answers from
 *    its cache, and FUSE asks its daemon, so it is made in a child and given up after
 *    LOOP_BACKING_TIMEOUT_USEC). It records in the udev database:
 *      STABLEPAGES_LOOP_DISKSEQ=N            the loop device's diskseq it was read for (a new
 *                                            file attached, or the same file again, is a new
 *                                            diskseq: an older record is not used)
 *      STABLEPAGES_LOOP_BACKING_DEVNUM=M:m   the device of the filesystem holding the file
 *      STABLEPAGES_LOOP_BACKING_ERROR=TEXT   or why it could not tell
 * 2. Without a record of this diskseq: stat(2) of the path, in a child process, given up after
 *    LOOP_BACKING_TIMEOUT_USEC (bounded.h). */

#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

#define LOOP_DISKSEQ_PROPERTY "STABLEPAGES_LOOP_DISKSEQ"
#define LOOP_BACKING_PROPERTY "STABLEPAGES_LOOP_BACKING_DEVNUM"
#define LOOP_BACKING_ERROR_PROPERTY "STABLEPAGES_LOOP_BACKING_ERROR"

#define LOOP_BACKING_TIMEOUT_USEC (1 * USEC_PER_SEC)

/* The record above among properties (udev KEY=value strings of the loop device) for the
 * loop device's diskseq. Returns 1 with *ret, 0 when there is no record for that diskseq, or
 * -EIO with *ret_reason (pointing into properties) when the record says why it could not tell. */
int loop_backing_from_record(char *const *properties, uint64_t diskseq, dev_t *ret, const char **ret_reason);

/* The default resolver of DeviceScanOptions: stat(2) of path in a child, bounded. Returns 0
 * with *ret, -ETIMEDOUT, or -errno. */
int loop_backing_stat(const char *path, void *userdata, dev_t *ret);

/* What udev-facts prints for loop device name (devnum) under sysfs_root, read from the kernel
 * through the device node node: the lines of the record above (none when no file is attached,
 * or when the loop device changed while it was read: its next uevent brings the new record).
 * Returns 0 with *ret_lines (NULL-terminated, may be NULL), or -errno when the node cannot be
 * used (then nothing is recorded). */
int loop_backing_udev_facts(const char *sysfs_root, const char *name, dev_t devnum, const char *node,
                            char ***ret_lines);
