/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stall probe's fallback: the wait tracepoint enabled in a private tracefs instance
 * (instances/stablepages-<pid>), its trace_pipe drained and counted per bdi and command.
 * Counts only: no durations. Kernels without CONFIG_HIST_TRIGGERS (Debian's) cannot count in
 * the kernel, so the events are formatted and parsed; each costs a ring buffer record.
 * The instance's stacktrace option records the kernel stack after each event; its first frame
 * outside the wait functions classifies the wait like the BPF probe does (stable pages, data
 * integrity, other). */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "log.h"
#include "stall-probe.h"
#include "util.h"

#define TRACEFS_MAGIC_NUMBER 0x74726163
#define INSTANCE_PREFIX "stablepages-"
#define BUFFER_SIZE_KB "256"
#define MAX_COMMS_PER_BDI 1024

typedef struct TracefsComm {
        char comm[STALL_BPF_COMM_LEN];
        uint64_t count;
} TracefsComm;

typedef struct TracefsPending {
        char key[64]; /* "comm-pid [cpu]": matches the event to its "<stack trace>" entry */
        char bdi[STALL_BPF_BDI_LEN];
        char comm[STALL_BPF_COMM_LEN];
        bool in_stack; /* its stack is being read */
} TracefsPending;

#define MAX_PENDING 64

typedef struct TracefsBdi {
        char bdi[STALL_BPF_BDI_LEN];
        uint64_t count;
        uint64_t sync_count;
        uint64_t other_count;
        TracefsComm *comms;
        size_t n_comms;
        uint64_t other; /* waits by commands beyond MAX_COMMS_PER_BDI */
} TracefsBdi;

struct StallTracefs {
        char *instance; /* absolute path of our instance directory */
        char *enable;   /* its events/writeback/<event>/enable */
        const char *event;
        int pipe_fd;
        char partial[512];
        size_t partial_len;
        TracefsBdi *bdis;
        size_t n_bdis;
        uint64_t lost;
        bool classified; /* the stacktrace option is on */
        TracefsPending pending[MAX_PENDING];
        size_t n_pending;
};

static bool is_tracefs(const char *path) {
        struct statfs sfs;

        return statfs(path, &sfs) == 0 && (unsigned long) sfs.f_type == TRACEFS_MAGIC_NUMBER;
}

int stall_tracefs_find_root(const char **ret, bool *ret_mounted) {
        static const char *const candidates[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

        for (size_t i = 0; i < ELEMENTSOF(candidates); i++) {
                _cleanup_free_ char *events = path_join(candidates[i], "events");

                if (!events)
                        return -ENOMEM;
                if (is_tracefs(candidates[i]) && access(events, F_OK) == 0) {
                        *ret = candidates[i];
                        if (ret_mounted)
                                *ret_mounted = false;
                        return 0;
                }
        }

        if (mount("tracefs", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return -errno;
        *ret = "/sys/kernel/tracing";
        if (ret_mounted)
                *ret_mounted = true;
        return 0;
}

static int write_string(const char *path, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        size_t n = strlen(value);
        ssize_t k;

        fd = open(path, O_WRONLY | O_CLOEXEC | O_TRUNC);
        if (fd < 0)
                return -errno;
        k = write(fd, value, n);
        if (k < 0)
                return -errno;
        return (size_t) k == n ? 0 : -EIO;
}

/* Disables what we enabled and removes the instance directory. */
static int instance_remove(const char *instance, const char *enable) {
        if (enable)
                (void) write_string(enable, "0");
        if (rmdir(instance) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

/* Removes instances left by stall probes whose process is gone. */
static void remove_stale_instances(const char *root) {
        _cleanup_free_ char *dir = path_join(root, "instances");
        DIR *d;
        struct dirent *de;

        if (!dir || !(d = opendir(dir)))
                return;
        while ((de = readdir(d))) {
                long long pid;
                _cleanup_free_ char *path = NULL;
                int r;

                if (!startswith(de->d_name, INSTANCE_PREFIX))
                        continue;
                if (parse_int_range(de->d_name + strlen(INSTANCE_PREFIX), 1, INT32_MAX, &pid) < 0)
                        continue;
                if (pid != getpid() && (kill((pid_t) pid, 0) == 0 || errno != ESRCH))
                        continue;
                path = path_join(dir, de->d_name);
                if (!path)
                        continue;
                /* rmdir of an instance disables its events itself. */
                r = instance_remove(path, NULL);
                if (r < 0)
                        log_debug_errno(r, "Could not remove stale tracefs instance %s: %m", path);
                else
                        log_debug("Removed stale tracefs instance %s.", path);
        }
        closedir(d);
}

/* The wait tracepoint of this kernel under root in *ret, or NULL when it has none. Returns 0 or
 * -ENOMEM. */
static int find_event(const char *root, const char **ret) {
        static const char *const events[] = { "folio_wait_writeback", "wait_on_page_writeback" };

        *ret = NULL;
        for (size_t i = 0; i < ELEMENTSOF(events) && !*ret; i++) {
                _cleanup_free_ char *e = strdup_printf("%s/events/writeback/%s", root, events[i]);
                if (!e)
                        return -ENOMEM;
                if (access(e, F_OK) == 0)
                        *ret = events[i];
        }
        return 0;
}

/* Sizes the instance's buffer and turns its stack traces on (t->classified); either failing is
 * only logged. Returns 0 or -ENOMEM. */
static int instance_configure(StallTracefs *t) {
        _cleanup_free_ char *path = NULL;
        int r;

        path = path_join(t->instance, "buffer_size_kb");
        if (!path)
                return -ENOMEM;
        r = write_string(path, BUFFER_SIZE_KB);
        if (r < 0)
                log_debug_errno(r, "Could not size %s, keeping its default: %m", path);
        free(path);

        path = path_join(t->instance, "options/stacktrace");
        if (!path)
                return -ENOMEM;
        r = write_string(path, "1");
        if (r < 0)
                log_debug_errno(r, "Could not enable %s, waits will not be classified: %m", path);
        t->classified = r >= 0;
        return 0;
}

/* Opens the instance's trace_pipe (t->pipe_fd) and enables the event in it. Returns 0, -ENOMEM, or
 * -errno with *ret_reason. */
static int instance_start(StallTracefs *t, char **ret_reason) {
        _cleanup_free_ char *path = path_join(t->instance, "trace_pipe");
        int r;

        if (!path)
                return -ENOMEM;
        t->pipe_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (t->pipe_fd < 0) {
                r = -errno;
                *ret_reason = strdup_printf("cannot open %s: %s", path, strerror(-r));
                return r;
        }

        r = write_string(t->enable, "1");
        if (r < 0) {
                *ret_reason = strdup_printf("cannot enable %s: %s", t->enable, strerror(-r));
                return r;
        }
        return 0;
}

int stall_tracefs_new(const char *root, StallTracefs **ret, char **ret_reason) {
        StallTracefs *t;
        int r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->pipe_fd = -EBADF;

        r = find_event(root, &t->event);
        if (r < 0)
                goto fail;
        if (!t->event) {
                *ret_reason = strdup_printf("no tracepoint writeback:folio_wait_writeback or "
                                            "writeback:wait_on_page_writeback in %s/events",
                                            root);
                stall_tracefs_free(t);
                return -ENOENT;
        }

        remove_stale_instances(root);

        t->instance = strdup_printf("%s/instances/" INSTANCE_PREFIX "%d", root, (int) getpid());
        t->enable = strdup_printf("%s/instances/" INSTANCE_PREFIX "%d/events/writeback/%s/enable", root,
                                  (int) getpid(), t->event);
        if (!t->instance || !t->enable) {
                r = -ENOMEM;
                goto fail;
        }
        if (mkdir(t->instance, 0700) < 0) {
                r = -errno;
                *ret_reason =
                        strdup_printf("cannot create tracefs instance %s: %s", t->instance, strerror(-r));
                t->instance = mfree(t->instance); /* not ours: do not remove it */
                goto fail;
        }

        r = instance_configure(t);
        if (r >= 0)
                r = instance_start(t, ret_reason);
        if (r < 0)
                goto fail;

        *ret = t;
        return 0;
fail:
        stall_tracefs_free(t);
        return r;
}

StallTracefs *stall_tracefs_free(StallTracefs *t) {
        if (!t)
                return NULL;
        if (t->pipe_fd >= 0)
                close(t->pipe_fd);
        if (t->instance) {
                int r = instance_remove(t->instance, t->enable);
                if (r < 0)
                        log_warning_errno(r, "Could not remove tracefs instance %s: %m", t->instance);
        }
        for (size_t i = 0; i < t->n_bdis; i++)
                free(t->bdis[i].comms);
        free(t->bdis);
        free(t->instance);
        free(t->enable);
        return mfree(t);
}

const char *stall_tracefs_event(StallTracefs *t) {
        return t->event;
}

bool stall_tracefs_classified(StallTracefs *t) {
        return t->classified;
}

uint64_t stall_tracefs_lost(StallTracefs *t) {
        return t->lost;
}

static int account(StallTracefs *t, const char *bdi, const char *comm, unsigned kind) {
        TracefsBdi *b = NULL;

        for (size_t i = 0; i < t->n_bdis && !b; i++)
                if (strneq(t->bdis[i].bdi, bdi, STALL_BPF_BDI_LEN))
                        b = &t->bdis[i];
        if (!b) {
                TracefsBdi *l = reallocarray(t->bdis, t->n_bdis + 1, sizeof(*l));
                if (!l)
                        return -ENOMEM;
                t->bdis = l;
                b = &t->bdis[t->n_bdis++];
                *b = (TracefsBdi){};
                memcpy(b->bdi, bdi, STALL_BPF_BDI_LEN);
        }
        if (kind == STALL_KIND_SYNC) {
                b->sync_count++;
                return 0;
        }
        if (kind == STALL_KIND_OTHER) {
                b->other_count++;
                return 0;
        }
        b->count++;

        for (size_t i = 0; i < b->n_comms; i++)
                if (strneq(b->comms[i].comm, comm, STALL_BPF_COMM_LEN)) {
                        b->comms[i].count++;
                        return 0;
                }
        if (b->n_comms >= MAX_COMMS_PER_BDI) {
                b->other++;
                return 0;
        }
        TracefsComm *c = reallocarray(b->comms, b->n_comms + 1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        b->comms = c;
        memcpy(b->comms[b->n_comms].comm, comm, STALL_BPF_COMM_LEN);
        b->comms[b->n_comms++].count = 1;
        return 0;
}

/* The "comm-pid [cpu]" part of an entry line: what an event and its stack entry share. */
static void entry_key(const char *line, char key[static 64]) {
        const char *b = line, *e;
        size_t n;

        while (*b == ' ')
                b++;
        e = strchr(b, ']');
        n = e ? (size_t) (e + 1 - b) : 0;
        n = MIN(n, (size_t) 63);
        memcpy(key, b, n);
        key[n] = '\0';
}

static int pending_resolve(StallTracefs *t, size_t i, unsigned kind) {
        TracefsPending p = t->pending[i];

        memmove(t->pending + i, t->pending + i + 1, (t->n_pending - i - 1) * sizeof(t->pending[0]));
        t->n_pending--;
        return account(t, p.bdi, p.comm, kind);
}

static bool is_tracing_frame(const char *symbol) {
        return startswith(symbol, "trace_event_raw_event_") || startswith(symbol, "perf_trace_") ||
               startswith(symbol, "__traceiter_") || startswith(symbol, "__trace_");
}

static int handle_line(StallTracefs *t, const char *line) {
        char comm[STALL_BPF_COMM_LEN], bdi[STALL_BPF_BDI_LEN];
        const char *symbol = NULL;
        uint64_t lost = 0;
        int r;

        switch (stall_parse_trace_line(line, comm, bdi, &lost, &symbol)) {
        case STALL_TRACE_EVENT:
                if (!t->classified)
                        return account(t, bdi, comm, STALL_KIND_STABLE);
                if (t->n_pending >= MAX_PENDING) {
                        r = pending_resolve(t, 0, STALL_KIND_STABLE); /* its stack never came */
                        if (r < 0)
                                return r;
                }
                t->pending[t->n_pending] = (TracefsPending){};
                entry_key(line, t->pending[t->n_pending].key);
                memcpy(t->pending[t->n_pending].bdi, bdi, sizeof(bdi));
                memcpy(t->pending[t->n_pending].comm, comm, sizeof(comm));
                t->n_pending++;
                return 0;
        case STALL_TRACE_LOST:
                t->lost += lost;
                return 0;
        case STALL_TRACE_FRAME: /* it belongs to the pending event whose stack is being read */
                for (size_t i = 0; i < t->n_pending; i++) {
                        unsigned kind;

                        if (!t->pending[i].in_stack)
                                continue;
                        if (is_tracing_frame(symbol))
                                return 0;
                        kind = stall_classify_caller(symbol);
                        if (kind == STALL_KIND_SKIP)
                                return 0;
                        return pending_resolve(t, i, kind);
                }
                return 0;
        default: /* STALL_TRACE_OTHER: the header of a stack? */
                if (strstr(line, ": <stack trace>")) {
                        char key[64];
                        bool found = false;

                        entry_key(line, key);
                        for (size_t i = 0; i < t->n_pending; i++) {
                                if (t->pending[i].in_stack) {
                                        /* the previous stack ended unclassified */
                                        r = pending_resolve(t, i, STALL_KIND_STABLE);
                                        if (r < 0)
                                                return r;
                                        i--;
                                        continue;
                                }
                                if (!found && streq(t->pending[i].key, key)) {
                                        t->pending[i].in_stack = true;
                                        found = true;
                                }
                        }
                }
                return 0;
        }
}

int stall_tracefs_poll(StallTracefs *t) {
        char buf[16384];

        for (;;) {
                ssize_t n = read(t->pipe_fd, buf, sizeof(buf));
                char *p, *nl;

                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        return -errno;
                }
                if (n == 0)
                        return 0;

                p = buf;
                while ((nl = memchr(p, '\n', buf + n - p))) {
                        *nl = '\0';
                        if (t->partial_len > 0) {
                                size_t k = MIN((size_t) (nl - p), sizeof(t->partial) - 1 - t->partial_len);
                                memcpy(t->partial + t->partial_len, p, k);
                                t->partial[t->partial_len + k] = '\0';
                                t->partial_len = 0;
                                if (handle_line(t, t->partial) < 0)
                                        return -ENOMEM;
                        } else if (handle_line(t, p) < 0)
                                return -ENOMEM;
                        p = nl + 1;
                }
                if (p < buf + n) {
                        size_t k = MIN((size_t) (buf + n - p), sizeof(t->partial) - 1 - t->partial_len);
                        memcpy(t->partial + t->partial_len, p, k);
                        t->partial_len += k;
                }
        }
}

int stall_tracefs_list(StallTracefs *t, StallStats **ret, size_t *ret_n) {
        StallStats *list;
        size_t n = 0;
        int r;

        r = stall_tracefs_poll(t);
        if (r < 0)
                return r;

        list = calloc(MAX(t->n_bdis, (size_t) 1), sizeof(*list));
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_bdis; i++) {
                TracefsBdi *b = &t->bdis[i];
                StallStats *s = &list[n];

                if (b->count + b->sync_count + b->other_count == 0)
                        continue;
                memcpy(s->bdi, b->bdi, sizeof(s->bdi));
                s->bdi[sizeof(s->bdi) - 1] = '\0';
                (void) stall_parse_bdi_name(s->bdi, &s->devnum);
                s->has_durations = false;
                s->classified = t->classified;
                s->count = b->count;
                s->sync_count = b->sync_count;
                s->other_count = b->other_count;
                for (size_t j = 0; j < b->n_comms; j++)
                        stall_stats_add_comm(s, b->comms[j].comm, b->comms[j].count);
                n++;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

void stall_tracefs_reset(StallTracefs *t, const char *bdi) {
        for (size_t i = 0; i < t->n_bdis; i++) {
                TracefsBdi *b = &t->bdis[i];

                if (bdi && !strneq(b->bdi, bdi, STALL_BPF_BDI_LEN))
                        continue;
                b->count = 0;
                b->sync_count = 0;
                b->other_count = 0;
                b->other = 0;
                b->comms = mfree(b->comms);
                b->n_comms = 0;
        }
}
