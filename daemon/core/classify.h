/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Facts -> need + reasons. Pure: a table of detectors over DeviceFacts; stacked devices
 * (slaves/, loop backing) take the strongest need below them. No /sys, no D-Bus. */

#include "device.h"
#include "macro.h"

/* Ordered by strength: a stacked device takes the maximum of its components. */
typedef enum Need {
        NEED_NONE,
        NEED_RECOMMENDED,
        NEED_UNKNOWN, /* declared by the kernel, unexplained: treated as required */
        NEED_REQUIRED,
        _NEED_MAX,
        _NEED_INVALID = -EINVAL,
} Need;

typedef struct Classification {
        Need need;
        char **reasons;          /* sentences citing the evidence, strongest first */
        char *flag_cause;        /* the kernel behaviour that sets queue/stable_writes on this device
                                  * ("zram_add() sets it on every zram disk"), or NULL: a declared
                                  * flag without a cause is what makes the need "unknown" */
        bool in_force;           /* stable writes are in force on the device now */
        bool integrity_enforced; /* in force through the integrity profile (6.11+), whatever
                                  * queue/stable_writes says: writing the flag cannot lift it */
} Classification;

/* Classifies every device of t; ret must hold t->n entries. kernel is
 * KERNEL_VERSION(major, minor, patch) of the kernel the facts come from. Returns 0 or -ENOMEM. */
int classify_table(const DeviceTable *t, unsigned kernel, Classification *ret);

/* Classifies the devices i of t with redo[i] (all when redo is NULL) into results[i]; the
 * others' results[j] must hold their classification already and are only read (what a
 * device stacked on them inherits). On failure the redone entries are freed and zeroed.
 * Returns 0 or -ENOMEM. */
int classify_devices(const DeviceTable *t, unsigned kernel, const bool *redo, Classification *results);

void classification_done(Classification *c);

/* True when stable writes are in force on a device with these facts on that kernel:
 * stable_writes==1, or kernel >= 6.11 and a checksum integrity format. */
bool stable_writes_in_force(const DeviceFacts *f, unsigned kernel);

/* The kernel state of a disk: "on", "off", "on (integrity)" when a 6.11+ integrity
 * profile enforces stable writes while the flag reads 0, "-" without a switch. */
const char *kernel_state_to_string(int flag, bool in_force);

/* True when need forbids turning stable writes off without force. */
static inline bool need_is_protected(Need n) {
        return n == NEED_REQUIRED || n == NEED_UNKNOWN;
}

const char *need_to_string(Need n);
Need need_from_string(const char *s);
