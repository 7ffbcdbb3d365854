/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The safety checks of the unmount + mount cycle that need nothing but text: a mount table
 * (mountinfo, parsed by libmount), the configuration, /proc/swaps, loop backing files. No
 * system calls beyond reading what libmount is given, so they are unit-tested on captured
 * tables (tests/unit/test-remount.c). The checks that need the live system (which process
 * uses the filesystem, other mount namespaces) are in remount-users.c.
 *
 * Each check returns 0 when it finds nothing against the cycle, 1 with a sentence in
 * *ret_reason (owned by the caller) when the filesystem must stay mounted, or -ENOMEM. */

#include <libmount/libmount.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A mount as recorded before the cycle: what it takes to mount it again the same way. */
typedef struct RemountPlan {
        int id, parent_id;
        dev_t devnum;        /* the superblock's MAJ:MIN as mountinfo shows it */
        dev_t source_devnum; /* the block device it was mounted from (btrfs: not devnum) */
        char *root;          /* the directory of the filesystem mounted ("/" unless bind) */
        char *source, *target, *fstype;
        char *vfs_options;         /* per-mount options: rw,nosuid,nodev,relatime,... */
        char *fs_options;          /* superblock options: rw,errors=remount-ro,... */
        unsigned long propagation; /* MS_SHARED | MS_SLAVE | MS_UNBINDABLE; 0: private */
        int peer_group;            /* N of shared:N, 0 when not shared */
} RemountPlan;

void remount_plan_done(RemountPlan *p);

/* Records the mount with that id from t (e.g. /proc/1/mountinfo). source_devnum is the
 * block device (the caller knows it: for btrfs it differs from the superblock's). Returns
 * 0, -ENOENT when t has no such mount, or -ENOMEM. */
int remount_plan_from_table(struct libmnt_table *t, int id, dev_t source_devnum, RemountPlan *ret);

/* Never cycled: "/", "/usr", "/boot" and any path in never_remount (normalized absolute
 * paths, as config.c stores NeverRemount=). */
int remount_check_target(const char *target, char *const *never_remount, char **ret_reason);

/* A directory on the way to a mount point: dir is its path, uid and mode its owner and mode,
 * child the name of the next component and child_uid its owner (-1: not known, as for a
 * mount point still mounted on). Only root may be able to rename or replace what is in it:
 * a user who can would make the mount (after the unmount) follow her symlink. Refused: not
 * a directory, owned by another user than root, writable by group or others, unless sticky
 * (then each user may only rename her own entries) and child is root's. */
int remount_check_dir(const char *dir, uid_t uid, mode_t mode, const char *child, uid_t child_uid,
                      char **ret_reason);

/* Filesystem types whose unmount takes more than the kernel (FUSE: a server process). */
int remount_check_fstype(const char *fstype, char **ret_reason);

/* The superblock must have exactly one mount in t (no bind mount of it or of any of its
 * directories, no second mount of the same device: the superblock would live on and the
 * new mount would get it back unchanged), and nothing may be mounted on or below it. */
int remount_check_table(struct libmnt_table *t, const RemountPlan *p, char **ret_reason);

/* swaps is the text of /proc/swaps: an active swap file below target keeps it busy. */
int remount_check_swaps(const char *swaps, const char *target, char **ret_reason);

/* backing_file is loop device loop's loop/backing_file: a loop device backed by a file
 * below target keeps it busy. */
int remount_check_loop_backing(const char *loop, const char *backing_file, const char *target,
                               char **ret_reason);

/* The source is a loop device with autoclear set (mount -o loop): the kernel detaches it at
 * the unmount, and nothing could be mounted from it again. */
int remount_check_loop_autoclear(const char *source, int autoclear, char **ret_reason);

/* What a mount unit's files say in [Mount]: What=, Options=, Type= (NULL when not set). */
typedef struct RemountUnitFile {
        char *what, *options, *type;
} RemountUnitFile;

void remount_unit_file_done(RemountUnitFile *u);

/* Reads the text of one file of a mount unit (its fragment, then each drop-in in systemd's
 * order, each overriding what the earlier ones set; an empty assignment resets) into *u.
 * Returns 0, 1 with a sentence in *ret_reason when a value uses a specifier other than "%%"
 * (what systemd would make of it is not evaluated here), or -ENOMEM. */
int remount_unit_file_parse(const char *text, RemountUnitFile *u, char **ret_reason);

/* Whether starting unit (from the files u says) would mount p again as it is mounted now:
 * What= must be p's source device (what_devnum: the block device What= resolves to, 0 when
 * none), Type= unset, "auto" or p's type, and Options= must give the same per-mount flags (ro,
 * nosuid, nodev, noexec, the atime mode, nodiratime, nosymfollow) and superblock flags (sync,
 * dirsync, lazytime, mand) as the mount has, and no filesystem option that its superblock does
 * not show (options the kernel shows beyond those are compared after the mount). The sentence
 * names the unit and the difference. */
int remount_check_unit_file(const RemountPlan *p, const char *unit, const RemountUnitFile *u,
                            dev_t what_devnum, char **ret_reason);

/* The -o string that mounts p again as it was: its per-mount options, then its superblock
 * options without the rw/ro the first part already says. NULL on -ENOMEM. */
char *remount_plan_options(const RemountPlan *p);

/* True when two option strings hold the same options, in any order. */
bool remount_options_equal(const char *a, const char *b);

/* The mount(2) propagation changes (MS_PRIVATE, MS_SLAVE, MS_SHARED, MS_UNBINDABLE, in that
 * order of application) that turn a new mount with propagation now into one like the
 * recorded one. Fills steps (at most 3) and returns their number. A slave cannot get its
 * master back: it becomes a slave of the peer group the new mount joined, if any. */
size_t remount_propagation_steps(unsigned long recorded, unsigned long now, unsigned long steps[static 3]);

/* Parses the optional fields of mountinfo ("shared:5 master:3 propagate_from:2") for the
 * peer group of tag ("shared" or "master"); 0 when absent. */
int remount_optional_field(const char *optional_fields, const char *tag);

/* MS_SHARED, MS_SLAVE and MS_UNBINDABLE as the optional fields say; 0 for a private mount. */
unsigned long remount_propagation_from_fields(const char *optional_fields);

/* Undoes the octal escapes (\040 for a space) of the first n bytes of s, as the kernel writes
 * them in /proc/swaps and mountinfo. NULL on -ENOMEM. */
char *remount_unescape(const char *s, size_t n);

/* The components of the absolute path, without empty and "." ones ("/" has none: NULL).
 * Returns 0, -EINVAL for a relative path or one with "..", or -ENOMEM. */
int remount_path_split(const char *path, char ***ret);

/* The systemd unit name of the mount point path ("/srv/my data" -> "srv-my\x20data.mount",
 * "/" -> "-.mount"), as systemd-escape --path --suffix=mount. Returns 0 or -ENOMEM/-EINVAL. */
int remount_unit_name_from_path(const char *path, char **ret);
