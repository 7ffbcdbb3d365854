/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The MESSAGE_IDs of the events an administrator looks for in the journal, each explained by
 * an entry of the catalog conf/stablepages.catalog (journalctl -x), which uses the fields
 * STABLEPAGES_DEVICE (the disk) and STABLEPAGES_MOUNT (the mount point) that come with them. */

/* A filesystem runs without stable writes on a disk that needs them. */
#define SP_MESSAGE_HAZARD "d1b1059d923c4423a66e0efe27505e3e"
/* Raw buffered writes to a disk that needs stable writes go through a page cache without them. */
#define SP_MESSAGE_HAZARD_PAGE_CACHE "952f9616d36b45ad898281a916461e29"
/* A swap area runs without stable writes on a disk that needs them. */
#define SP_MESSAGE_HAZARD_SWAP "aeb464cc39d0407d8b9b1f6bcd13071f"
/* Stable writes turned off, by force, on a disk that needs them. */
#define SP_MESSAGE_FORCED "2189b6d57db342cabb836a21dc4a28be"
/* An unmount + mount cycle applied the flag to a filesystem. */
#define SP_MESSAGE_REMOUNT_DONE "cd27964fbbfd428fa0254aa9fb4d6690"
/* An unmount + mount cycle failed: the filesystem kept its old state, or was left unmounted. */
#define SP_MESSAGE_REMOUNT_FAILED "0f5e7109ddab4c3fa0c3651a6459cdfe"
/* queue/stable_writes changed outside the daemon, which wrote it back. */
#define SP_MESSAGE_DRIFT "c170319409004dd08ce59fd46e189858"
