/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The consumers of disks (consumers.h) as status and explain show them: from the daemon
 * (ListConsumers, the Consumers property of a Device) or, without it, worked out here. */

#include <systemd/sd-bus.h>

#include "consumers.h"

/* The consumers of each disk, by name. */
typedef struct ConsumerSet {
        char **disks; /* parallel to lists */
        DeviceConsumers *lists;
        size_t n;
} ConsumerSet;

void consumer_set_done(ConsumerSet *s);

/* The consumers of the disk name in s, or NULL. */
const DeviceConsumers *consumer_set_find(const ConsumerSet *s, const char *name);

/* Every disk's consumers from the daemon's ListConsumers. Returns 0 or -errno (logged). */
int ctl_consumers_from_bus(sd_bus *bus, ConsumerSet *ret);

/* The consumers of every disk of e, found by this process (consumers-read.h). Returns 0 or
 * -ENOMEM (logged). */
int ctl_consumers_local(const Engine *e, ConsumerSet *ret);

/* Reads an "a(ssssbstbs)" (the Consumers property) at the current position of m into *ret.
 * Returns 0 or -errno. */
int ctl_read_consumers(sd_bus_message *m, DeviceConsumers *ret);

/* "TARGET:on TARGET:off" of the filesystems of c, "-" when none: the MOUNTS column of status
 * without the daemon. NULL on -ENOMEM. */
char *ctl_mounts_summary(const DeviceConsumers *c);

/* The "consumer:" lines of explain: one per consumer. */
void ctl_print_consumers(const DeviceConsumers *c);

/* Says each hazard of the consumers of disk at error level; for its page cache, with the processes
 * this process sees holding the disk open for writing. */
void ctl_say_consumer_hazards(const char *disk, const DeviceConsumers *c);
