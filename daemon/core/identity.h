/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a persistent override is bound to. A kernel name is not a disk: sdb is sdc after
 * the next boot or replug, loop3 is whatever file was attached last, zram0 is whichever
 * device was added first. So stablepagesctl set binds a persistent override to the first
 * stable identity the disk has, in this order:
 *
 *   ID_WWN_WITH_EXTENSION, ID_WWN  the World Wide Name the device reports (what
 *                                  /dev/disk/by-id/wwn-* uses): globally unique, follows
 *                                  the disk to any port, controller or machine;
 *   ID_SERIAL                      vendor, model and serial: unique in practice, though
 *                                  some USB bridges report the same serial for every disk;
 *   DM_UUID, MD_UUID               the UUID of a device-mapper device or md array;
 *   LOOP_BACKING_FILE              a loop device is its backing file (the number is
 *                                  whatever was free when it was attached);
 *   ID_PATH                        where the disk is plugged (by-path): stable for the
 *                                  slot, so a different disk in that slot matches; last.
 *
 * An identity another present disk shares is skipped (two paths to one LUN, cloned
 * serials), and so is one that a [Device] header cannot hold. A disk with none gets no
 * persistent override unless the administrator binds it to the kernel name on purpose.
 * A forced override (Force=yes: off on a disk that needs stable writes) must never reach
 * another disk: it is bound only to an identity of the disk itself, never to ID_PATH or the
 * kernel name, and the configuration ignores Force=yes anywhere else (stable_id_names_disk).
 * What Policy=balanced learned about a disk (learned.h) is keyed by the same identity, ID_PATH
 * excepted: a verdict on a disk's stalls belongs to the disk, not to the slot.
 * The drop-in is named after the identity, so that two disks never share one. Pure: facts
 * and files in, no D-Bus, no event loop. */

#include "config.h"
#include "device.h"

/* Drop-ins written by stablepagesctl: DROPIN_PREFIX "<label>-<value>.conf" (and, written by
 * earlier versions, DROPIN_PREFIX "<kernel name>.conf"). */
#define DROPIN_PREFIX "90-stablepagesctl-"

typedef struct StableId {
        const char *label; /* "wwn", "serial", "dm", "md", "loop", "path" or "name": in the file name */
        const char *key;   /* the match key ("ID_SERIAL", MATCH_KEY_LOOP_BACKING_FILE…), NULL for
                            * the kernel name */
        char *value;
} StableId;

/* True when the match m names one disk itself: the exact value (no glob) of one of the
 * identities above other than ID_PATH. A kernel name, a device number, a slot, a pattern, and
 * the UUID of a filesystem or partition (a copy takes it to another disk) do not. Only such a
 * match may carry Force=yes (config.c). When it does not, *ret_reason (if not NULL) says what m
 * names instead (NULL on ENOMEM). */
bool stable_id_names_disk(const DeviceMatch *m, char **ret_reason);

/* True when m names the disk id itself: stable_id_names_disk(m), for a disk of id's kind (DM_UUID
 * for a dm device, MD_UUID for an md array: their members and partitions carry the same
 * UUID), and m matches id. */
bool stable_id_match_disk(const DeviceMatch *m, const DeviceIdentity *id);

/* What the matches of config.h test about f (pointers into f). */
DeviceIdentity device_identity_of(const DeviceFacts *f);

typedef enum StableIdPick {
        STABLE_ID_ANY,     /* the first usable identity of the list above */
        STABLE_ID_BY_NAME, /* the kernel name, on purpose (stablepagesctl set --bind=name) */
        STABLE_ID_OF_DISK, /* the first that names the disk itself: not ID_PATH, the slot (what a
                            * forced override and a learned verdict are bound to) */
} StableIdPick;

/* Picks what f is bound to (see above), among the disks of t. Returns 0, -ENXIO when f has no
 * usable identity (*ret_reason, when not NULL, then says "no stable identity …" with what was
 * found and why none could be used), or -ENOMEM. */
int stable_id_pick(const DeviceFacts *f, const DeviceTable *t, StableIdPick how, StableId *ret,
                   char **ret_reason);

void stable_id_done(StableId *id);

/* The text between "[Device " and "]" that matches exactly id's value (glob characters
 * escaped). New string. */
char *stable_id_match_text(const StableId *id);

/* The drop-in file name of id: DROPIN_PREFIX "<label>-<value>.conf", bytes other than
 * [A-Za-z0-9._:+-] as %XX, a long value cut and followed by a hash of the whole. New string. */
char *stable_id_dropin_name(const StableId *id);

/* The content of that drop-in for disk (its kernel name now, for the comment). New string. */
char *stable_id_dropin_text(const StableId *id, const char *disk, Setting setting, bool force);
