/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A call that can hang in the kernel (a stat() or an ioctl that asks a filesystem, which a
 * hung NFS server or a stopped FUSE daemon never answers), made in a child process and waited
 * for a bounded time. The calling process never blocks longer and never keeps a child: the
 * call runs in a grandchild, which the child kills when the time is up and leaves (without
 * waiting: a process blocked in the kernel may take time to die) to the service manager or
 * init to reap; the caller reaps the child, which never blocks. */

#include <stdint.h>

/* What runs in the grandchild: async-signal-safe calls only (the caller may have threads).
 * Returns 0 with *ret set, or -errno. */
typedef int (*bounded_fn_t)(void *userdata, uint64_t *ret);

/* Runs fn(userdata, ret) as above, waiting at most timeout_usec. Returns fn's result (with
 * *ret), -ETIMEDOUT when it did not answer in time, or -errno when the processes could not be
 * made. */
int bounded_call(bounded_fn_t fn, void *userdata, uint64_t timeout_usec, uint64_t *ret);
