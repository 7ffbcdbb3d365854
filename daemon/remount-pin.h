/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The place of a mount point, pinned before the unmount so that what is mounted again goes
 * there and nowhere else. umount(8) and mount(8) resolve the mount point's path, following
 * symbolic links in every component: a user who can rename a directory on the way could,
 * once the filesystem is unmounted, put a symbolic link in its place and have the mount land
 * on /etc. So:
 *
 *   - the path is resolved one component at a time from "/", never following a symbolic
 *     link (remount_open_component()), and every directory on the
 *     way must be one only root can change (remount_check_dir()): the window between any
 *     check and a mount by path (systemd's) is then closed to everyone but root;
 *   - the mount point's parent directory is kept open (O_PATH), with its device and inode
 *     (also written to the journal, for a retry by another process);
 *   - after the unmount, and before any retry, the path must still lead to that directory
 *     and the mount point there must be a directory with nothing mounted on it: else the
 *     target changed (nothing is mounted) or is already mounted (nothing is stacked).
 *
 * Paths are resolved in the calling process's mount namespace: the host's, or the daemon's
 * own (a service's private namespace is a copy of the host's, with the same directories). */

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* statx(2)'s mount id (Linux 5.8), for C libraries that lack the name: the pin and the cycle's
 * process scan (remount-users.c) compare mounts by it. */
#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x1000U
#endif

typedef struct RemountPin {
        int parent_fd;    /* O_PATH of the mount point's parent directory */
        dev_t parent_dev; /* its device and inode */
        ino_t parent_ino;
        int parent_mnt_id; /* the mount it is on, in the caller's namespace (statx) */
        char *name;        /* the mount point's name in it */
} RemountPin;

#define REMOUNT_PIN_NULL ((RemountPin){ .parent_fd = -EBADF })

void remount_pin_done(RemountPin *p);

/* Opens the directory name (one path component) below dirfd with flags (O_PATH, O_RDONLY),
 * never following a symbolic link (-ENOTDIR); with same_mount, -EXDEV when something is
 * mounted on it. Returns the descriptor or -errno. */
int remount_open_component(int dirfd, const char *name, int flags, bool same_mount);

/* Resolves target's parent as described above. Returns 0 with *ret, 1 with a sentence in
 * *ret_reason (a directory on the way is not root's alone, or not a directory, or a
 * component is a symbolic link), or -errno. */
int remount_pin_target(const char *target, RemountPin *ret, char **ret_reason);

/* After the unmount: target must still lead to the pinned parent (a fresh resolution,
 * compared by device and inode), and the mount point there must be a directory that only
 * root can rename, with nothing mounted on it. Returns 0 (with an O_PATH descriptor of the
 * mount point in *ret_fd when ret_fd is not NULL), 1 with a sentence in *ret_reason when
 * the path changed (*ret_changed true) or something is mounted on it (*ret_changed false),
 * or -errno. */
int remount_pin_check_free(const RemountPin *p, const char *target, int *ret_fd, bool *ret_changed,
                           char **ret_reason);
