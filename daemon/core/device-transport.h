/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* How a disk is attached, where its attributes do not say it, read under a sysfs root from the
 * disk's kernel name: the iSCSI connection above it, the paths of an NVMe multipath head, the
 * drivers of its device's ancestors. device.c puts what they find into the disk's facts. */

/* Finds the data digest of the iSCSI connection above the disk's SCSI device, if any, into
 * *digest, and the driver of the SCSI host of its session into *host_driver (each left alone
 * when not found). Returns 0 or -ENOMEM. */
int device_read_iscsi_digest(const char *sysfs_root, const char *disk, char **digest, char **host_driver);

/* Whether an ancestor of the disk's device (in the resolved sysfs path) is bound to driver:
 * e.g. the SPI device (driver mmc_spi) above an MMC card's host. Returns 1, 0, or -ENOMEM. */
int device_ancestor_has_driver(const char *sysfs_root, const char *disk, const char *driver);

/* Appends the paths of an NVMe multipath head "nvmeXnY" to *paths: the hidden disks
 * "nvmeXcZnY" (named so by nvme_alloc_ns()). A namespace without multipath has none. Returns 0,
 * -ENOMEM, or -errno when the disks under sysfs_root cannot be listed. */
int device_read_nvme_paths(const char *sysfs_root, const char *disk, char ***paths);
