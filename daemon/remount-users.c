/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Step 1's checks on the live system: the mount is there, no copy of it in another mount
 * namespace an unmount would not reach, no process that uses it. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "remount-cycle-internal.h"
#include "util.h"

void remount_read_comm(pid_t pid, char *buf, size_t size) {
        char path[64];
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(buf, size, "?");
        snprintf(path, sizeof path, "/proc/%d/comm", (int) pid);
        f = fopen(path, "re");
        if (f && fgets(buf, (int) size, f))
                strstrip_trailing(buf);
}

/* Calls f(pid) for every process; stops at the first non-zero return, which it returns. */
int remount_for_each_pid(int (*f)(pid_t pid, void *userdata), void *userdata) {
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
        _cleanup_(remount_table_unrefp) struct libmnt_table *t = NULL;
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
        if (remount_table_find(t, p->id, p->devnum, p->target))
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
                remount_read_comm(pid, comm, sizeof comm);
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

        remount_read_comm(pid, comm, sizeof comm);
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

/* Step 1's checks on the live system, now that we see what the host sees. Returns 0, or 1
 * with the report filled. */
int cycle_check_idle(Cycle *c) {
        RemountReport *rep = c->rep;
        const RemountPlan *p = c->plan;
        _cleanup_(remount_table_unrefp) struct libmnt_table *t = mnt_new_table_from_file(c->mountinfo);
        _cleanup_free_ char *reason = NULL;
        int r;

        if (!t) {
                cycle_report(rep, REMOUNT_FAILED, errno, "cannot read the host's mount table: %s",
                             strerror(errno));
                return 1;
        }
        if (!remount_table_find(t, p->id, p->devnum, p->target)) {
                cycle_report(rep, REMOUNT_NOTHING, 0, "it is not mounted any more");
                return 1;
        }
        r = remount_check_table(t, p, &reason);
        if (r != 0) {
                cycle_report_check(rep, r, reason);
                return 1;
        }
        Users u = { .plan = p };
        struct stat st;
        if (c->in_host && stat("/proc/self/ns/mnt", &st) >= 0)
                u.self_ns = st.st_ino; /* the host's: its table was checked above */
        r = users_add_id(&u, p->id);
        if (r >= 0)
                r = remount_for_each_pid(scan_namespace, &u);
        if (r == 0 && !c->job->skip_scan)
                r = remount_for_each_pid(scan_process, &u);
        free(u.ids);
        free(u.seen_ns);
        if (r != 0) {
                cycle_report_check(rep, r, u.busy ?: u.reason);
                if (r > 0 && u.busy)
                        snprintf(rep->detail, sizeof rep->detail, "busy: %s", u.reason);
                free(u.reason);
                free(u.busy);
                return 1;
        }
        c->uninspectable = u.uninspectable;
        return 0;
}
