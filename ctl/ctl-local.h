/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* status and explain without the daemon: the engine set up in this process, read-only, with
 * what it finds in sysfs (ctl-local.c). Each says so on stderr first. */

/* status of the named disks (every disk when argc is 0) without the daemon. Returns 0 or -errno
 * (logged): -ENODEV for a name that is no block device, -EIO when the devices cannot be read. */
int ctl_status_local(int argc, char **argv);

/* explain of one disk without the daemon. Returns 0 or -errno (logged): -ENODEV for a name that
 * is no block device, -EIO when the devices cannot be read. */
int ctl_explain_local(const char *name);
