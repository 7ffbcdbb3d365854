/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Step 1: who does the cycle: systemd whenever it is there, else this process, in the host's
 * mount namespace (entered through PID 1, or any process that holds the mount). */
#include <fcntl.h>
#include <sched.h>

#include "remount-cycle-internal.h"
#include "util.h"

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
        if (!remount_mountinfo_has(path, s->anchor, s->devnum, s->target))
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

        if (remount_mountinfo_has("/proc/self/mountinfo", anchor, devnum, target)) {
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
                r = remount_for_each_pid(find_ns_holder, &s);
                if (r <= 0) {
                        cycle_report(
                                rep, REMOUNT_FAILED, e1,
                                "cannot enter the host's mount namespace: /proc/1/ns/mnt: %s, and no other "
                                "process there could be entered",
                                strerror(e1));
                        return -e1;
                }
                fd = r - 1;
                remount_read_comm(s.found, comm, sizeof comm);
                snprintf(rep->via, sizeof rep->via,
                         "the host's mount namespace (that of PID %d (%s), as "
                         "/proc/1/ns/mnt: %s)",
                         (int) s.found, comm, strerror(e1));
        }
        if (setns(fd, CLONE_NEWNS) < 0) {
                r = -errno;
                cycle_report(rep, REMOUNT_FAILED, -r, "cannot enter %s: setns: %s%s", rep->via, strerror(-r),
                             r == -EPERM ? " (the service's sandbox forbids it: install the drop-in "
                                           "remount.conf, see stablepagesd(8), SANDBOX)"
                                         : "");
                return r;
        }
        if (!remount_mountinfo_has("/proc/self/mountinfo", anchor, devnum, target)) {
                cycle_report(rep, REMOUNT_FAILED, ENXIO, "entered %s but the mount is not there", rep->via);
                return -ENXIO;
        }
        return 0;
}

/* Step 1: who does it. systemd whenever it is there; else this process, in the host's mount
 * namespace. Returns 0, or -errno with the report filled. */
int cycle_choose_way(Cycle *c, bool replay) {
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
                        cycle_report(rep, r < 0 ? REMOUNT_FAILED : REMOUNT_REFUSED, r < 0 ? -r : 0, "%s",
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
