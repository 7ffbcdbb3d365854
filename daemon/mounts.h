/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Mounted filesystems and the stable-writes state each one actually runs with. A
 * filesystem copies its device's flag when its superblock is set up and never looks again,
 * so the flag of the disk says nothing certain about a mounted filesystem: we note the
 * device's in-force state when a mount appears ("effective"), keep that across restarts
 * in the runtime dir, and compare it with what the policy now wants ("pending").
 *
 * The mount table followed and read is PID 1's (MOUNTINFO_SYSTEM), not our own: a
 * sandboxed service runs in a private mount namespace, which has extra mounts of its own
 * (read-only binds of /), new mount ids on each start (records would not match after a
 * restart), and sees the system's changes only through propagation. libmount parses it;
 * its monitor is not used because it follows /proc/self/mountinfo only. The table is
 * re-read when the kernel reports a change (POLLPRI on the open mountinfo): at once after
 * a calm period, then at most once per MOUNT_TRACKER_DELAY_USEC, so a storm of mounts
 * costs a few passes per second.
 *
 * The kernel reuses mount ids: a mount is told from an earlier one with the same id by
 * its unique mount id (statx STATX_MNT_ID_UNIQUE, 6.8+). Older kernels cannot tell an
 * umount + mount of the same device on the same target apart when both fall into one
 * pass. Only filesystems on a block device, and NFS, are tracked: a mount maps to its disk by
 * its superblock's device number, never by the source text (FUSE sets that to anything). */

#include <systemd/sd-event.h>

#include "engine.h"
#include "json.h"
#include "state.h"

#define MOUNT_TRACKER_DELAY_USEC (100 * USEC_PER_MSEC)
#define MOUNTINFO_SYSTEM "/proc/1/mountinfo"

typedef struct TrackedMount {
        int id;              /* mount id (the kernel reuses them) */
        uint64_t unique_id;  /* the kernel's 64-bit mount id in our namespace (6.8+), 0 if
                              * unknown: tells a new mount from an old one with the same id */
        dev_t devnum;        /* the superblock's MAJ:MIN, as mountinfo shows it */
        dev_t source_devnum; /* the block device it was mounted from (the superblock's, for btrfs
                              * the member btrfs names as its source); 0 for NFS */
        char *disk;          /* the disk that device is or is a partition of; NULL for NFS */
        char *target, *fstype, *source;
        bool read_only; /* the superblock is read-only: nobody writes */
        bool effective; /* stable writes in force for this filesystem */
        EffectiveOrigin origin;
        uint64_t since_usec;    /* CLOCK_REALTIME when effective was determined */
        const char *own_reason; /* the filesystem's own behaviour (NFS, btrfs), or NULL */
        bool pending;           /* the policy wants another state than effective */
        const char *reason;     /* why it is pending, or why not */
} TrackedMount;

typedef struct MountTracker MountTracker;

/* Called (from the event loop) after mount table changes, at most once per delay. */
typedef void (*mount_tracker_handler_t)(MountTracker *t, void *userdata);

struct MountTracker {
        char *runtime_dir;
        const char *mountinfo; /* the table followed: MOUNTINFO_SYSTEM or our own */
        int fd;                /* open on it, polled for changes */
        sd_event_source *io, *delay;
        mount_tracker_handler_t handler;
        void *userdata;

        TrackedMount *mounts;
        size_t n;
        int *unresolved; /* ids of block-device mounts whose disk the engine did not know */
        size_t n_unresolved;
        MountRecords records;    /* an earlier run's records, used by the first refresh */
        uint64_t mntns;          /* inode of our mount namespace */
        uint64_t last_pass_usec; /* CLOCK_MONOTONIC of the last table read after an event */
        bool initialized;        /* the first refresh is done */
};

/* Starts following mount changes on e and loads the records of an earlier run from
 * runtime_dir. Does not read the mount table: call mount_tracker_refresh(). Returns 0 and
 * *ret, or -errno. */
int mount_tracker_new(sd_event *e, const char *runtime_dir, mount_tracker_handler_t handler, void *userdata,
                      MountTracker **ret);

/* Stops following and frees t; returns NULL. */
MountTracker *mount_tracker_free(MountTracker *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(MountTracker *, mount_tracker_free);

/* Re-reads the mount table. A mount that appeared gets its effective state: on the first
 * refresh from the earlier run's record if one matches, else "assumed" from the device's
 * state now; later, from another mount of the same superblock, else "observed" from the
 * device's state now (re-read from sysfs, not from e's cached facts). Vanished mounts
 * are dropped. The records are saved atomically when the set changed. *ret_unresolved
 * counts block-device mounts seen for the first time whose disk is not in e (the caller
 * should rescan and refresh again). Returns 0 or -errno (the tracked set is then
 * unchanged). */
int mount_tracker_refresh(MountTracker *t, const Engine *e, unsigned *ret_unresolved);

/* Recomputes pending and reason of every mount from e's decisions (a filesystem that runs
 * without stable writes on a disk that needs them is a consumer's hazard, consumers.h). */
void mount_tracker_update_pending(MountTracker *t, const Engine *e);

/* Forgets the mount id on target: the caller unmounted it (the unmount + mount cycle), so
 * that the next refresh takes a mount there for a new one even when the kernel gave it the
 * same id and its unique id cannot be read (btrfs, another mount namespace). */
void mount_tracker_forget(MountTracker *t, int id, const char *target);

/* Sets the effective state of the mount id on target to what the unmount + mount cycle that
 * mounted it knows it mounted with (its own, or that of an interrupted cycle's journal),
 * "observed", and saves the records. Filesystems that decide for themselves (NFS) keep
 * theirs. Call mount_tracker_update_pending() after. Returns 0, -ENOENT or -errno. */
int mount_tracker_set_effective(MountTracker *t, int id, const char *target, bool effective);

/* Number of pending mounts on disk, or on all disks when disk is NULL. */
unsigned mount_tracker_count_pending(const MountTracker *t, const char *disk);

/* Writes one mount as a JSON object. */
void tracked_mount_json(const TrackedMount *m, JsonWriter *w);
