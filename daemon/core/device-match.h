/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a [Device MATCH] section of the configuration matches: a kernel name glob, MAJ:MIN or
 * a udev property of the disk. Pure. */

#include <stdbool.h>
#include <sys/types.h>

#include "device.h"

typedef enum MatchKind {
        MATCH_NAME_GLOB, /* [Device zram*]: fnmatch() on the disk's kernel name */
        MATCH_DEVNUM,    /* [Device 7:0] */
        MATCH_PROPERTY,  /* [Device ID_WWN=0x5000...]: udev property of the disk or of a
                          * partition/filesystem on it; value may be a glob. The key
                          * LOOP_BACKING_FILE matches the backing file of a loop device
                          * (loop/backing_file in sysfs: udev has no property for it) */
        _MATCH_KIND_MAX,
} MatchKind;

typedef struct DeviceMatch {
        MatchKind kind;
        char *pattern; /* glob, or property value (glob) */
        char *key;     /* property name for MATCH_PROPERTY, else NULL */
        dev_t devnum;  /* for MATCH_DEVNUM */
} DeviceMatch;

/* Parses the text between "[Device " and "]" into *ret. Returns 0 or -EINVAL with a
 * message in *ret_reason (owned by caller). */
int device_match_parse(const char *text, DeviceMatch *ret, char **ret_reason);
void device_match_done(DeviceMatch *m);

/* Formats a match back to its config form ("zram*", "7:0", "ID_WWN=0x..."); new string. */
char *device_match_to_string(const DeviceMatch *m);

/* The key of a match on the backing file of a loop device. */
#define MATCH_KEY_LOOP_BACKING_FILE "LOOP_BACKING_FILE"

/* Says what a match binds to, for people: "kernel name zram*", "device number 7:0",
 * "ID_SERIAL=abc"; new string. */
char *device_match_describe(const DeviceMatch *m);

/* The facts a match is tested against. */
typedef struct DeviceIdentity {
        const char *name;              /* kernel name of the disk */
        dev_t devnum;                  /* its MAJ:MIN */
        char *const *properties;       /* KEY=value of the disk and of its partitions */
        const char *loop_backing_file; /* loop/backing_file of a loop device, else NULL */
        DeviceKind kind;               /* what the disk is (DEVICE_KIND_OTHER when not known) */
} DeviceIdentity;

/* True when m matches the device. */
bool device_match_test(const DeviceMatch *m, const DeviceIdentity *id);

/* True when s is a kernel name glob we accept (the characters of kernel block device names
 * plus fnmatch() syntax, at most 128). */
bool device_name_glob_is_valid(const char *s);
