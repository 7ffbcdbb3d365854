/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Reads of sysfs attributes under a root directory (the real one is "/sys"; tests pass a
 * captured tree). Paths are relative to the root. The one write the project makes, of
 * queue/stable_writes, is flag.h's. */

#include <sys/types.h>

#include "macro.h"

/* Reads the first line of root/path, trailing whitespace removed. Returns 0, -ENOENT when
 * the attribute does not exist (normal: kernels differ), or another -errno. */
int sysfs_read_string(const char *root, const char *path, char **ret);

/* The same for path relative to the directory dirfd (or AT_FDCWD): a disk's attributes read
 * through its directory's descriptor skip the walk of /sys/block/NAME each time. */
int sysfs_read_string_at(int dirfd, const char *path, char **ret);

/* Reads an integer attribute ("0", "1", "42"). Returns 0, -ENOENT, -EINVAL (unparsable)
 * or another -errno. */
int sysfs_read_int(const char *root, const char *path, long long *ret);

/* Basename of the symlink root/path ("device/driver" -> "virtio_blk"). Returns 0 or -errno. */
int sysfs_read_link_basename(const char *root, const char *path, char **ret);

/* Sorted names of the entries of directory root/path (no "." or ".."). A missing directory
 * gives an empty list and 0. Returns 0 or -errno. */
int sysfs_list_dir(const char *root, const char *path, char ***ret);

/* The same for path relative to the directory dirfd (or AT_FDCWD). */
int sysfs_list_dir_at(int dirfd, const char *path, char ***ret);

/* Parses an attribute holding 0/1 (as "0\n"). Returns 0/1 or -EINVAL. */
int sysfs_parse_bool01(const char *value);
