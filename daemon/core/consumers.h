/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What is in force for every consumer of a disk. The kernel copies stable writes once per
 * consumer, each at its own moment, and never looks again (read from Debian's 6.1.176, 6.1.192
 * and 6.12.118 source trees and upstream's history):
 *
 *   consumer                       copies the flag                                    kernels
 *   a filesystem                   at mount: SB_I_STABLE_WRITES, then per inode        5.10+
 *                                  (AS_STABLE_WRITES, 6.7+)
 *   a swap area (device or file)   at swapon: SWP_STABLE_WRITES from the block         every one
 *                                  device it writes to (a swap file: its filesystem's) with the flag
 *   the disk's own page cache      at the disk's add: bdev_add() sets AS_STABLE_WRITES 6.7+, 6.6.4+,
 *   (raw buffered I/O on /dev/X,   on the block device's mapping when                  6.1.72+
 *   buffer-head metadata)          bdev_stable_writes() ("block: update the
 *                                  stable_writes flag in bdev_add")
 *                                  never: folio_wait_stable() looks at the superblock  5.10 to 6.6.3,
 *                                  of the block device's inode, the bdev pseudo-       6.1 before 6.1.72
 *                                  filesystem's, which never has SB_I_STABLE_WRITES
 *                                  at every store: the bdi's BDI_CAP_STABLE_WRITES     before 5.10
 *   a disk stacked on it (dm, md)  at its own table load or assembly (stacking): its   all
 *                                  own page cache took that at its own add
 *
 * On 6.11+ bdev_stable_writes() is also true with a checksum integrity profile, whatever the
 * flag. A partition has a page cache of its own, taken at its own add: those read with the
 * disk's took what the disk's took; one added later (a partition table read again) takes the
 * flag then, which nothing records. A loop device is added once (loop_add(), at module load or
 * through /dev/loop-control), without stable writes, and keeps its page cache across every
 * attachment (each one a new diskseq); a zram device is added with them (zram_add()).
 *
 * The model here is pure: facts, the disk's flag history (history.h), mounts and swap areas in;
 * per consumer what it captured, when, how that is known, and whether it is a hazard: the disk
 * needs stable writes (required or unknown) and the consumer runs without them. */

#include "engine.h"
#include "state.h"

typedef enum ConsumerKind {
        CONSUMER_PAGE_CACHE, /* the disk's own page cache: raw buffered I/O through /dev/DISK */
        CONSUMER_FILESYSTEM,
        CONSUMER_SWAP,
        CONSUMER_HOLDER, /* a disk stacked on this one */
        _CONSUMER_KIND_MAX,
        _CONSUMER_KIND_INVALID = -EINVAL,
} ConsumerKind;

/* How what a consumer captured is known. */
typedef enum CaptureOrigin {
        CAPTURE_OBSERVED, /* seen to start: the flag at that moment */
        CAPTURE_HISTORY,  /* started before it was seen, but the disk's history says what the flag was */
        CAPTURE_ASSUMED,  /* started before anything saw it and the flag may have moved: the flag when
                           * first seen */
        CAPTURE_KERNEL,   /* fixed by the kernel whatever the flag: a page cache that never takes it, a
                           * loop or zram device's taken at creation, a checksum integrity profile */
        CAPTURE_OWN,      /* the filesystem keeps pages stable itself (NFS, btrfs checksums) */
        CAPTURE_UNKNOWN,  /* nothing tells: no record of the disk's add */
        _CAPTURE_ORIGIN_MAX,
        _CAPTURE_ORIGIN_INVALID = -EINVAL,
} CaptureOrigin;

/* How this kernel's block device page cache takes stable writes. */
typedef enum PageCacheCapture {
        PAGE_CACHE_EACH_STORE, /* before 5.10: the bdi's flag at every store */
        PAGE_CACHE_NEVER,      /* 5.10 to 6.6.3, 6.1 before 6.1.72: never */
        PAGE_CACHE_AT_ADD,     /* 6.7+, 6.6.4+, 6.1.72+: once, at the disk's add */
} PageCacheCapture;

PageCacheCapture page_cache_capture(unsigned kernel);

/* A mounted filesystem, as the daemon tracks it (mounts.h) or the fallback reads it. */
typedef struct ConsumerMount {
        const char *disk; /* the disk it is on */
        const char *target, *fstype;
        bool read_only;
        bool effective; /* captured at mount */
        EffectiveOrigin origin;
        uint64_t since_usec;    /* CLOCK_REALTIME when it was seen (observed) or first seen */
        const char *own_reason; /* NFS, btrfs: keeps its pages stable itself; NULL */
} ConsumerMount;

/* An active swap area. */
typedef struct ConsumerSwap {
        const char *disk; /* the disk it writes to (a swap file: its filesystem's) */
        const char *path;
        bool file;
        bool captured; /* SWP_STABLE_WRITES at swapon */
        EffectiveOrigin origin;
        uint64_t since_usec;
} ConsumerSwap;

typedef struct ConsumerInputs {
        const ConsumerMount *mounts;
        size_t n_mounts;
        const ConsumerSwap *swaps;
        size_t n_swaps;
} ConsumerInputs;

typedef struct Consumer {
        ConsumerKind kind;
        char *name;     /* "/dev/dm-3", the mount point, the swap area, the stacked disk */
        char *what;     /* the filesystem type, "partition" or "file" for swap, or NULL */
        int captured;   /* what it took: 1, 0, or -1 unknown */
        bool in_force;  /* its pages stay stable under writeback: captured on, or its own reason */
        bool protected; /* kept stable whatever it captured: its own reason, read-only */
        CaptureOrigin origin;
        uint64_t since_usec; /* CLOCK_REALTIME of the capture or of its first sight; 0 unknown */
        bool hazard;         /* the disk needs stable writes and this consumer runs without them */
        char *note;          /* what it captured, when, how that is known; for a hazard the sentence
                              * said at error level: the disk, the consumer, the need, what helps */
} Consumer;

typedef struct DeviceConsumers {
        Consumer *items;
        size_t n;
        unsigned hazards;
} DeviceConsumers;

void device_consumers_done(DeviceConsumers *c);

/* The consumers of disk d of e: its page cache (not for a hidden disk), the filesystems and swap
 * areas of in on it, the disks stacked on it. Returns 0 or -ENOMEM. */
int consumers_of(const Engine *e, const EngineDevice *d, const ConsumerInputs *in, DeviceConsumers *ret);

/* Writes "consumers": [...] (each consumer an object) into an open object. */
void consumers_json(const DeviceConsumers *c, JsonWriter *w);

/* Appends *c (taken over: zeroed) to l. Returns 0 or -ENOMEM (c freed). */
int device_consumers_add(DeviceConsumers *l, Consumer *c);

void consumer_done(Consumer *c);

/* The compact summary of the consumers other than filesystems ("cache:off!", "swap:on"…), for
 * status; "-" when none. NULL on -ENOMEM. */
char *consumers_summary(const DeviceConsumers *c);

/* Whether disk d may need stable writes (its need is not none) and runs without them: its flag
 * is off, or a consumer in c (may be NULL) did not capture them. Only then are shadow waits
 * (what stable writes would cost it) worth their price. */
bool disk_wants_shadows(const EngineDevice *d, const DeviceConsumers *c);

/* Whether stable writes are in force on disk f right now, for a consumer starting now: the flag
 * is read again (the engine's facts may be older). */
bool disk_in_force_now(const Engine *e, const DeviceFacts *f);

const char *consumer_kind_to_string(ConsumerKind k);
ConsumerKind consumer_kind_from_string(const char *s);
const char *capture_origin_to_string(CaptureOrigin o);
CaptureOrigin capture_origin_from_string(const char *s);

/* The captured state as a word: "on", "off", "unknown". */
const char *captured_to_string(int captured);

/* The own reason of a filesystem: NFS and btrfs (unless nodatasum/nodatacow) keep their pages
 * stable whatever the disk says. NULL for the others. */
const char *filesystem_own_reason(const char *fstype, const char *options);
