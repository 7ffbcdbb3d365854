/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The place of a mount point, pinned before the unmount so that the mount goes back there and
 * nowhere else (remount-pin.h). */
#include <fcntl.h>
#include <sys/stat.h>

#include "remount-check.h"
#include "remount-pin.h"
#include "util.h"

void remount_pin_done(RemountPin *p) {
        if (p->parent_fd >= 0)
                close(p->parent_fd);
        free(p->name);
        *p = REMOUNT_PIN_NULL;
}

static int mnt_id_of(int dirfd, const char *name, int *ret) {
        struct statx stx;

        if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (isempty(name) ? AT_EMPTY_PATH : 0),
                  STATX_MNT_ID, &stx) < 0)
                return -errno;
        if (!(stx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        *ret = (int) stx.stx_mnt_id;
        return 0;
}

/* Opens the single path component name below dirfd, never through a symbolic link:
 * O_NOFOLLOW refuses a link as the last (here: only) component, and O_DIRECTORY with O_PATH
 * makes that ENOTDIR rather than a descriptor of the link. That is what openat2(2) with
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH does for one component, and
 * openat2 itself cannot be used: systemd's RestrictSUIDSGID= makes it fail with ENOSYS, as it
 * cannot filter its mode. With same_mount, a component that something is mounted on is
 * refused with EXDEV (RESOLVE_NO_XDEV). */
int remount_open_component(int dirfd, const char *name, int flags, bool same_mount) {
        _cleanup_close_ int fd = -EBADF;
        int dir_mnt, mnt, r;

        if (isempty(name) || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -EINVAL;
        fd = openat(dirfd, name, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ELOOP ? -ENOTDIR : -errno;
        if (same_mount) {
                r = mnt_id_of(dirfd, "", &dir_mnt);
                if (r >= 0)
                        r = mnt_id_of(fd, "", &mnt);
                if (r < 0)
                        return r;
                if (mnt != dir_mnt)
                        return -EXDEV;
        }
        return TAKE_FD(fd);
}

static int refuse(char **ret_reason, char *reason) {
        *ret_reason = reason;
        return reason ? 1 : -ENOMEM;
}

int remount_pin_target(const char *target, RemountPin *ret, char **ret_reason) {
        _cleanup_strv_free_ char **parts = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *path = strdup("/"), *name = NULL;
        size_t n;
        int r;

        *ret_reason = NULL;
        if (!path)
                return -ENOMEM;
        r = remount_path_split(target, &parts);
        if (r < 0)
                return r;
        n = strv_length(parts);
        if (n == 0)
                return refuse(ret_reason, strdup("/ has no parent directory"));

        fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int child = -EBADF;
                struct stat st, cst;
                bool last = i == n - 1;

                if (fstat(fd, &st) < 0)
                        return -errno;
                if (!last) {
                        child = remount_open_component(fd, parts[i], O_PATH, false);
                        if (child == -ELOOP || child == -ENOTDIR || child == -EXDEV)
                                return refuse(ret_reason,
                                              strdup_printf("%s%s%s is a symbolic link or not a directory",
                                                            path, streq(path, "/") ? "" : "/", parts[i]));
                        if (child < 0)
                                return child;
                        if (fstat(child, &cst) < 0)
                                return -errno;
                }
                /* The mount point itself is still mounted on: its owner cannot be seen. */
                r = remount_check_dir(path, st.st_uid, st.st_mode, parts[i], last ? (uid_t) -1 : cst.st_uid,
                                      ret_reason);
                if (r != 0)
                        return r;
                if (last)
                        break;
                char *next = strdup_printf("%s%s%s", path, streq(path, "/") ? "" : "/", parts[i]);
                if (!next)
                        return -ENOMEM;
                free(path);
                path = next;
                close(fd);
                fd = TAKE_FD(child);
        }

        struct stat st;
        int mnt_id = 0;
        if (fstat(fd, &st) < 0)
                return -errno;
        r = mnt_id_of(fd, "", &mnt_id);
        if (r < 0)
                return r;
        name = strdup(parts[n - 1]);
        if (!name)
                return -ENOMEM;
        *ret = (RemountPin){
                .parent_fd = TAKE_FD(fd),
                .parent_dev = st.st_dev,
                .parent_ino = st.st_ino,
                .parent_mnt_id = mnt_id,
                .name = TAKE_PTR(name),
        };
        return 0;
}

int remount_pin_check_free(const RemountPin *p, const char *target, int *ret_fd, bool *ret_changed,
                           char **ret_reason) {
        RemountPin now = REMOUNT_PIN_NULL;
        _cleanup_free_ char *why = NULL;
        struct statx stx;
        int r;

        *ret_changed = true;
        *ret_reason = NULL;
        if (ret_fd)
                *ret_fd = -EBADF;
        r = remount_pin_target(target, &now, &why);
        if (r == -ENOENT || r == -ENOTDIR || r == -ELOOP)
                return refuse(ret_reason,
                              strdup_printf("the path %s no longer leads to its mount point (%s)", target,
                                            strerror(-r)));
        if (r < 0)
                return r;
        if (r > 0)
                return refuse(ret_reason, strdup_printf("the path %s changed: %s", target, why));
        bool same = now.parent_dev == p->parent_dev && now.parent_ino == p->parent_ino;
        remount_pin_done(&now);
        if (!same)
                return refuse(
                        ret_reason,
                        strdup_printf("the path %s leads to another directory than before the unmount (its "
                                      "parent was renamed or replaced)",
                                      target));

        if (statx(p->parent_fd, p->name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
                  STATX_TYPE | STATX_MODE | STATX_UID | STATX_MNT_ID, &stx) < 0) {
                if (errno == ENOENT)
                        return refuse(ret_reason, strdup_printf("%s does not exist any more", target));
                return -errno;
        }
        if (!S_ISDIR(stx.stx_mode))
                return refuse(ret_reason, strdup_printf("%s is not a directory any more", target));
        if ((stx.stx_mask & STATX_MNT_ID) && (int) stx.stx_mnt_id != p->parent_mnt_id) {
                *ret_changed = false;
                return refuse(ret_reason, strdup_printf("something else is mounted on %s already", target));
        }
        if (ret_fd) {
                int fd = remount_open_component(p->parent_fd, p->name, O_PATH, true);
                if (fd == -EXDEV) {
                        *ret_changed = false;
                        return refuse(ret_reason,
                                      strdup_printf("something else is mounted on %s already", target));
                }
                if (fd == -ELOOP || fd == -ENOTDIR || fd == -ENOENT)
                        return refuse(ret_reason, strdup_printf("%s is not a directory any more", target));
                if (fd < 0)
                        return fd;
                *ret_fd = fd;
        }
        *ret_changed = false;
        return 0;
}
