/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the Manager's files share (manager.c the snapshots, scan, apply, reconcile, reload and
 * lifecycle; manager-publish.c; manager-events.c; manager-remount.c), not for its users: those
 * read manager.h. */

#include "manager.h"

/* Frees what s holds (not s). */
void manager_snapshot_done(DeviceSnapshot *s);

/* The snapshot of the disk of that name, or NULL. */
DeviceSnapshot *manager_snapshot_find(Manager *m, const char *name);

/* Tells the event handler, if any, about an event of type on device (result: MANAGER_APPLIED). */
void manager_emit(Manager *m, ManagerEventType type, const char *device, const ApplyResult *result);

/* ---- manager-publish.c ---- */

/* Sends STATUS= (devices, stable, pending) when it changed, or always with extra (e.g.
 * "READY=1\n") in front. */
void manager_notify_status(Manager *m, const char *extra);

/* Forgets what the consumers of every disk took. */
void manager_consumers_free(Manager *m);

/* Pending mounts, device events, status, devices.json: everything derived, in that order.
 * Device events only for the disks with only[i] when only is not NULL (the others did not
 * change). */
void manager_publish_devices(Manager *m, const bool *only);

/* manager_publish_devices() for every disk. */
void manager_publish(Manager *m);

/* ---- manager-events.c ---- */

/* The uevent, mount table and swap callbacks of the monitors manager_start() creates. */
void manager_on_uevent(UdevWatch *w, const char *action, const char *sysname, const char *devtype,
                       void *userdata);
void manager_on_mounts_changed(MountTracker *t, void *userdata);
void manager_on_swaps_changed(SwapTracker *t, void *userdata);

/* Arms (or, with RescanSec=0, disarms) the periodic rescan per the configuration. Returns 0 or
 * -errno. */
int manager_arm_rescan(Manager *m);

/* ---- manager-remount.c ---- */

/* Creates the Remounter, with the Manager as its host. Returns 0 or -errno. */
int manager_remount_new(Manager *m);
