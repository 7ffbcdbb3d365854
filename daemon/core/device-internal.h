/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Between the readers of a disk's facts (device.c) and of its transport (device-transport.c):
 * private to them. */

#include "device.h"

/* Records in f->errors that attr exists but cannot be read (error). Returns 0 or -ENOMEM. */
int device_add_error(DeviceFacts *f, const char *attr, int error);

/* Fills f->iscsi_data_digest and f->scsi_host_driver when the disk is on an iSCSI session.
 * Returns 0 or -ENOMEM. */
int device_read_iscsi_digest(const DeviceScanOptions *o, DeviceFacts *f);

/* 1 when an ancestor of the disk's device is bound to driver, else 0; or -ENOMEM. */
int device_ancestor_has_driver(const DeviceScanOptions *o, const DeviceFacts *f, const char *driver);

/* Fills f->nvme_paths for an NVMe multipath head. Returns 0 or -ENOMEM. */
int device_read_nvme_paths(const DeviceScanOptions *o, DeviceFacts *f);
