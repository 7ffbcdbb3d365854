/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libmount/libmount.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "remount-cycle.h"
#include "remount-pin.h"
#include "remount-systemd.h"
#include "sysfs.h"
#include "util.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x1000U
#endif

/* How long systemd may take for a stop or start job of a mount unit (unless a test says). */
#define SYSTEMD_JOB_TIMEOUT_USEC (5 * 60 * USEC_PER_SEC)

/* The test hook's option: no filesystem knows it, so mount(2) fails with EINVAL. */
#define TEST_INVALID_OPTION "stablepages-test-invalid-option"

/* Set by SIGTERM: the daemon stops. Before the unmount the cycle is abandoned; after it, it
 * is carried to its end. */
static volatile sig_atomic_t stop_requested;

static const char *const remount_outcome_table[_REMOUNT_OUTCOME_MAX] = {
        [REMOUNT_DONE] = "done",           [REMOUNT_NOTHING] = "nothing",
        [REMOUNT_REFUSED] = "refused",     [REMOUNT_BUSY] = "busy",
        [REMOUNT_RESTORED] = "restored",   [REMOUNT_UNMOUNTED] = "unmounted",
        [REMOUNT_DIFFERENT] = "different", [REMOUNT_FAILED] = "failed",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(remount_outcome, RemountOutcome);

/* One cycle or replay, in the child. */
typedef struct Cycle {
        const RemountJob *job;
        RemountJournal *journal;
        RemountPlan *plan; /* &journal->plan */
        RemountReport *rep;
        sd_bus *bus;           /* systemd's bus, when systemd does the unmount and the mount */
        const char *mountinfo; /* the system's mount table as this process reads it */
        bool in_host;          /* this process is in the host's mount namespace */
        RemountPin pin;
        char sb_dir[PATH_MAX];  /* the superblock's /sys/fs/TYPE/NAME, "" when an O_EXCL open tells */
        char **targets;         /* targets a stop of the unit stops (started again after) */
        unsigned uninspectable; /* processes whose files could not be seen */
} Cycle;

static void tablep(struct libmnt_table **t) {
        mnt_unref_table(*t);
}

static uint64_t job_timeout(const Cycle *c) {
        return c->job->job_timeout_usec ?: SYSTEMD_JOB_TIMEOUT_USEC;
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

/* The entry of the mount table with that id (and devnum and target when target is given),
 * or NULL. */
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
        char *reason; /* names the process, or the other namespace's mount: for root */
        char *busy;   /* the same without names: for everyone */
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
                u->busy = strdup("busy: it is also mounted in another mount namespace, which an unmount "
                                 "here does not reach (the daemon's log says where)");
                r = u->reason && u->busy ? 1 : -ENOMEM;
        }
        mnt_free_iter(iter);
        return r;
}

/* A process uses the filesystem: what and path (may be NULL) say how. Which process and which
 * file are another user's business: named only in u->reason. */
static int note_user(Users *u, pid_t pid, const char *what, const char *path) {
        char comm[64];

        read_comm(pid, comm, sizeof comm);
        u->reason = strdup_printf("PID %d (%s) %s%s%s", (int) pid, comm, what, path ? ": " : "", path ?: "");
        u->busy = strdup_printf("busy: a process %s (the daemon's log names it)", what);
        return u->reason && u->busy ? 1 : -ENOMEM;
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
                        return note_user(u, pid, "has a file open on it", target);
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
                        r = note_user(u, pid, "has a file mapped from it", off > 0 ? line + off : "?");
                        free(line);
                        return r;
                }
        }
        free(line);
        return 0;
}

/* --- the journal, the test pause, signals ---------------------------------------------------- */

static int save_stage(Cycle *c, RemountStage stage) {
        c->journal->stage = stage;
        c->rep->stage = stage;
        return remount_journal_save(c->job->journal_path, c->journal);
}

/* Whether the daemon stops: SIGTERM came, or waits while blocked (block_stop_signals()). */
static bool stop_pending(void) {
        sigset_t pending;

        if (stop_requested)
                return true;
        return sigpending(&pending) >= 0 &&
               (sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT));
}

/* From the unmount on, the cycle goes to its end: SIGTERM may not interrupt a single call
 * (sd-bus gives up a call whose poll is interrupted). */
static void block_stop_signals(void) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
}

/* Test hook: tells the test which step the cycle reached and waits for its go (a line
 * written to PAUSE.go), or for SIGTERM. No reader on PAUSE: no pause. */
static void pause_at(Cycle *c, const char *step) {
        _cleanup_free_ char *go = NULL;
        _cleanup_close_ int fd = -EBADF;

        if (!c->job->pause_fifo || stop_pending())
                return;
        fd = open(c->job->pause_fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return; /* nobody listens */
        dprintf(fd, "%s %d\n", step, (int) getpid());
        close(TAKE_FD(fd));
        go = strdup_printf("%s.go", c->job->pause_fifo);
        if (!go)
                return;
        fd = open(go, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return;
        while (!stop_pending()) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                char ch;
                if (poll(&p, 1, 100) <= 0)
                        continue;
                while ((p.revents & POLLIN) && read(fd, &ch, 1) == 1)
                        if (ch == '\n')
                                return;
                if (p.revents & POLLHUP)
                        return; /* the writer went without a line */
        }
}

static void on_sigterm(int sig) {
        stop_requested = 1;
}

/* SIGTERM (the daemon stops, or systemd stops its cgroup) sets stop_requested and interrupts
 * waits; SIGPIPE (the daemon died: the report pipe has no reader) is ignored. */
static void setup_signals(void) {
        struct sigaction sa = { .sa_handler = on_sigterm };
        sigset_t mask;

        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGINT, &sa, NULL);
        (void) signal(SIGPIPE, SIG_IGN);
        /* The daemon blocks them for its event loop; the child must receive them. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        (void) sigprocmask(SIG_UNBLOCK, &mask, NULL);
}

/* --- the device: can its superblock's end be seen, and can it be mounted ------------------- */

/* The path to open the source device by: the recorded source when it is that device, else
 * /dev/block/MAJ:MIN. */
static void source_path(const RemountPlan *p, char *buf, size_t size) {
        struct stat st;

        if (p->source && stat(p->source, &st) >= 0 && S_ISBLK(st.st_mode) && st.st_rdev == p->source_devnum)
                snprintf(buf, size, "%s", p->source);
        else
                snprintf(buf, size, "/dev/block/%u:%u", major(p->source_devnum), minor(p->source_devnum));
}

/* The kernel's directory of the superblock of p's filesystem (/sys/fs/TYPE/NAME, named
 * after the block device: sb->s_id) into buf, for the types that have one; "" otherwise. It
 * exists exactly as long as the superblock, and a new superblock's has a new inode. */
static void superblock_dir(const RemountPlan *p, char *buf, size_t size) {
        static const char *const with_sysfs[] = { "ext4", "xfs", "f2fs" };
        char link[64], target[PATH_MAX];
        ssize_t n;

        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(with_sysfs); i++)
                if (streq(p->fstype, with_sysfs[i])) {
                        snprintf(link, sizeof link, "/sys/dev/block/%u:%u", major(p->source_devnum),
                                 minor(p->source_devnum));
                        n = readlink(link, target, sizeof target - 1);
                        if (n <= 0)
                                return;
                        target[n] = '\0';
                        snprintf(buf, size, "/sys/fs/%s/%s", p->fstype, strrchr(target, '/') + 1);
                        return;
                }
}

/* Step 3. Finds how the superblock's end will be seen, and records the identity of the
 * superblock now. Returns 0, or 1 with a sentence in *ret_reason. */
static int superblock_setup(Cycle *c, char **ret_reason) {
        const RemountPlan *p = c->plan;
        char source[PATH_MAX];
        struct stat st;
        int fd;

        superblock_dir(p, c->sb_dir, sizeof c->sb_dir);
        if (c->sb_dir[0] && stat(c->sb_dir, &st) >= 0) {
                c->journal->sb_ino = (uint64_t) st.st_ino;
                return 0;
        }
        c->sb_dir[0] = '\0';
        /* Else the device is opened with O_EXCL after the unmount: it must open at all. */
        source_path(p, source, sizeof source);
        fd = open(source, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
                close(fd);
                return 0;
        }
        *ret_reason = strdup_printf(
                "there is no way to see that its superblock goes away at the unmount: %s has no "
                "/sys/fs/%s directory here and %s cannot be opened (%s%s)",
                p->fstype, p->fstype, source, strerror(errno),
                errno == EPERM ? ": the service's DevicePolicy= denies block devices" : "");
        return *ret_reason ? 1 : -ENOMEM;
}

/* After the unmount: 1 when the superblock is gone, 0 when it lives on, -errno when that
 * cannot be told (never read as gone). */
static int superblock_gone(Cycle *c) {
        char source[PATH_MAX];
        int fd;

        if (c->sb_dir[0]) {
                struct stat st;
                if (stat(c->sb_dir, &st) >= 0)
                        return (uint64_t) st.st_ino == c->journal->sb_ino ? 0 : 1;
                return errno == ENOENT ? 1 : -errno;
        }
        source_path(c->plan, source, sizeof source);
        fd = open(source, O_RDONLY | O_EXCL | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
                close(fd);
                return 1;
        }
        return errno == EBUSY ? 0 : -errno;
}

/* The daemon's own mount(2) opens the device from this process's cgroup: a device policy
 * (DevicePolicy=closed) makes it fail with EPERM, after the unmount. Checked before. */
static int device_check_mountable(Cycle *c, char **ret_reason) {
        char source[PATH_MAX];
        bool rw = !mnt_optstr_get_option(c->plan->vfs_options, "rw", NULL, NULL);
        int fd;

        source_path(c->plan, source, sizeof source);
        fd = open(source, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
                close(fd);
                return 0;
        }
        *ret_reason = strdup_printf("it could not be mounted again: %s cannot be opened %s (%s%s)", source,
                                    rw ? "read-write" : "read-only", strerror(errno),
                                    errno == EPERM ? ": a device policy denies it" : "");
        return *ret_reason ? 1 : -ENOMEM;
}

/* Writes the disk's flag through the project's one writer (flag.h): only on the disk the cycle
 * is for, and an off only where its need allows. Returns 0, -EBADF when the disk could not be
 * pinned, or -errno with a sentence in *ret_why. */
static int write_flag(Cycle *c, int value, char **ret_why) {
        const RemountJob *j = c->job;
        FlagWrite w = {
                .disk = c->journal->disk,
                .diskseq = c->journal->diskseq, /* the journal's disk, never another of the name */
                .need = j->need,
                .force = j->force,
                .value = value,
                .writer = j->replay ? "replay" : "cycle",
                .need_of = j->need_of,
                .userdata = j->need_userdata,
        };
        int r;

        *ret_why = NULL;
        if (j->disk_fd < 0)
                return -EBADF;
        r = flag_write_at(j->disk_fd, j->runtime_dir, &w, NULL, ret_why);
        if (r >= 0)
                c->rep->flag_written = value;
        return r;
}

/* --- unmount, mount, verify ---------------------------------------------------------------- */

/* Step 4: writes the filesystem's dirty data back while nothing is touched yet. */
static void sync_target(Cycle *c) {
        int fd = remount_open_component(c->pin.parent_fd, c->pin.name, O_RDONLY, false);

        if (fd < 0)
                return;
        (void) syncfs(fd);
        close(fd); /* an open file would keep it busy */
}

/* Step 5: systemd stops the unit, or umount2(2) of the pinned mount point's name. Returns 0,
 * -EINPROGRESS when systemd's unmount is still at work (its job did not end in time and was
 * cancelled, its umount did not end either: whether it unmounts is not known yet), or -errno,
 * with what failed in *ret_why. */
static int do_unmount(Cycle *c, char **ret_why) {
        int r;

        *ret_why = NULL;
        if (c->bus) {
                r = remount_systemd_run_job(c->bus, c->journal->unit, "StopUnit", "fail", job_timeout(c),
                                            ret_why);
                /* A failed or cancelled stop may leave a control process (umount) at work: let it
                 * end, else the journal must stay for whatever it does. */
                if (r < 0 &&
                    remount_systemd_wait_idle(c->bus, c->journal->unit, job_timeout(c)) == -ETIMEDOUT)
                        return -EINPROGRESS;
                return r;
        }
        /* Relative to the pinned parent; no MNT_FORCE, no MNT_DETACH. */
        if (fchdir(c->pin.parent_fd) < 0)
                return -errno;
        r = umount2(c->pin.name, UMOUNT_NOFOLLOW) < 0 ? -errno : 0;
        (void) chdir("/");
        return r;
}

/* One mount attempt, with the flag already written: systemd starts the unit (or a transient
 * one), or mount(2) on mp_fd, the pinned mount point. Returns 0 or -errno with *ret_why. */
static int mount_once(Cycle *c, int mp_fd, char **ret_why) {
        const RemountJob *j = c->job;
        const RemountPlan *p = c->plan;
        _cleanup_free_ char *options = NULL, *user = NULL, *vfs = NULL, *fs = NULL;
        char source[PATH_MAX], target[64];
        unsigned long flags = 0;
        int r;

        *ret_why = NULL;
        /* A unit file's options are its own: the test hook cannot reach them. */
        if (!c->bus || !c->journal->unit_file)
                c->rep->mount_attempts++;
        options = (!c->bus || !c->journal->unit_file) && c->rep->mount_attempts <= j->fail_mounts
                          ? strdup_printf("%s,%s", j->options, TEST_INVALID_OPTION)
                          : strdup(j->options);
        if (!options)
                return -ENOMEM;
        source_path(p, source, sizeof source);
        if (c->bus) {
                if (c->journal->unit_file)
                        return remount_systemd_run_job(c->bus, c->journal->unit, "StartUnit", "replace",
                                                       job_timeout(c), ret_why);
                r = remount_systemd_start_transient(c->bus, c->journal->unit, source, p->fstype, options,
                                                    job_timeout(c), ret_why);
                if (r < 0) /* a failed transient unit stays loaded and would refuse the next one */
                        (void) remount_systemd_reset_failed(c->bus, c->journal->unit);
                return r;
        }
        /* Per-mount flags for mount(2), the filesystem's own options as its data. */
        if (mnt_split_optstr(options, &user, &vfs, &fs, 0, 0) < 0 ||
            mnt_optstr_get_flags(vfs, &flags, mnt_get_builtin_optmap(MNT_LINUX_MAP)) < 0)
                return -EINVAL;
        snprintf(target, sizeof target, "/proc/self/fd/%d", mp_fd);
        if (mount(source, target, p->fstype, flags, fs) < 0) {
                r = -errno;
                *ret_why = strdup(strerror(-r));
                return r;
        }
        return 0;
}

/* A mount of our filesystem: its type, and its device (btrfs: the source, as the superblock
 * has an anonymous device number). */
static bool is_ours(const RemountPlan *p, struct libmnt_fs *fs) {
        struct stat st;
        const char *source = mnt_fs_get_source(fs);

        if (!streq(mnt_fs_get_fstype(fs) ?: "", p->fstype))
                return false;
        if (mnt_fs_get_devno(fs) == p->devnum)
                return true;
        return source && stat(source, &st) >= 0 && S_ISBLK(st.st_mode) && st.st_rdev == p->source_devnum;
}

/* Our filesystem mounted anywhere but on target, or NULL. */
static struct libmnt_fs *table_find_elsewhere(struct libmnt_table *t, const RemountPlan *p) {
        struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs, *found = NULL;

        if (!iter)
                return NULL;
        while (mnt_table_next_fs(t, iter, &fs) == 0)
                if (is_ours(p, fs) && !streq(mnt_fs_get_target(fs) ?: "", p->target)) {
                        found = fs;
                        break;
                }
        mnt_free_iter(iter);
        return found;
}

/* Makes the new mount's propagation what it was (in the host's namespace only: systemd's
 * mounts get what their parent gives), then checks the mount is back as it was, on the same
 * parent mount. Returns 0 (same), 1 (different: the difference in diff), or -errno (not
 * mounted there). */
static int verify_mount(Cycle *c, int *ret_id, char *diff, size_t size) {
        const RemountPlan *p = c->plan;
        _cleanup_(tablep) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        struct libmnt_fs *fs;
        unsigned long steps[3];

        diff[0] = '\0';
        *ret_id = 0;
        if (!t)
                return -errno;
        fs = table_top(t, p->target);
        if (!fs || !is_ours(p, fs)) {
                /* Never through a symbolic link, but say so loudly if it happened. */
                struct libmnt_fs *other = table_find_elsewhere(t, p);
                if (!other)
                        return -ENOENT;
                *ret_id = mnt_fs_get_id(other);
                snprintf(diff, size, "IT WAS MOUNTED ON %s, not on %s", mnt_fs_get_target(other), p->target);
                return 1;
        }
        *ret_id = mnt_fs_get_id(fs);
        if (mnt_fs_get_parent_id(fs) != p->parent_id) {
                snprintf(diff, size,
                         "it was mounted on top of another mount of %s (mount %d), not on mount %d",
                         p->target, mnt_fs_get_parent_id(fs), p->parent_id);
                return 1;
        }

        unsigned long now = remount_propagation_from_fields(mnt_fs_get_optional_fields(fs));
        size_t n = c->in_host && !c->bus ? remount_propagation_steps(p->propagation, now, steps) : 0;
        if (n > 0) {
                _cleanup_close_ int fd =
                        remount_open_component(c->pin.parent_fd, c->pin.name, O_PATH, false);
                char path[64];
                snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
                for (size_t i = 0; i < n; i++)
                        if (fd < 0 || mount(NULL, path, NULL, steps[i], NULL) < 0) {
                                snprintf(diff, size, "its propagation could not be restored: %s",
                                         strerror(errno));
                                return 1;
                        }
                mnt_unref_table(t);
                t = mnt_new_table_from_file(c->mountinfo);
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

/* Whether our filesystem is what is mounted on the target now (someone mounted it); sets
 * the report's new mount id. */
static bool mounted_again(Cycle *c) {
        _cleanup_(tablep) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        struct libmnt_fs *fs = t ? table_top(t, c->plan->target) : NULL;

        if (!fs || !is_ours(c->plan, fs))
                return false;
        c->rep->new_id = mnt_fs_get_id(fs);
        return true;
}

/* "a; b; c" of the parts that are not NULL or empty. */
static char *join3(const char *a, const char *b, const char *c) {
        const char *parts[] = { a, b, c };
        char *buf = NULL;
        size_t size = 0;
        bool first = true;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                if (!isempty(parts[i])) {
                        fprintf(f, "%s%s", first ? "" : "; ", parts[i]);
                        first = false;
                }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* The disk or the filesystem is not the journal's (or cannot be told): nothing is mounted. */
static int report_stale(RemountReport *rep, const char *format, ...) _printf_(2, 3);
static int report_stale(RemountReport *rep, const char *format, ...) {
        _cleanup_free_ char *what = NULL;
        va_list ap;

        va_start(ap, format);
        if (vasprintf(&what, format, ap) < 0)
                what = NULL;
        va_end(ap);
        rep->stale = rep->give_up = true;
        report(rep, REMOUNT_UNMOUNTED, ESTALE, "not mounting it back: %s", what ?: "out of memory");
        return 1;
}

/* Step 6's identity: the disk that has the journal's name now must be the journal's (its
 * diskseq, read through the sysfs directory the daemon pinned for this process), and so must
 * the filesystem on the device it mounted (its UUID in the udev database). Returns 0, or 1 with
 * the report filled: stale when either is another one, or when the journal does not say (an
 * earlier version's); else retried (the UUID cannot be read yet: udev has not seen the device). */
static int check_identity(Cycle *c) {
        const RemountJournal *j = c->journal;
        const RemountPlan *p = c->plan;
        _cleanup_free_ char *seq = NULL, *uuid = NULL;
        long long now;
        int r;

        if (!j->identified)
                return report_stale(
                        c->rep,
                        "its journal was written by an earlier version of stablepages, which did "
                        "not record which disk and filesystem it was (no diskseq, no filesystem "
                        "UUID), and %s may be another disk now",
                        j->disk);
        if (c->job->disk_fd < 0)
                return report_stale(c->rep, "the disk %s is not there any more", j->disk);
        if (j->diskseq != 0) {
                r = sysfs_read_string_at(c->job->disk_fd, "diskseq", &seq);
                if (r == -ENOMEM)
                        return report(c->rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory"), 1;
                if (r < 0)
                        return report_stale(c->rep, "the disk %s (diskseq %" PRIu64 ") was removed", j->disk,
                                            j->diskseq);
                if (parse_int_range(seq, 0, INT64_MAX, &now) < 0 || (uint64_t) now != j->diskseq)
                        return report_stale(
                                c->rep,
                                "%s is another disk now (diskseq %s; the journal's was diskseq %" PRIu64 ")",
                                j->disk, seq, j->diskseq);
        }
        if (j->fs_uuid) {
                r = remount_fs_uuid(c->job->udev_data_dir, p->source_devnum, &uuid);
                if (r < 0)
                        return report(c->rep, REMOUNT_UNMOUNTED, -r, "%s", strerror(-r)), 1;
                if (r == 0)
                        return report(c->rep, REMOUNT_UNMOUNTED, ENODATA,
                                      "the udev database has no filesystem UUID for %s now: not mounting it "
                                      "before it can be told from another filesystem",
                                      p->source),
                               1;
                if (!streq(uuid, j->fs_uuid))
                        return report_stale(
                                c->rep,
                                "the filesystem on %s is another one now (UUID %s; the journal's was "
                                "UUID %s)",
                                p->source, uuid, j->fs_uuid);
        }
        return 0;
}

/* Writes want (the flag of the state to mount with) through flag.h. Returns the flag the disk
 * has now in *ret_flag: want, or the flag as it stays when the write was refused (the
 * interlock) or failed (the sentence in *ret_kept). Returns 0, or 1 with the report filled
 * (the disk is another one: stale). */
static int set_mount_flag(Cycle *c, int want, int *ret_flag, char **ret_kept) {
        _cleanup_free_ char *why = NULL;
        int r = write_flag(c, want, &why);

        *ret_flag = want;
        if (r == -ESTALE || r == -ENODEV)
                return report_stale(c->rep, "%s", why ?: strerror(-r));
        if (r < 0 && r != -EBADF) {
                /* Refused by the interlock, or the write failed: the flag was not want
                 * (flag_write_at() returns 0 when it is) and stays as it is. The flag never makes
                 * a mount fail: mount it with that rather than leave it unmounted. */
                *ret_flag = !want;
                *ret_kept =
                        strdup_printf("stable writes stay %s: %s", want ? "off" : "on", why ?: strerror(-r));
                return *ret_kept ? 0 : (report(c->rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory"), 1);
        }
        return 0;
}

/* Steps 6 to 8: mounts the filesystem back onto the pinned place, first with the state of
 * the journal's stage (the new one, unless it already fell back), then with the old one, or,
 * where the interlock refuses the old flag, with the new one once more. Before each attempt
 * the place must still be free and the same, and the disk and the filesystem the journal's.
 * The stage saved, the report and its effective state say the flag the disk had at the mount.
 * before: what happened first, to start the report's message with, or NULL. */
static void mount_back(Cycle *c, const char *before) {
        RemountReport *rep = c->rep;
        RemountJournal *j = c->journal;
        _cleanup_free_ char *first_failure = NULL, *kept = NULL;
        bool last = false; /* the last attempt: a failure leaves it unmounted */
        char diff[512];
        int r, id;

        for (;;) {
                _cleanup_close_ int mp_fd = -EBADF;
                _cleanup_free_ char *reason = NULL, *why = NULL, *kept_now = NULL,
                                    *so_far = join3(before, first_failure, kept);
                bool fell_back = remount_journal_fell_back(j), changed, with_old;
                int want = remount_journal_mount_flag(j), flag;

                if (!so_far)
                        return (void) report(rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory");
                r = remount_pin_check_free(&c->pin, c->plan->target, c->bus ? NULL : &mp_fd, &changed,
                                           &reason);
                if (r < 0)
                        return (void) report(rep, REMOUNT_UNMOUNTED, -r,
                                             "%s%scannot check its mount point: %s", so_far,
                                             *so_far ? "; " : "", strerror(-r));
                if (r > 0 && !changed && mounted_again(c)) {
                        report(rep, REMOUNT_DIFFERENT, 0,
                               "%s%sit was mounted again by someone else meanwhile", so_far,
                               *so_far ? "; " : "");
                        return;
                }
                if (r > 0) {
                        /* Nothing is mounted through a changed path, nothing on top of another mount. */
                        rep->give_up = true;
                        return (void) report(rep, REMOUNT_UNMOUNTED, changed ? ENOTDIR : EEXIST,
                                             "%s%snot mounting it again: %s; not retrying", so_far,
                                             *so_far ? "; " : "", reason);
                }
                if (check_identity(c) != 0 || set_mount_flag(c, want, &flag, &kept_now) != 0)
                        return;
                if (kept_now) {
                        char *s = join3(so_far, kept_now, NULL);
                        if (!s)
                                return (void) report(rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory");
                        free(so_far);
                        so_far = s;
                }
                /* The stage says the state the flag gives the mount: the old one, or the new one
                 * (also at a fallback whose old flag the interlock refused). */
                with_old = j->old_flag != j->new_flag ? flag == j->old_flag : fell_back;
                (void) save_stage(c, with_old ? REMOUNT_STAGE_MOUNTING_OLD : REMOUNT_STAGE_MOUNTING_NEW);
                r = mount_once(c, mp_fd, &why);
                if (r >= 0) {
                        rep->mounted = true;
                        r = verify_mount(c, &id, diff, sizeof diff);
                        rep->new_id = id;
                }
                if (r >= 0) {
                        (void) save_stage(c, with_old ? REMOUNT_STAGE_MOUNTED_OLD : REMOUNT_STAGE_MOUNTED);
                        rep->effective = flag;
                        if (r > 0)
                                report(rep, REMOUNT_DIFFERENT, 0,
                                       "%s%smounted it again (stable writes %s), but %s", so_far,
                                       *so_far ? "; " : "", flag ? "on" : "off", diff);
                        else if (with_old)
                                report(rep, REMOUNT_RESTORED, 0, "%s; mounted it again with the old state",
                                       so_far);
                        else if (*so_far)
                                report(rep, REMOUNT_DONE, 0, "%s; mounted it again with the new state",
                                       so_far);
                        else
                                report(rep, REMOUNT_DONE, 0, "unmounted and mounted it again");
                        return;
                }
                if (!why)
                        why = strdup(r == -ENOENT ? "the mount did not appear" : strerror(-r));
                if (with_old || last)
                        return (void) report(rep, REMOUNT_UNMOUNTED, -r,
                                             "%s; mounting it with the %s state failed too: %s", so_far,
                                             with_old ? "old" : "new", why ?: "?");
                free(first_failure);
                first_failure = strdup_printf("mounting it with the new state failed: %s", why ?: "?");
                if (!first_failure)
                        return (void) report(rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory");
                rep->error = -r;
                /* 8. The old state, unless the interlock keeps stable writes on: then the new one
                 * once more (never the old 0 on a disk that needs stable writes). */
                _cleanup_free_ char *refused = NULL;
                if (set_mount_flag(c, j->old_flag, &flag, &refused) != 0)
                        return;
                if (flag != j->old_flag) {
                        last = true;
                        free(kept);
                        kept = strdup_printf("not falling back to the old state: %s", refused);
                        if (!kept)
                                return (void) report(rep, REMOUNT_UNMOUNTED, ENOMEM, "out of memory");
                        continue;
                }
                if (save_stage(c, REMOUNT_STAGE_MOUNTING_OLD) < 0)
                        j->stage = REMOUNT_STAGE_MOUNTING_OLD; /* the mount with the old state goes on */
                pause_at(c, "before-mount-old");
        }
}

/* Starts again the targets the stop of the unit stopped (as a restart would). */
static void restart_targets(Cycle *c) {
        STRV_FOREACH (t, c->targets) {
                _cleanup_free_ char *result = NULL;
                if (remount_systemd_is_active(c->bus, *t) == 0)
                        (void) remount_systemd_run_job(c->bus, *t, "StartUnit", "fail", job_timeout(c),
                                                       &result);
        }
}

/* --- the cycle ------------------------------------------------------------------------------ */

/* Step 1: who does it. systemd whenever it is there; else this process, in the host's mount
 * namespace. Returns 0, or -errno with the report filled. */
static int choose_way(Cycle *c, bool replay) {
        RemountReport *rep = c->rep;
        RemountPlan *p = c->plan;
        _cleanup_free_ char *why = NULL, *unit = NULL;
        bool unit_file = false;
        int r;

        r = replay && !c->journal->unit ? 0 : remount_systemd_connect(&c->bus, &why);
        if (r > 0 && !replay) {
                r = remount_systemd_find(c->bus, p->target, &unit, &unit_file, &why);
                /* A unit file's start mounts what the file says: used only when that is what is
                 * mounted (a transient unit cannot take its name). */
                if (r > 0 && unit_file) {
                        r = remount_systemd_check_unit_file(c->bus, unit, p, &why);
                        r = r == 0 ? 1 : r > 0 ? 0 : r;
                }
                if (r <= 0) {
                        report(rep, r < 0 ? REMOUNT_FAILED : REMOUNT_REFUSED, r < 0 ? -r : 0, "%s",
                               r < 0 ? strerror(-r) : why);
                        return r < 0 ? r : -ENOENT;
                }
                free(c->journal->unit);
                c->journal->unit = TAKE_PTR(unit);
                c->journal->unit_file = unit_file;
        }
        if (r > 0) {
                c->mountinfo = "/proc/1/mountinfo";
                snprintf(rep->unit, sizeof rep->unit, "%s", c->journal->unit);
                snprintf(rep->via, sizeof rep->via, "systemd (%s)", c->journal->unit);
                return 0;
        }
        /* Ourselves: for a replay, the mount is gone; its parent is the anchor. */
        r = replay ? enter_host_namespace(p->parent_id, 0, NULL, rep)
                   : enter_host_namespace(p->id, p->devnum, p->target, rep);
        if (r < 0)
                return r;
        c->mountinfo = "/proc/self/mountinfo";
        c->in_host = true;
        if (why) {
                size_t n = strlen(rep->via);
                snprintf(rep->via + n, sizeof rep->via - n, " (not through systemd: %s)", why);
        }
        return 0;
}

/* Reports the result r of a check: > 0 refused for reason, < 0 failed. */
static void report_check(RemountReport *rep, int r, const char *reason) {
        report(rep, r > 0 ? REMOUNT_REFUSED : REMOUNT_FAILED, r > 0 ? 0 : -r, "%s",
               r > 0 ? reason : strerror(-r));
}

/* Step 1's checks on the live system, now that we see what the host sees. Returns 0, or 1
 * with the report filled. */
static int check_idle(Cycle *c) {
        RemountReport *rep = c->rep;
        const RemountPlan *p = c->plan;
        _cleanup_(tablep) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        _cleanup_free_ char *reason = NULL;
        int r;

        if (!t) {
                report(rep, REMOUNT_FAILED, errno, "cannot read the host's mount table: %s",
                       strerror(errno));
                return 1;
        }
        if (!table_find(t, p->id, p->devnum, p->target)) {
                report(rep, REMOUNT_NOTHING, 0, "it is not mounted any more");
                return 1;
        }
        r = remount_check_table(t, p, &reason);
        if (r != 0) {
                report_check(rep, r, reason);
                return 1;
        }
        Users u = { .plan = p };
        struct stat st;
        if (c->in_host && stat("/proc/self/ns/mnt", &st) >= 0)
                u.self_ns = st.st_ino; /* the host's: its table was checked above */
        r = users_add_id(&u, p->id);
        if (r >= 0)
                r = for_each_pid(scan_namespace, &u);
        if (r == 0 && !c->job->skip_scan)
                r = for_each_pid(scan_process, &u);
        free(u.ids);
        free(u.seen_ns);
        if (r != 0) {
                report_check(rep, r, u.busy ?: u.reason);
                if (r > 0 && u.busy)
                        snprintf(rep->detail, sizeof rep->detail, "busy: %s", u.reason);
                free(u.reason);
                free(u.busy);
                return 1;
        }
        c->uninspectable = u.uninspectable;
        return 0;
}

/* Steps 2 and 3 of a cycle: the mount point pinned below the system's parent mount, nothing
 * a stop of the unit would take down, a superblock whose end can be seen. Returns 0, or 1
 * when reported. */
static int cycle_prepare(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountPlan *p = c->plan;
        _cleanup_free_ char *reason = NULL;
        int r;

        /* 2. The mount point pinned; the parent we see must be the system's. */
        r = remount_pin_target(p->target, &c->pin, &reason);
        if (r != 0) {
                report_check(rep, r, reason);
                return 1;
        }
        _cleanup_(tablep) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        struct libmnt_fs *parent = t ? table_find(t, p->parent_id, 0, NULL) : NULL;
        if (!parent || mnt_fs_get_devno(parent) != c->pin.parent_dev) {
                report(rep, REMOUNT_REFUSED, 0,
                       "the directory the daemon finds above %s is not on the filesystem the system mounted "
                       "there (mount %d)",
                       p->target, p->parent_id);
                return 1;
        }
        c->journal->parent_dev = c->pin.parent_dev;
        c->journal->parent_ino = c->pin.parent_ino;

        /* Whatever a stop of the unit would take down with it. */
        if (c->bus) {
                r = remount_systemd_check_stop(c->bus, c->journal->unit, &reason, &c->targets);
                if (r != 0) {
                        report_check(rep, r, reason);
                        return 1;
                }
        }

        /* 3. The superblock's end can be seen; we can mount it again ourselves. */
        r = superblock_setup(c, &reason);
        if (r == 0 && !c->bus)
                r = device_check_mountable(c, &reason);
        if (r != 0) {
                report_check(rep, r, reason);
                return 1;
        }
        return 0;
}

/* Step 5 of a cycle: unmount, then mount again whatever happened, saying how it came back. */
static void cycle_unmount_mount(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountPlan *p = c->plan;
        _cleanup_free_ char *why = NULL;
        int r;

        r = save_stage(c, REMOUNT_STAGE_UNMOUNTING);
        if (r < 0) {
                report(rep, REMOUNT_FAILED, -r, "cannot write the journal %s: %s", c->job->journal_path,
                       strerror(-r));
                return;
        }
        r = do_unmount(c, &why);
        if (r == -EINPROGRESS) {
                /* The journal says "unmounting": the replays wait for systemd and act on what it did. */
                report(rep, REMOUNT_UNMOUNTED, ETIMEDOUT,
                       "systemd's unmount of %s is still at work (%s): mounting it back once it ends",
                       c->journal->unit, why ?: "its job did not end in time");
                return;
        }
        if (r < 0 && mountinfo_has(c->mountinfo, p->id, p->devnum, p->target)) {
                (void) save_stage(c, REMOUNT_STAGE_PREPARED); /* nothing was touched */
                if (c->bus)
                        restart_targets(c);
                report(rep, REMOUNT_BUSY, -r, "%s: %s%s",
                       c->bus ? "systemd could not unmount it" : "the unmount failed", why ?: strerror(-r),
                       c->uninspectable > 0 ? " (some processes could not be inspected)" : "");
                return;
        }
        r = superblock_gone(c);
        pause_at(c, "after-umount");
        if (r <= 0) {
                _cleanup_free_ char *before =
                        r == 0 ? strdup("the superblock outlived the unmount (something else holds the "
                                        "device)")
                               : strdup_printf("cannot tell whether its superblock went away (%s)",
                                               strerror(-r));
                mount_back(c, before ?: "out of memory");
                if (rep->outcome == REMOUNT_DONE || rep->outcome == REMOUNT_RESTORED) {
                        /* Mounted again, but with the superblock (and state) it had, or unknown. */
                        rep->outcome = REMOUNT_DIFFERENT;
                        rep->effective = c->journal->old_flag;
                }
        } else
                mount_back(c, NULL);
        if (c->bus)
                restart_targets(c);
        pause_at(c, "after-mount");
}

static void cycle(Cycle *c) {
        if (choose_way(c, false) < 0 || check_idle(c) != 0 || cycle_prepare(c) != 0)
                return;

        /* 4. Last moment to abandon it. */
        sync_target(c);
        pause_at(c, "before-umount");
        if (stop_requested) {
                report(c->rep, REMOUNT_REFUSED, EINTR, "the daemon is stopping");
                return;
        }
        block_stop_signals();

        /* 5. Unmount and mount again. */
        cycle_unmount_mount(c);
}

/* The replay of a journal at stage prepared: nothing was touched, so only the system's table
 * is read, from wherever we are. */
static void replay_prepared(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountPlan *p = c->plan;

        c->mountinfo = "/proc/1/mountinfo";
        _cleanup_(tablep) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        struct libmnt_fs *fs = t ? table_top(t, p->target) : NULL;
        if (fs && is_ours(p, fs)) {
                rep->new_id = mnt_fs_get_id(fs);
                rep->effective = c->journal->old_flag;
                report(rep, REMOUNT_FAILED, 0,
                       "the cycle was interrupted (at stage prepared) before the unmount: it is "
                       "mounted as "
                       "before");
        } else
                report(rep, REMOUNT_NOTHING, 0,
                       "it is not mounted, but the interrupted cycle had not unmounted it (someone "
                       "else "
                       "did, or it was never mounted there); not mounting it");
}

/* The replay found fs, the filesystem of the journal, mounted on its mount point: never
 * unmounted by the cycle, or mounted again (by it, or by someone). Says which and with which
 * state. */
static void replay_found_mounted(Cycle *c, struct libmnt_fs *fs) {
        RemountReport *rep = c->rep;
        RemountJournal *j = c->journal;
        struct stat st;
        bool same_sb;

        superblock_dir(c->plan, c->sb_dir, sizeof c->sb_dir);
        if (j->sb_ino != 0 && c->sb_dir[0])
                same_sb = stat(c->sb_dir, &st) >= 0 && (uint64_t) st.st_ino == j->sb_ino;
        else
                same_sb = j->stage <= REMOUNT_STAGE_UNMOUNTING;
        rep->new_id = mnt_fs_get_id(fs);
        rep->effective = same_sb ? j->old_flag : remount_journal_mount_flag(j);
        if (!same_sb && !j->identified) {
                /* An earlier version's journal: whose filesystem this is, it cannot tell. */
                rep->effective = -1;
                report(rep, REMOUNT_NOTHING, 0,
                       "it is mounted again (the journal, of an earlier version, cannot tell by whom or "
                       "with which state: it is taken from the flag now)");
        } else if (same_sb)
                report(rep, REMOUNT_FAILED, 0,
                       "the cycle was interrupted (at stage %s) before the unmount: it is mounted "
                       "as "
                       "before",
                       remount_stage_to_string(j->stage));
        else
                report(rep, rep->effective == j->new_flag ? REMOUNT_DONE : REMOUNT_RESTORED, 0,
                       "the interrupted cycle (at stage %s) had mounted it again, with the %s state",
                       remount_stage_to_string(j->stage), rep->effective == j->new_flag ? "new" : "old");
}

/* Where the replay mounts it: the journal's directory, at the same path, and (without
 * systemd) a device it may mount. Returns 0, or 1 when reported. */
static int replay_check_target(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountJournal *j = c->journal;
        RemountPlan *p = c->plan;
        _cleanup_free_ char *reason = NULL;
        int r;

        r = remount_pin_target(p->target, &c->pin, &reason);
        if (r == 0 && (c->pin.parent_dev != j->parent_dev || c->pin.parent_ino != j->parent_ino)) {
                r = 1;
                reason = strdup_printf("the path %s leads to another directory than before the unmount (its "
                                       "parent was renamed or replaced)",
                                       p->target);
        }
        if (r != 0) {
                rep->give_up = r > 0;
                report(rep, REMOUNT_UNMOUNTED, r > 0 ? ENOTDIR : -r, "not mounting it again: %s%s",
                       r > 0 ? reason ?: "out of memory" : strerror(-r), r > 0 ? "; not retrying" : "");
                return 1;
        }
        if (!c->bus) {
                r = device_check_mountable(c, &reason);
                if (r != 0) {
                        report(rep, REMOUNT_UNMOUNTED, r > 0 ? EPERM : -r, "%s",
                               r > 0 ? reason : strerror(-r));
                        return 1;
                }
        }
        return 0;
}

/* The replay of a journal: the filesystem is mounted back as it says. */
static void replay(Cycle *c) {
        RemountReport *rep = c->rep;
        RemountJournal *j = c->journal;
        RemountPlan *p = c->plan;
        _cleanup_(tablep) struct libmnt_table *t = NULL;
        struct libmnt_fs *fs;
        int r;

        rep->stage = j->stage;
        /* Nothing is said of, mounted from, or written to a disk that took the journal's name
         * meanwhile. (A journal of an earlier version does not say which disk it was: it is
         * refused when it would mount, in mount_back().) */
        if (j->identified && check_identity(c) != 0)
                return;
        if (j->stage == REMOUNT_STAGE_PREPARED) {
                replay_prepared(c);
                return;
        }
        if (choose_way(c, true) < 0) {
                rep->outcome = REMOUNT_UNMOUNTED; /* retried */
                return;
        }
        if (c->bus) {
                /* The interrupted cycle's job (systemd carries it out without us) ends first. */
                r = remount_systemd_wait_idle(c->bus, j->unit, job_timeout(c));
                if (r < 0) {
                        report(rep, REMOUNT_UNMOUNTED, -r, "systemd's job for %s did not end: %s", j->unit,
                               strerror(-r));
                        return;
                }
        }
        t = mnt_new_table_from_file(c->mountinfo);
        if (!t) {
                report(rep, REMOUNT_UNMOUNTED, errno, "cannot read the host's mount table: %s",
                       strerror(errno));
                return;
        }
        fs = table_top(t, p->target);
        if (fs && is_ours(p, fs)) {
                replay_found_mounted(c, fs);
                return;
        }
        if (fs) {
                rep->give_up = true;
                report(rep, REMOUNT_UNMOUNTED, EEXIST,
                       "%s from %s is mounted on it now; not mounting it over that", mnt_fs_get_fstype(fs),
                       mnt_fs_get_source(fs) ?: "?");
                return;
        }
        fs = table_find_elsewhere(t, p);
        if (fs) {
                report(rep, REMOUNT_NOTHING, 0, "it is mounted on %s now, not mounting it again",
                       mnt_fs_get_target(fs));
                return;
        }
        if (replay_check_target(c) == 0)
                mount_back(c, "it had been left unmounted");
}

void remount_job_run(const RemountJob *j, RemountReport *rep) {
        _cleanup_close_ int lock = -EBADF;
        Cycle c = {
                .job = j,
                .journal = j->journal,
                .plan = &j->journal->plan,
                .rep = rep,
                .pin = REMOUNT_PIN_NULL,
        };

        *rep = (RemountReport){
                .outcome = REMOUNT_FAILED, .flag_written = -1, .effective = -1, .stage = j->journal->stage
        };
        setup_signals();
        /* One process at a time per mount point: a cycle of a killed daemon may still run. */
        lock = remount_journal_lock(j->journal_path);
        if (lock < 0) {
                if (lock == -EWOULDBLOCK)
                        report(rep, j->replay ? REMOUNT_UNMOUNTED : REMOUNT_FAILED, EWOULDBLOCK,
                               "another process (a cycle of an earlier daemon) is at work on it");
                else
                        report(rep, j->replay ? REMOUNT_UNMOUNTED : REMOUNT_FAILED, -lock,
                               "cannot lock its journal: %s", strerror(-lock));
                return;
        }
        if (j->replay) {
                block_stop_signals(); /* a replay always goes to its end */
                replay(&c);
        } else
                cycle(&c);
        remount_pin_done(&c.pin);
        strv_free(c.targets);
        sd_bus_flush_close_unref(c.bus);
}
