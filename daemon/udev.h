/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Block device uevents as an sd-event io source. Listens on the "udev" netlink source when
 * systemd-udevd runs (its rules and database are then complete when we hear of a device),
 * else on the "kernel" source. Only disks and partitions are passed on. */

#include <systemd/sd-event.h>

#include "macro.h"

typedef struct UdevWatch UdevWatch;

/* Called for each block uevent: action ("add", "change", "remove"…), kernel name of the disk
 * or partition and its devtype ("disk" or "partition"). Called with all three NULL when
 * events were lost (receive buffer overrun): the caller should rescan everything. */
typedef void (*udev_watch_handler_t)(UdevWatch *w, const char *action, const char *sysname,
                                     const char *devtype, void *userdata);

/* Starts monitoring on e. Returns 0 and *ret, or -errno. */
int udev_watch_new(sd_event *e, udev_watch_handler_t handler, void *userdata, UdevWatch **ret);

/* Stops monitoring and frees w; returns NULL. */
UdevWatch *udev_watch_free(UdevWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(UdevWatch *, udev_watch_free);

/* "udev" or "kernel": the netlink source w listens on. */
const char *udev_watch_source(const UdevWatch *w);
