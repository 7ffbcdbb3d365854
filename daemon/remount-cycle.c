/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "remount-cycle.h"
#include "remount-systemd.h"
#include "util.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x1000U
#endif
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U
#endif

/* How long systemd may take for a restart or start job of a mount unit. */
#define SYSTEMD_JOB_TIMEOUT_USEC (5 * 60 * USEC_PER_SEC)

/* The test hook's option: no filesystem knows it, so mount(2) fails with EINVAL. */
#define TEST_INVALID_OPTION "stablepages-test-invalid-option"

/* The host's mount table as this process sees it: its own once it is in the host's mount
 * namespace; PID 1's when it could not enter it and systemd does the cycle (a service
 * sandbox that forbids setns(2) still may ask systemd). */
static const char *host_mountinfo = "/proc/self/mountinfo";
static bool in_host = true;

static const char *const outcome_table[_REMOUNT_OUTCOME_MAX] = {
        [REMOUNT_DONE] = "done",           [REMOUNT_NOTHING] = "nothing",
        [REMOUNT_REFUSED] = "refused",     [REMOUNT_BUSY] = "busy",
        [REMOUNT_RESTORED] = "restored",   [REMOUNT_UNMOUNTED] = "unmounted",
        [REMOUNT_DIFFERENT] = "different", [REMOUNT_FAILED] = "failed",
};

const char *remount_outcome_to_string(RemountOutcome o) {
        return o >= 0 && o < _REMOUNT_OUTCOME_MAX ? outcome_table[o] : NULL;
}

static void tablep(struct libmnt_table **t) {
        mnt_unref_table(*t);
}

static void contextp(struct libmnt_context **c) {
        mnt_free_context(*c);
}

static void bus_unrefp(sd_bus **b) {
        sd_bus_flush_close_unref(*b);
}

/* Sets the outcome, the errno and the message of the report. */
static void report(RemountReport *rep, RemountOutcome outcome, int error, const char *format, ...)
        _printf_(4, 5);
static void report(RemountReport *rep, RemountOutcome outcome, int error, const char *format, ...) {
        va_list ap;

        rep->outcome = outcome;
        rep->error = error;
        va_start(ap, format);
        vsnprintf(rep->message, sizeof rep->message, format, ap);
        va_end(ap);
}

/* The entry of the mount table at path with that id, devnum and target, or NULL. */
static struct libmnt_fs *table_find(struct libmnt_table *t, int id, dev_t devnum, const char *target) {
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs, *found = NULL;

        if (!iter)
                return NULL;
        while (mnt_table_next_fs(t, iter, &fs) == 0)
                if (mnt_fs_get_id(fs) == id && (!target || (mnt_fs_get_devno(fs) == devnum &&
                                                            streq(mnt_fs_get_target(fs) ?: "", target)))) {
                        found = fs;
                        break;
                }
        mnt_free_iter(iter);
        return found;
}

/* The mount visible on target (the last one mounted there), or NULL. */
static struct libmnt_fs *table_top(struct libmnt_table *t, const char *target) {
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_BACKWARD);
        struct libmnt_fs *fs, *found = NULL;

        if (!iter)
                return NULL;
        while (mnt_table_next_fs(t, iter, &fs) == 0)
                if (streq(mnt_fs_get_target(fs) ?: "", target)) {
                        found = fs;
                        break;
                }
        mnt_free_iter(iter);
        return found;
}

static bool mountinfo_has(const char *path, int id, dev_t devnum, const char *target) {
        _cleanup_(tablep) struct libmnt_table *t = mnt_new_table_from_file(path);
        return t && table_find(t, id, devnum, target);
}

static void read_comm(pid_t pid, char *buf, size_t size) {
        char path[64];
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(buf, size, "?");
        snprintf(path, sizeof path, "/proc/%d/comm", (int) pid);
        f = fopen(path, "re");
        if (f && fgets(buf, (int) size, f))
                strstrip_trailing(buf);
}

/* Calls f(pid) for every process; stops at the first non-zero return, which it returns. */
static int for_each_pid(int (*f)(pid_t pid, void *userdata), void *userdata) {
        _cleanup_closedir_ DIR *d = opendir("/proc");
        struct dirent *de;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                if (*end || pid <= 0)
                        continue;
                int r = f((pid_t) pid, userdata);
                if (r != 0)
                        return r;
        }
        return 0;
}

/* --- the mount namespace ----------------------------------------------------------------- */

typedef struct NsSearch {
        int anchor;
        dev_t devnum;
        const char *target;
        pid_t found;
} NsSearch;

static int find_ns_holder(pid_t pid, void *userdata) {
        NsSearch *s = userdata;
        char path[64];
        int fd;

        if (pid == getpid())
                return 0;
        snprintf(path, sizeof path, "/proc/%d/mountinfo", (int) pid);
        if (!mountinfo_has(path, s->anchor, s->devnum, s->target))
                return 0;
        snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0; /* as PID 1: listed, but not ours to enter; try the next */
        s->found = pid;
        return fd + 1; /* > 0: stop */
}

/* Enters the mount namespace that holds mount anchor (with devnum and target when target is
 * given). Describes where in via. Returns 0 or -errno with a sentence in rep. */
static int enter_host_namespace(int anchor, dev_t devnum, const char *target, RemountReport *rep) {
        _cleanup_close_ int fd = -EBADF;
        char comm[64];
        int r, e1;

        if (mountinfo_has("/proc/self/mountinfo", anchor, devnum, target)) {
                snprintf(rep->via, sizeof rep->via, "the daemon's own mount namespace, the host's");
                return 0;
        }
        fd = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
        e1 = errno;
        if (fd >= 0)
                snprintf(rep->via, sizeof rep->via, "PID 1's mount namespace");
        else {
                /* PID 1 may be out of reach (a supervisor we may not ptrace): any process whose
                 * mount table lists this very mount id is in the same namespace. */
                NsSearch s = { .anchor = anchor, .devnum = devnum, .target = target };
                r = for_each_pid(find_ns_holder, &s);
                if (r <= 0) {
                        report(rep, REMOUNT_FAILED, e1,
                               "cannot enter the host's mount namespace: /proc/1/ns/mnt: %s, and no other "
                               "process there could be entered",
                               strerror(e1));
                        return -e1;
                }
                fd = r - 1;
                read_comm(s.found, comm, sizeof comm);
                snprintf(rep->via, sizeof rep->via,
                         "the host's mount namespace (that of PID %d (%s), as "
                         "/proc/1/ns/mnt: %s)",
                         (int) s.found, comm, strerror(e1));
        }
        if (setns(fd, CLONE_NEWNS) < 0) {
                r = -errno;
                report(rep, REMOUNT_FAILED, -r, "cannot enter %s: setns: %s%s", rep->via, strerror(-r),
                       r == -EPERM ? " (the service's sandbox forbids it: install the drop-in "
                                     "remount.conf, see stablepagesd(8), SANDBOX)"
                                   : "");
                return r;
        }
        if (!mountinfo_has("/proc/self/mountinfo", anchor, devnum, target)) {
                report(rep, REMOUNT_FAILED, ENXIO, "entered %s but the mount is not there", rep->via);
                return -ENXIO;
        }
        return 0;
}

/* --- who uses it ------------------------------------------------------------------------- */

typedef struct Users {
        const RemountPlan *plan;
        ino_t self_ns;
        int *ids; /* mount ids of the superblock reached by an unmount of plan->id */
        size_t n_ids;
        ino_t *seen_ns;
        size_t n_seen;
        unsigned uninspectable;
        char *reason;
} Users;

static bool users_has_id(const Users *u, int id) {
        for (size_t i = 0; i < u->n_ids; i++)
                if (u->ids[i] == id)
                        return true;
        return false;
}

static int users_add_id(Users *u, int id) {
        int *ids = realloc(u->ids, sizeof(int) * (u->n_ids + 1));
        if (!ids)
                return -ENOMEM;
        u->ids = ids;
        ids[u->n_ids++] = id;
        return 0;
}

/* Looks at the mount table of pid's namespace (once per namespace) for other mounts of the
 * superblock: copies an unmount propagates to (peers and slaves of the mount's peer group)
 * are noted, any other one refuses the cycle (it would keep the superblock alive). */
static int scan_namespace(pid_t pid, void *userdata) {
        Users *u = userdata;
        const RemountPlan *p = u->plan;
        _cleanup_(tablep) struct libmnt_table *t = NULL;
        struct libmnt_iter *iter;
        struct libmnt_fs *fs;
        char path[64];
        struct stat st;
        ino_t ns = 0;

        snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int) pid);
        if (stat(path, &st) >= 0) {
                ns = st.st_ino;
                if (ns == u->self_ns)
                        return 0;
                for (size_t i = 0; i < u->n_seen; i++)
                        if (u->seen_ns[i] == ns)
                                return 0;
                ino_t *seen = realloc(u->seen_ns, sizeof(ino_t) * (u->n_seen + 1));
                if (!seen)
                        return -ENOMEM;
                u->seen_ns = seen;
                seen[u->n_seen++] = ns;
        }
        snprintf(path, sizeof path, "/proc/%d/mountinfo", (int) pid);
        t = mnt_new_table_from_file(path);
        if (!t)
                return 0; /* gone, or a kernel thread */
        if (table_find(t, p->id, p->devnum, p->target))
                return 0; /* the host's namespace itself (seen through a process we cannot stat) */
        iter = mnt_new_iter(MNT_ITER_FORWARD);
        if (!iter)
                return -ENOMEM;
        int r = 0;
        while (r == 0 && mnt_table_next_fs(t, iter, &fs) == 0) {
                const char *opt = mnt_fs_get_optional_fields(fs);
                int master = remount_optional_field(opt, "master"),
                    shared = remount_optional_field(opt, "shared");
                if (mnt_fs_get_devno(fs) != p->devnum)
                        continue;
                if (p->peer_group > 0 && (master == p->peer_group || shared == p->peer_group)) {
                        if (!users_has_id(u, mnt_fs_get_id(fs)))
                                r = users_add_id(u, mnt_fs_get_id(fs));
                        continue;
                }
                char comm[64];
                read_comm(pid, comm, sizeof comm);
                u->reason =
                        strdup_printf("it is also mounted on %s in another mount namespace (that of PID %d "
                                      "(%s)), which an unmount here does not reach",
                                      mnt_fs_get_target(fs) ?: "?", (int) pid, comm);
                r = u->reason ? 1 : -ENOMEM;
        }
        mnt_free_iter(iter);
        return r;
}

static int note_user(Users *u, pid_t pid, const char *what, const char *path) {
        char comm[64];

        read_comm(pid, comm, sizeof comm);
        u->reason = strdup_printf("PID %d (%s) %s%s%s", (int) pid, comm, what, path ? " " : "", path ?: "");
        return u->reason ? 1 : -ENOMEM;
}

/* Whether path (a /proc magic link) leads to one of the mounts. -errno when it cannot be
 * inspected (permission), 0/1 otherwise. */
static int link_on_mount(Users *u, int dirfd, const char *path) {
        struct statx stx;

        if (statx(dirfd, path, AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) < 0)
                return errno == ENOENT || errno == ESRCH ? 0 : -errno;
        if (!(stx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        return users_has_id(u, (int) stx.stx_mnt_id);
}

static int scan_process(pid_t pid, void *userdata) {
        Users *u = userdata;
        char path[PATH_MAX], target[PATH_MAX];
        struct dirent *de;
        int r;

        if (pid == getpid())
                return 0; /* ourselves: the daemon's descriptors, checked in the daemon */

        snprintf(path, sizeof path, "/proc/%d/cwd", (int) pid);
        r = link_on_mount(u, AT_FDCWD, path);
        if (r > 0)
                return note_user(u, pid, "has its working directory on it", NULL);
        if (r < 0 && (r == -EACCES || r == -EPERM)) {
                u->uninspectable++;
                return 0;
        }
        snprintf(path, sizeof path, "/proc/%d/root", (int) pid);
        if (link_on_mount(u, AT_FDCWD, path) > 0)
                return note_user(u, pid, "has its root directory on it", NULL);

        snprintf(path, sizeof path, "/proc/%d/fd", (int) pid);
        _cleanup_closedir_ DIR *d = opendir(path);
        if (!d) {
                if (errno == EACCES || errno == EPERM)
                        u->uninspectable++;
                return 0;
        }
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (link_on_mount(u, dirfd(d), de->d_name) > 0) {
                        ssize_t n;
                        snprintf(path, sizeof path, "/proc/%d/fd/%s", (int) pid, de->d_name);
                        n = readlink(path, target, sizeof target - 1);
                        target[n < 0 ? 0 : n] = '\0';
                        return note_user(u, pid, "has a file open on it:", target);
                }
        }

        /* Mappings: maps names the superblock's device (hex MAJ:MIN), whatever the mount. */
        snprintf(path, sizeof path, "/proc/%d/maps", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char *line = NULL;
        size_t size = 0;
        while (f && getline(&line, &size, f) > 0) {
                unsigned maj, min;
                int off = 0;
                if (sscanf(line, "%*s %*s %*s %x:%x %*s %n", &maj, &min, &off) < 2)
                        continue;
                if (makedev(maj, min) == u->plan->devnum && (maj != 0 || min != 0)) {
                        strstrip_trailing(line);
                        r = note_user(u, pid, "has a file mapped from it:", off > 0 ? line + off : "?");
                        free(line);
                        return r;
                }
        }
        free(line);
        return 0;
}

/* --- unmount, mount, verify ---------------------------------------------------------------- */

static struct libmnt_context *new_context(void) {
        struct libmnt_context *c = mnt_new_context();
        if (!c)
                return NULL;
        /* mount(2)/umount2(2) only, on the paths of the table as they are. */
        if (mnt_context_disable_helpers(c, 1) < 0 || mnt_context_disable_canonicalize(c, 1) < 0) {
                mnt_free_context(c);
                return NULL;
        }
        return c;
}

/* The errno of a failed libmount operation. */
static int context_errno(struct libmnt_context *c, int r) {
        if (mnt_context_syscall_called(c) && mnt_context_get_syscall_errno(c) > 0)
                return mnt_context_get_syscall_errno(c);
        return r < 0 ? -r : EIO;
}

static int do_umount(const RemountPlan *p) {
        _cleanup_(contextp) struct libmnt_context *c = new_context();
        int r;

        if (!c)
                return -ENOMEM;
        r = mnt_context_set_target(c, p->target);
        if (r >= 0)
                r = mnt_context_umount(c); /* no MNT_FORCE, no MNT_DETACH */
        if (r == 0 && (!mnt_context_syscall_called(c) || mnt_context_get_syscall_errno(c) == 0))
                return 0;
        return -context_errno(c, r);
}

/* The path to open the source device by: the recorded source when it is that device, else
 * /dev/block/MAJ:MIN. */
static void source_path(const RemountPlan *p, char *buf, size_t size) {
        struct stat st;

        if (p->source && stat(p->source, &st) >= 0 && S_ISBLK(st.st_mode) && st.st_rdev == p->source_devnum)
                snprintf(buf, size, "%s", p->source);
        else
                snprintf(buf, size, "/dev/block/%u:%u", major(p->source_devnum), minor(p->source_devnum));
}

/* After the unmount: 1 when the superblock is gone (nobody holds the device exclusively any
 * more), 0 when it lives on, -errno when that cannot be told. */
static int superblock_gone(const RemountPlan *p) {
        char path[PATH_MAX];
        int fd;

        source_path(p, path, sizeof path);
        fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
                close(fd);
                return 1;
        }
        return errno == EBUSY ? 0 : -errno;
}

static int do_mount(const RemountJob *j, RemountReport *rep) {
        _cleanup_(contextp) struct libmnt_context *c = new_context();
        _cleanup_free_ char *options = NULL;
        const RemountPlan *p = j->plan;
        char source[PATH_MAX];
        int r;

        if (!c)
                return -ENOMEM;
        rep->mount_attempts++;
        if (rep->mount_attempts <= j->fail_mounts)
                options = strdup_printf("%s,%s", j->options, TEST_INVALID_OPTION);
        else
                options = strdup(j->options);
        if (!options)
                return -ENOMEM;
        /* The recorded source when it still names the device, else the device by number. */
        source_path(p, source, sizeof source);
        if ((r = mnt_context_set_source(c, source)) < 0 || (r = mnt_context_set_target(c, p->target)) < 0 ||
            (r = mnt_context_set_fstype(c, p->fstype)) < 0 || (r = mnt_context_set_options(c, options)) < 0)
                return r;
        /* A read-write mount that cannot be made read-write fails; libmount would silently
         * fall back to read-only. */
        (void) mnt_context_enable_rwonly_mount(c, 1);
        r = mnt_context_mount(c);
        if (r == 0 && (!mnt_context_syscall_called(c) || mnt_context_get_syscall_errno(c) == 0))
                return 0;
        return -context_errno(c, r);
}

/* Makes the new mount's propagation what it was, then checks the mount is back as it was.
 * Returns 0 (same), 1 (different: the difference in diff), or -errno (not mounted). */
static int verify_mount(const RemountPlan *p, int *ret_id, char *diff, size_t size) {
        _cleanup_(tablep) struct libmnt_table *t = mnt_new_table_from_file(host_mountinfo);
        struct libmnt_fs *fs;
        unsigned long now = 0, steps[3];

        diff[0] = '\0';
        *ret_id = 0;
        if (!t)
                return -errno;
        fs = table_top(t, p->target);
        if (!fs || !streq(mnt_fs_get_fstype(fs) ?: "", p->fstype))
                return -ENOENT;
        *ret_id = mnt_fs_get_id(fs);

        now = remount_propagation_from_fields(mnt_fs_get_optional_fields(fs));
        /* Outside the host's namespace, mount(2) would change our copy: leave it to systemd. */
        size_t n = in_host ? remount_propagation_steps(p->propagation, now, steps) : 0;
        for (size_t i = 0; i < n; i++)
                if (mount(NULL, p->target, NULL, steps[i], NULL) < 0) {
                        snprintf(diff, size, "its propagation could not be restored: %s", strerror(errno));
                        return 1;
                }
        if (n > 0) {
                mnt_unref_table(t);
                t = mnt_new_table_from_file(host_mountinfo);
                if (!t || !(fs = table_top(t, p->target)))
                        return -ENOENT;
        }

        const char *vfs = mnt_fs_get_vfs_options(fs) ?: "", *fso = mnt_fs_get_fs_options(fs) ?: "";
        if (!remount_options_equal(vfs, p->vfs_options))
                snprintf(diff, size, "its mount options are %s, they were %s", vfs, p->vfs_options);
        else if (!remount_options_equal(fso, p->fs_options))
                snprintf(diff, size, "its filesystem options are %s, they were %s", fso, p->fs_options);
        else if (!streq(mnt_fs_get_root(fs) ?: "", p->root))
                snprintf(diff, size, "it shows directory %s of the filesystem, it showed %s",
                         mnt_fs_get_root(fs), p->root);
        return diff[0] ? 1 : 0;
}

static int write_flag(const RemountJob *j, int value, RemountReport *rep) {
        char c = value ? '1' : '0';

        if (j->flag_fd < 0)
                return -EBADF;
        if (pwrite(j->flag_fd, &c, 1, 0) != 1)
                return -errno;
        rep->flag_restored = true;
        return 0;
}

/* Mounts with the old state (flag first), as the fallback and for retries. */
static void mount_old_state(const RemountJob *j, RemountReport *rep, const char *why) {
        char diff[512];
        int r, id;

        r = write_flag(j, j->old_flag, rep);
        if (r < 0) {
                report(rep, REMOUNT_UNMOUNTED, -r,
                       "%s; cannot write the old flag %d back (%s), so it was not mounted again", why,
                       j->old_flag, strerror(-r));
                return;
        }
        r = do_mount(j, rep);
        if (r < 0) {
                report(rep, REMOUNT_UNMOUNTED, -r, "%s; mounting it with the old state failed too: %s", why,
                       strerror(-r));
                return;
        }
        r = verify_mount(j->plan, &id, diff, sizeof diff);
        rep->new_id = id;
        if (r < 0)
                report(rep, REMOUNT_UNMOUNTED, -r, "%s; mounted it with the old state, but it is not there",
                       why);
        else if (r > 0)
                report(rep, REMOUNT_RESTORED, 0, "%s; mounted it again with the old state, but %s", why,
                       diff);
        else
                report(rep, REMOUNT_RESTORED, 0, "%s; mounted it again with the old state", why);
}

/* --- through systemd ------------------------------------------------------------------------ */

static bool still_mounted(const RemountPlan *p, uint64_t unique_id) {
        _cleanup_(tablep) struct libmnt_table *t = mnt_new_table_from_file(host_mountinfo);
        struct libmnt_fs *fs = t ? table_top(t, p->target) : NULL;
        struct statx stx;

        if (!fs || mnt_fs_get_id(fs) != p->id || mnt_fs_get_devno(fs) != p->devnum)
                return false;
        /* Mount ids are reused at once: the unique id (6.8+) tells the old mount from a new one. */
        if (unique_id == 0 ||
            statx(AT_FDCWD, p->target, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, STATX_MNT_ID_UNIQUE, &stx) <
                    0 ||
            !(stx.stx_mask & STATX_MNT_ID_UNIQUE))
                return true;
        return stx.stx_mnt_id == unique_id;
}

static uint64_t unique_id_of(const char *target) {
        struct statx stx;

        if (!in_host ||
            statx(AT_FDCWD, target, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, STATX_MNT_ID_UNIQUE, &stx) < 0 ||
            !(stx.stx_mask & STATX_MNT_ID_UNIQUE))
                return 0;
        return stx.stx_mnt_id;
}

static void cycle_with_systemd(const RemountJob *j, sd_bus *bus, const char *unit, RemountReport *rep) {
        _cleanup_free_ char *result = NULL, *why = NULL;
        const RemountPlan *p = j->plan;
        char diff[512];
        int r, id;

        snprintf(rep->unit, sizeof rep->unit, "%s", unit);
        snprintf(rep->via, sizeof rep->via, "systemd (%s)", unit);
        if (j->mount_only) {
                r = write_flag(j, j->old_flag, rep);
                if (r >= 0)
                        r = remount_systemd_run_job(bus, unit, "StartUnit", SYSTEMD_JOB_TIMEOUT_USEC,
                                                    &result);
                if (r < 0 || verify_mount(p, &id, diff, sizeof diff) < 0)
                        report(rep, REMOUNT_UNMOUNTED, r < 0 ? -r : ENOENT, "systemd could not mount it: %s",
                               result ?: strerror(r < 0 ? -r : ENOENT));
                else {
                        rep->new_id = id;
                        report(rep, REMOUNT_RESTORED, 0, "systemd mounted it again with the old state");
                }
                return;
        }

        uint64_t unique_id = unique_id_of(p->target);
        r = remount_systemd_run_job(bus, unit, "RestartUnit", SYSTEMD_JOB_TIMEOUT_USEC, &result);
        if (r >= 0) {
                r = verify_mount(p, &id, diff, sizeof diff);
                rep->new_id = id;
                if (r == 0) {
                        report(rep, REMOUNT_DONE, 0, "systemd restarted %s", unit);
                        return;
                }
                if (r > 0) {
                        report(rep, REMOUNT_DIFFERENT, 0,
                               "systemd restarted %s, but %s (systemd mounts it as its "
                               "unit or /etc/fstab says)",
                               unit, diff);
                        return;
                }
        }
        if (still_mounted(p, unique_id)) {
                report(rep, REMOUNT_BUSY, r < 0 ? -r : 0, "systemd could not unmount it (%s)",
                       result ?: strerror(r < 0 ? -r : EIO));
                return;
        }
        why = strdup_printf("systemd unmounted it but could not mount it again (%s)",
                            result ?: strerror(-r));
        free(result);
        result = NULL;
        r = write_flag(j, j->old_flag, rep);
        if (r >= 0)
                r = remount_systemd_run_job(bus, unit, "StartUnit", SYSTEMD_JOB_TIMEOUT_USEC, &result);
        if (r < 0 || verify_mount(p, &id, diff, sizeof diff) < 0)
                report(rep, REMOUNT_UNMOUNTED, r < 0 ? -r : ENOENT,
                       "%s; starting %s with the old state failed "
                       "too (%s)",
                       why ?: "", unit, result ?: strerror(r < 0 ? -r : ENOENT));
        else {
                rep->new_id = id;
                report(rep, REMOUNT_RESTORED, 0, "%s; systemd mounted it again with the old state",
                       why ?: "");
        }
}

/* --- the cycle ------------------------------------------------------------------------------ */

void remount_job_run(const RemountJob *j, RemountReport *rep) {
        _cleanup_(bus_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *unit = NULL, *why = NULL, *reason = NULL, *dependents = NULL;
        const RemountPlan *p = j->plan;
        char diff[512];
        int r, id;

        *rep = (RemountReport){ .outcome = REMOUNT_FAILED };

        /* 1. systemd, when it manages the mount (connect before leaving our namespace: the
         * bus socket is where our environment says). A retry goes the way the cycle went;
         * without the bus it mounts by itself: the filesystem must come back. */
        if (j->mount_only && j->systemd_unit) {
                if (sd_bus_open_system(&bus) >= 0)
                        unit = strdup(j->systemd_unit);
        } else if (!j->mount_only) {
                r = remount_systemd_find(p->target, &bus, &unit, &why);
                if (r < 0)
                        why = strdup_printf("cannot ask systemd (%s)", strerror(-r));
        }

        /* 2. The host's namespace: for a retry, the mount is gone; its parent is the anchor. */
        if (j->mount_only)
                r = enter_host_namespace(p->parent_id, 0, NULL, rep);
        else
                r = enter_host_namespace(p->id, p->devnum, p->target, rep);
        if (r < 0) {
                if (!unit || !bus)
                        return; /* the report says why */
                /* systemd unmounts and mounts in its own namespace; we check from PID 1's
                 * table, and the processes we may not inspect are left to the unmount. */
                host_mountinfo = "/proc/1/mountinfo";
                in_host = false;
                *rep = (RemountReport){ .outcome = REMOUNT_FAILED };
        }
        if (why) {
                /* Say why systemd did not do it: its absence must be visible. */
                size_t n = strlen(rep->via);
                snprintf(rep->via + n, sizeof rep->via - n, " (not through systemd: %s)", why);
        }
        if (j->mount_only) {
                if (unit && bus)
                        return cycle_with_systemd(j, bus, unit, rep);
                return mount_old_state(j, rep, "it was left unmounted by a failed cycle");
        }

        /* 3. Checks on the live system, now that we see what the host sees. */
        _cleanup_(tablep) struct libmnt_table *t = mnt_new_table_from_file(host_mountinfo);
        if (!t) {
                report(rep, REMOUNT_FAILED, errno, "cannot read the host's mount table: %s",
                       strerror(errno));
                return;
        }
        r = remount_check_table(t, p, &reason);
        if (r != 0) {
                report(rep, r > 0 ? REMOUNT_REFUSED : REMOUNT_FAILED, r > 0 ? 0 : -r, "%s",
                       r > 0 ? reason : strerror(-r));
                return;
        }
        Users u = { .plan = p };
        struct stat st;
        if (in_host && stat("/proc/self/ns/mnt", &st) >= 0)
                u.self_ns = st.st_ino; /* the host's: its table was checked above */
        r = users_add_id(&u, p->id);
        if (r >= 0)
                r = for_each_pid(scan_namespace, &u);
        if (r == 0 && !j->skip_scan)
                r = for_each_pid(scan_process, &u);
        free(u.ids);
        free(u.seen_ns);
        if (r != 0) {
                report(rep, r > 0 ? REMOUNT_REFUSED : REMOUNT_FAILED, r > 0 ? 0 : -r, "%s",
                       r > 0 ? u.reason : strerror(-r));
                free(u.reason);
                return;
        }
        if (unit && bus) {
                r = remount_systemd_dependents(bus, unit, &dependents);
                if (r >= 0 && dependents) {
                        report(rep, REMOUNT_REFUSED, 0, "restarting %s would restart %s too", unit,
                               dependents);
                        return;
                }
                return cycle_with_systemd(j, bus, unit, rep);
        }

        /* 4. Unmount (EBUSY is the final word on being idle), and make sure the superblock went
         * with it: another holder would hand the old one back to the new mount. */
        r = do_umount(p);
        if (r < 0) {
                report(rep, REMOUNT_BUSY, -r, "the unmount failed: %s%s", strerror(-r),
                       u.uninspectable > 0 ? " (some processes could not be inspected)" : "");
                return;
        }
        r = superblock_gone(p);
        if (r == 0) {
                r = do_mount(j, rep);
                if (r >= 0 && verify_mount(p, &id, diff, sizeof diff) >= 0) {
                        rep->new_id = id;
                        report(rep, REMOUNT_BUSY, EBUSY,
                               "the superblock outlived the unmount (something else holds the device); "
                               "mounted "
                               "it again as it was");
                } else
                        mount_old_state(j, rep,
                                        "the superblock outlived the unmount and mounting it again failed");
                return;
        }

        /* 5. Mount with the new state (the daemon wrote the flag); on failure the old one. */
        r = do_mount(j, rep);
        if (r < 0) {
                char why_buf[256];
                snprintf(why_buf, sizeof why_buf, "mounting it with the new state failed: %s", strerror(-r));
                mount_old_state(j, rep, why_buf);
                if (rep->outcome == REMOUNT_RESTORED)
                        rep->error = -r;
                return;
        }
        r = verify_mount(p, &id, diff, sizeof diff);
        rep->new_id = id;
        if (r < 0)
                mount_old_state(j, rep, "the mount with the new state did not appear");
        else if (r > 0)
                report(rep, REMOUNT_DIFFERENT, 0, "mounted it again, but %s", diff);
        else
                report(rep, REMOUNT_DONE, 0, "unmounted and mounted it again");
}
