/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Names and flag bits of the org.stablepages1 D-Bus API, shared by stablepagesd and
 * stablepagesctl. The contract is documented in org.stablepages1(5). */

#define BUS_NAME "org.stablepages1"
#define BUS_PATH "/org/stablepages1"
#define BUS_DEVICE_PREFIX "/org/stablepages1/device"
#define BUS_MANAGER_INTERFACE "org.stablepages1.Manager"
#define BUS_DEVICE_INTERFACE "org.stablepages1.Device"
/* polkit actions (conf/org.stablepages1.policy): */
#define BUS_POLKIT_RUNTIME "org.stablepages1.manage-runtime"       /* until reboot, apply, reload */
#define BUS_POLKIT_PERSISTENT "org.stablepages1.manage-persistent" /* drop-ins in /etc */
#define BUS_POLKIT_FORCE "org.stablepages1.force"                  /* --force: off despite the need */
#define BUS_POLKIT_REMOUNT "org.stablepages1.remount"              /* the unmount + mount cycle */
/* How long the daemon waits for polkit's answer, which may wait for the user's password. */
#define BUS_POLKIT_TIMEOUT_USEC (120 * USEC_PER_SEC)

#define BUS_ERROR_NO_SUCH_DEVICE "org.stablepages1.Error.NoSuchDevice"
#define BUS_ERROR_INVALID_NAME "org.stablepages1.Error.InvalidName"
#define BUS_ERROR_REFUSED "org.stablepages1.Error.Refused"
#define BUS_ERROR_ACCESS_DENIED "org.stablepages1.Error.AccessDenied"
#define BUS_ERROR_APPLY_FAILED "org.stablepages1.Error.ApplyFailed"
#define BUS_ERROR_CONFIG_INVALID "org.stablepages1.Error.ConfigInvalid"
#define BUS_ERROR_NO_IDENTITY "org.stablepages1.Error.NoIdentity"

/* SetDevicePolicy() / ResetDevicePolicy() flags */
#define SET_FLAG_RUNTIME (UINT64_C(1) << 0)
#define SET_FLAG_FORCE (UINT64_C(1) << 1)
#define SET_FLAG_APPLY (UINT64_C(1) << 2)
#define SET_FLAG_BIND_NAME (UINT64_C(1) << 3) /* persistent: bind to the kernel name on purpose */
#define SET_FLAGS_ALL (SET_FLAG_RUNTIME | SET_FLAG_FORCE | SET_FLAG_APPLY | SET_FLAG_BIND_NAME)

/* Apply() flags */
#define APPLY_FLAG_REMOUNT (UINT64_C(1) << 0)
#define APPLY_FLAGS_ALL (APPLY_FLAG_REMOUNT)

/* DumpJSON() flags */
#define DUMP_FLAG_PRETTY (UINT64_C(1) << 0)
#define DUMP_FLAG_STALLS (UINT64_C(1) << 1) /* each disk's name and stall figures only */
#define DUMP_FLAGS_ALL (DUMP_FLAG_PRETTY | DUMP_FLAG_STALLS)

/* ListDevices() stall p99 when nothing was measured */
#define STALL_UNMEASURED_USEC UINT64_MAX
