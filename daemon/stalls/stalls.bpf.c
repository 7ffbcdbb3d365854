/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stall observatory's BPF side: how long writers wait for a page under writeback.
 *
 * The tracepoint writeback:folio_wait_writeback (older kernels:
 * writeback:wait_on_page_writeback) fires in the waiting task just before it sleeps on
 * PG_writeback; the wait ends when sched_switch switches that task back in. This is the
 * fallback; where the kernel has BPF trampolines the fentry/fexit programs at the end of this
 * file replace both (no kprobes: their cost; no tp_btf). Both are attached as raw
 * tracepoints: a classic one would format a perf record on every hit before the program could
 * return (on every context switch of the machine, for sched_switch), and attaching a classic
 * one needs perf_event_open(2), which Debian's kernels (perf_event_paranoid=3) refuse without
 * CAP_SYS_ADMIN. The raw wait tracepoint hands over the folio and its mapping; the program
 * derives the bdi name the classic tracepoint would print (inode_to_bdi()'s bdi->dev_name,
 * "MAJ:MIN" of the whole disk).
 *
 * Cost model: sched_switch runs on every context switch, so it first reads one global
 * (nr_waiting) and returns when no task is waiting; only then does it read prev's and next's
 * pid and look them up in the `waiting` hash. The wait tracepoint runs only when a task waits.
 *
 * A wait record is
 *   opened  at the tracepoint (a second hit of the same task before it slept restarts it),
 *   armed   when the task is switched out, not preempted, in TASK_UNINTERRUPTIBLE (D:
 *           io_schedule()),
 *   closed  when it is switched in again: duration = switch-in time - tracepoint time.
 * A task preempted on its way to sleep keeps its record. A record whose task switches out in
 * any other state, or sleeps in D more than STALE_NS of run time after the tracepoint, belongs
 * to a tracepoint hit that did not sleep (the writeback ended between the check and the
 * sleep): it is dropped and counted in `unmatched`.
 *
 * Not every wait is a stable-pages wait: fsync() waits for writeback the same way (in
 * __filemap_fdatawait_range), so do the WB_SYNC_ALL writeback loops, truncation, reclaim and
 * migration. At the tracepoint the program takes a few kernel stack frames (bpf_get_stack, paid
 * only by a waiting task) and classifies the wait by its caller, the first frame after the wait
 * functions, looking each return address up in `callers` (address -> STALL_KIND_*), which user
 * space fills: it names an address it has not seen yet (the `symbolize` program below, or
 * /proc/kallsyms on kernels without it) and classifies the name. A wait with an address not in
 * `callers` yet is recorded as STALL_KIND_PENDING under a hash of its frames, which are kept in
 * `pending_stacks`: user space resolves those frames when it reads the figures, counts the
 * wait under its kind, and from then on the program classifies that path itself. Nothing is
 * read from /proc/kallsyms at start-up. With classify_callers 0 (nothing can name an address)
 * every wait is STALL_KIND_STABLE and user space says the waits are unclassified.
 *
 * The structs are declared locally with preserve_access_index (CO-RE): libbpf relocates the
 * field offsets against the running kernel's BTF, so no vmlinux.h is needed.
 *
 * The kernel recognises only GPL-type strings as GPL-compatible (bpf_probe_read_kernel and
 * bpf_get_stack need one); LGPL-2.1 section 3 allows this file to be used under the GPL. */

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "stalls.h" /* the shared map layout only, under __bpf__ */

char LICENSE[] SEC("license") = "GPL";

#define TASK_UNINTERRUPTIBLE 0x2
#define STALE_NS (10ULL * 1000 * 1000) /* run time between tracepoint and sleep, at most */

#define BDEVFS_MAGIC 0x62646576

struct backing_dev_info {
        char dev_name[64];
} __attribute__((preserve_access_index));

struct super_block {
        unsigned long s_magic;
        unsigned long s_iflags;
        struct backing_dev_info *s_bdi;
} __attribute__((preserve_access_index));

struct inode {
        struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct address_space {
        struct inode *host;
        unsigned long flags;
} __attribute__((preserve_access_index));

struct gendisk {
        struct backing_dev_info *bdi;
} __attribute__((preserve_access_index));

struct block_device {
        struct gendisk *bd_disk;
} __attribute__((preserve_access_index));

struct bdev_inode { /* block/bdev.c: the inode of a block device node's page cache */
        struct block_device bdev;
        struct inode vfs_inode;
} __attribute__((preserve_access_index));

struct task_struct {
        int pid;
        unsigned long nvcsw;
        unsigned long nivcsw;
} __attribute__((preserve_access_index));

struct folio {
        unsigned long flags;
        struct address_space *mapping;
} __attribute__((preserve_access_index));

/* The values are relocated to the running kernel's. */
enum pageflags {
        PG_writeback = 15,
};

/* 6.8+ and backports (Debian 6.1.192 has it): folio_wait_stable() tests it */
enum mapping_flags {
        AS_STABLE_WRITES = 8,
};

#define SB_I_STABLE_WRITES 0x00000008 /* before AS_STABLE_WRITES */

struct task_struct___state { /* 5.14+ */
        unsigned int __state;
} __attribute__((preserve_access_index));

struct task_struct___state_old { /* before 5.14 */
        long state;
} __attribute__((preserve_access_index));

struct waiting {
        __u64 start_ns;   /* tracepoint time */
        __u64 resumed_ns; /* last switch-in while not yet asleep */
        __u32 armed;      /* switched out in D since start */
        __u32 kind;       /* STALL_KIND_* */
        __u32 stack;      /* STALL_KIND_PENDING: the key of its frames in pending_stacks */
        __u32 context;    /* fentry mode: STALL_KIND_SYNC inside __filemap_fdatawait_range, else 0 */
        __u64 nvcsw;      /* fentry mode: the task's voluntary switches at the start */
        char bdi[STALL_BPF_BDI_LEN];
        char comm[STALL_BPF_COMM_LEN];
};

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 4096); /* tasks waiting at once; more are counted in `lost` */
        __type(key, __u32);        /* thread id */
        __type(value, struct waiting);
} waiting SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
        __uint(max_entries, STALL_BPF_MAX_BDIS);
        __type(key, struct stall_bpf_key);
        __type(value, struct stall_bpf_hist);
} hists SEC(".maps");

/* Commands of the stable-pages waits only (the only ones user space lists; with a caller not
 * named yet, STALL_KIND_PENDING, they may be), least recently used first out: a user who cycles
 * command names cannot fill it for everyone else. An LRU map must be preallocated, and a per-CPU
 * one would preallocate a value per CPU for each entry (25 ms of CPU at start-up): one shared
 * counter per entry, added to atomically. */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, STALL_BPF_MAX_COMMS);
        __type(key, struct stall_bpf_comm_key);
        __type(value, __u64);
} comms SEC(".maps");

__u64 nr_waiting = 0;   /* records in `waiting`; 0 makes sched_switch return at once */
__u64 unmatched = 0;    /* tracepoint hits that did not sleep */
__u64 lost = 0;         /* waits not recorded: a map was full */
__u64 lost_comms = 0;   /* stable-pages waits recorded without their command */
__u64 unclassified = 0; /* waits whose stack could not be read: counted as STALL_KIND_STABLE */

const volatile __u32 classify_callers = 0; /* user space can name return addresses */

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, STALL_BPF_MAX_CALLERS);
        __type(key, __u64);   /* a return address */
        __type(value, __u32); /* STALL_KIND_* of the function it lies in */
} callers SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, STALL_BPF_MAX_STACKS);
        __type(key, __u32); /* hash of the frames */
        __type(value, struct stall_bpf_stack);
} pending_stacks SEC(".maps");

/* The kind of the wait whose frames are ips (n bytes of them): STALL_KIND_PENDING (with the
 * frames saved under *ret_stack) when a frame is not in `callers` yet. The stack starts in the
 * program and the raw tracepoint's glue; the caller is the first frame after the wait functions
 * (STALL_KIND_SKIP), so frames before them do not count. */
static __always_inline __u32 classify_frames(struct stall_bpf_stack *st, long n, __u32 *ret_stack) {
        __u32 in_wait = 0, hash = 2166136261u;

        for (__u32 f = 0; f < STALL_BPF_STACK_DEPTH; f++) {
                __u32 *kind;

                if ((long) (f * sizeof(__u64)) >= n)
                        break;
                kind = bpf_map_lookup_elem(&callers, &st->ips[f]);
                if (!kind) {
                        /* Not named yet: keep the frames for user space. */
                        for (__u32 g = 0; g < STALL_BPF_STACK_DEPTH; g++)
                                hash = (hash ^ (__u32) (st->ips[g] ^ (st->ips[g] >> 32))) * 16777619u;
                        hash |= 1; /* 0 is "no stack" */
                        if (bpf_map_update_elem(&pending_stacks, &hash, st, BPF_ANY) < 0)
                                break;
                        *ret_stack = hash;
                        return STALL_KIND_PENDING;
                }
                if (*kind == STALL_KIND_SKIP)
                        in_wait = 1;
                else if (in_wait)
                        return *kind;
        }
        __sync_fetch_and_add(&unclassified, 1);
        return STALL_KIND_STABLE;
}

static __always_inline __u32 classify(void *ctx, __u32 *ret_stack) {
        struct stall_bpf_stack st = {};
        long n;

        if (!classify_callers)
                return STALL_KIND_STABLE;
        n = bpf_get_stack(ctx, st.ips, sizeof(st.ips), 0);
        if (n <= 0) {
                __sync_fetch_and_add(&unclassified, 1);
                return STALL_KIND_STABLE;
        }
        return classify_frames(&st, n, ret_stack);
}

static __always_inline __u32 log2_u64(__u64 v) {
        __u32 r = 0, shift;

        shift = (v > 0xFFFFFFFFULL) << 5;
        v >>= shift;
        r |= shift;
        shift = (v > 0xFFFF) << 4;
        v >>= shift;
        r |= shift;
        shift = (v > 0xFF) << 3;
        v >>= shift;
        r |= shift;
        shift = (v > 0xF) << 2;
        v >>= shift;
        r |= shift;
        shift = (v > 0x3) << 1;
        v >>= shift;
        r |= shift;
        r |= (v >> 1);
        return r;
}

static __always_inline void drop(__u32 pid, __u64 *counter) {
        if (bpf_map_delete_elem(&waiting, &pid) == 0)
                __sync_fetch_and_add(&nr_waiting, -1);
        if (counter)
                __sync_fetch_and_add(counter, 1);
}

/* inode_to_bdi(mapping->host): the block device's own bdi for a block device node's page cache,
 * else the superblock's. NULL when there is no mapping. */
static __always_inline struct backing_dev_info *mapping_bdi(struct address_space *mapping) {
        struct inode *host;
        struct super_block *sb;

        if (!mapping)
                return NULL;
        host = BPF_CORE_READ(mapping, host);
        sb = BPF_CORE_READ(host, i_sb);
        if (BPF_CORE_READ(sb, s_magic) == BDEVFS_MAGIC) {
                struct bdev_inode *bi =
                        (void *) ((char *) host - bpf_core_field_offset(struct bdev_inode, vfs_inode));
                return BPF_CORE_READ(bi, bdev.bd_disk, bdi);
        }
        return BPF_CORE_READ(sb, s_bdi);
}

static __always_inline int wait_start(void *ctx, struct address_space *mapping) {
        __u32 pid = (__u32) bpf_get_current_pid_tgid();
        struct backing_dev_info *bdi = mapping_bdi(mapping);
        struct waiting w = {}, *old;

        w.start_ns = bpf_ktime_get_ns();
        w.resumed_ns = w.start_ns;
        if (bdi)
                bpf_probe_read_kernel_str(w.bdi, sizeof(w.bdi), bdi->dev_name);
        else
                __builtin_memcpy(w.bdi, "(unknown)", sizeof("(unknown)"));
        bpf_get_current_comm(w.comm, sizeof(w.comm));
        w.kind = classify(ctx, &w.stack);

        old = bpf_map_lookup_elem(&waiting, &pid);
        if (old) {
                /* The previous hit never slept: this is a new wait. */
                __builtin_memcpy(old, &w, sizeof(w));
                __sync_fetch_and_add(&unmatched, 1);
                return 0;
        }
        if (bpf_map_update_elem(&waiting, &pid, &w, BPF_NOEXIST) == 0)
                __sync_fetch_and_add(&nr_waiting, 1);
        else
                __sync_fetch_and_add(&lost, 1);
        return 0;
}

/* TP_PROTO(struct folio *folio, struct address_space *mapping) */
SEC("raw_tracepoint/folio_wait_writeback")
int folio_wait_writeback(struct bpf_raw_tracepoint_args *ctx) {
        return wait_start(ctx, (void *) ctx->args[1]);
}

/* Before 5.16: TP_PROTO(struct page *page, struct address_space *mapping) */
SEC("raw_tracepoint/wait_on_page_writeback")
int wait_on_page_writeback(struct bpf_raw_tracepoint_args *ctx) {
        return wait_start(ctx, (void *) ctx->args[1]);
}

/* Adds the wait w (a copy: its record may be gone) that ended at now to hists and comms. */
static __always_inline void wait_end(const struct waiting *w, __u64 now, int preemptible) {
        struct stall_bpf_key bk = {};
        struct stall_bpf_comm_key ck = {};
        struct stall_bpf_hist *h;
        __u64 *c, us, none = 0, slot;

        us = (now - w->start_ns) / 1000;
        __builtin_memcpy(bk.bdi, w->bdi, sizeof(bk.bdi));
        __builtin_memcpy(ck.bdi, w->bdi, sizeof(ck.bdi));
        __builtin_memcpy(ck.comm, w->comm, sizeof(ck.comm));
        bk.kind = w->kind;
        bk.stack = w->stack;
        ck.kind = w->kind;
        ck.stack = w->stack;

        h = bpf_map_lookup_elem(&hists, &bk);
        if (!h) {
                struct stall_bpf_hist zero = {};

                if (bpf_map_update_elem(&hists, &bk, &zero, BPF_NOEXIST) < 0 &&
                    !bpf_map_lookup_elem(&hists, &bk)) {
                        __sync_fetch_and_add(&lost, 1);
                        return;
                }
                h = bpf_map_lookup_elem(&hists, &bk);
                if (!h)
                        return;
        }
        /* Per-CPU values: sched_switch does not nest on one CPU (plain updates), fexit programs
         * run preemptible (atomic adds). */
        slot = us ? log2_u64(us) : 0;
        if (slot >= STALL_BPF_BUCKETS)
                slot = STALL_BPF_BUCKETS - 1;
        /* Hide the value from clang so that it keeps the mask, which is what the verifier needs
         * to see the bound on the register used for the access (32 is a power of 2). */
        asm volatile("" : "+r"(slot));
        slot &= STALL_BPF_BUCKETS - 1;
        if (preemptible) {
                __sync_fetch_and_add(&h->slots[slot], 1);
                __sync_fetch_and_add(&h->count, 1);
                __sync_fetch_and_add(&h->sum_us, us);
        } else {
                h->slots[slot]++;
                h->count++;
                h->sum_us += us;
        }
        if (us > h->max_us)
                h->max_us = us;

        if (ck.kind != STALL_KIND_STABLE && ck.kind != STALL_KIND_PENDING)
                return;
        c = bpf_map_lookup_elem(&comms, &ck);
        if (!c) {
                /* The LRU map makes room; EEXIST: another CPU added the key meanwhile. */
                (void) bpf_map_update_elem(&comms, &ck, &none, BPF_NOEXIST);
                c = bpf_map_lookup_elem(&comms, &ck);
        }
        if (c)
                __sync_fetch_and_add(c, 1);
        else
                __sync_fetch_and_add(&lost_comms, 1); /* counted in hists, but no comm */
}

static __always_inline int switch_common(int preempt, struct task_struct *prev, struct task_struct *next,
                                         unsigned long prev_state) {
        struct waiting *w;
        __u32 pid;
        __u64 now = bpf_ktime_get_ns();

        pid = (__u32) BPF_CORE_READ(prev, pid);
        w = bpf_map_lookup_elem(&waiting, &pid);
        if (w && !w->armed) {
                if (preempt)
                        ; /* preempted on the way to sleep: keep */
                else if ((prev_state & TASK_UNINTERRUPTIBLE) && now - w->resumed_ns <= STALE_NS)
                        w->armed = 1;
                else
                        drop(pid, &unmatched);
        }

        pid = (__u32) BPF_CORE_READ(next, pid);
        w = bpf_map_lookup_elem(&waiting, &pid);
        if (!w)
                return 0;
        if (w->armed) {
                struct waiting done = *w;

                drop(pid, NULL);
                wait_end(&done, now, 0);
        } else
                w->resumed_ns = now;
        return 0;
}

/* 5.18+: TP_PROTO(bool preempt, struct task_struct *prev, struct task_struct *next,
 *                 unsigned int prev_state) */
SEC("raw_tracepoint/sched_switch")
int sched_switch(struct bpf_raw_tracepoint_args *ctx) {
        if (!nr_waiting)
                return 0;
        return switch_common(ctx->args[0], (void *) ctx->args[1], (void *) ctx->args[2],
                             (unsigned int) ctx->args[3]);
}

/* Before 5.18 there is no prev_state argument: read the task's state. */
SEC("raw_tracepoint/sched_switch")
int sched_switch_3args(struct bpf_raw_tracepoint_args *ctx) {
        struct task_struct *prev = (void *) ctx->args[1];
        unsigned long state;

        if (!nr_waiting)
                return 0;
        if (bpf_core_field_exists(((struct task_struct___state *) prev)->__state))
                state = BPF_CORE_READ((struct task_struct___state *) prev, __state);
        else
                state = BPF_CORE_READ((struct task_struct___state_old *) prev, state);
        return switch_common(ctx->args[0], prev, (void *) ctx->args[2], state);
}

/* ---- fentry mode: the wait functions themselves, where BPF trampolines exist (5.5+ with
 * ftrace direct calls, e.g. Debian's 6.1 and 6.12; this replaces every program above but
 * symbolize) ----
 *
 * A wait is the call of folio_wait_writeback() (or its _killable twin, afs' only) on a folio
 * under writeback that sleeps: fentry opens its record, fexit closes it, duration = return time
 * - call time, the time the writer was blocked. A call that did not sleep (the writeback ended
 * first: the task's voluntary context switches did not change) is dropped and counted in
 * `unmatched`. No sched_switch program: a context switch costs nothing.
 *
 * Its kind, without a stack walk on the common paths:
 *   - folio_wait_stable() (every wait that depends on the stable-writes flag, in the sources of
 *     6.1.192 and 6.12.118: write_begin through FGP_STABLE, page_mkwrite,
 *     wait_for_stable_page()) calls folio_wait_writeback() (a tail
 *     call) when the folio's mapping has stable writes; its fentry program makes the same test
 *     and, when the folio is under writeback, leaves this CPU a mark (task, folio, the task's
 *     context switch count): a wait on that folio by that task right after, with no context
 *     switch between (no migration to another CPU's mark), is STALL_KIND_STABLE. The next wait
 *     of the task clears the mark, so a later one (the same task's fsync of the page) never
 *     takes it. No clock read: under a VM's emulated clock (HPET) that is the dearest part;
 *   - inside __filemap_fdatawait_range() (fsync, fdatasync, sync_file_range, msync, sync) the
 *     task's record carries STALL_KIND_SYNC from its fentry to its fexit;
 *   - any other wait (the WB_SYNC_ALL writeback loops, truncation, reclaim, btrfs' own waits, a
 *     mark lost to a migration between the two calls) is classified by its stack as in the
 *     raw-tracepoint mode. */

struct stable_mark {
        __u64 folio;
        __u64 switches; /* the task's nvcsw + nivcsw when marked */
        __u32 pid;
        __u32 pad;
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct stable_mark);
} stable_marks SEC(".maps");

/* The fentry programs' arguments are typed by the kernel's BTF (the verifier knows ctx[0] is a
 * struct folio *), so the flags are one plain load, relocated like a CO-RE read, instead of a
 * bpf_probe_read_kernel() call: this test runs on every call of the wait functions, and most
 * calls do not wait. */
static __always_inline int folio_under_writeback(struct folio *folio) {
        return (folio->flags >> bpf_core_enum_value(enum pageflags, PG_writeback)) & 1;
}

/* folio_mapping(): page cache folios only (not anonymous or movable ones), else NULL. */
static __always_inline struct address_space *folio_file_mapping(struct folio *folio) {
        struct address_space *mapping = BPF_CORE_READ(folio, mapping);

        return (unsigned long) mapping & 3 ? NULL : mapping;
}

/* folio_wait_stable()'s own test: whether it will wait for the folio's writeback. */
static __always_inline int folio_stable_writes(struct folio *folio) {
        struct address_space *mapping = folio_file_mapping(folio);

        if (!mapping)
                return 0;
        if (bpf_core_enum_value_exists(enum mapping_flags, AS_STABLE_WRITES))
                return (BPF_CORE_READ(mapping, flags) >>
                        bpf_core_enum_value(enum mapping_flags, AS_STABLE_WRITES)) &
                       1;
        return (BPF_CORE_READ(mapping, host, i_sb, s_iflags) & SB_I_STABLE_WRITES) != 0;
}

/* Plain loads through the BTF-typed current task (tracing programs only). */
static __always_inline __u64 current_nvcsw(void) {
        return bpf_get_current_task_btf()->nvcsw;
}

static __always_inline __u64 current_switches(void) {
        struct task_struct *t = bpf_get_current_task_btf();

        return t->nvcsw + t->nivcsw;
}

/* The programs' ctx: the traced function's arguments (then its return value, for fexit). */
SEC("fentry/folio_wait_stable")
int stable_enter(__u64 *ctx) {
        struct folio *folio = (void *) ctx[0];
        struct stable_mark *m;
        __u32 zero = 0;

        if (!folio_under_writeback(folio) || !folio_stable_writes(folio))
                return 0;
        m = bpf_map_lookup_elem(&stable_marks, &zero);
        if (m) {
                m->folio = (__u64) folio;
                m->switches = current_switches();
                m->pid = (__u32) bpf_get_current_pid_tgid();
        }
        return 0;
}

static __always_inline int fentry_wait_start(void *ctx, struct folio *folio) {
        __u32 pid, zero = 0;
        struct waiting w = {}, *old;
        struct stable_mark *m;
        struct backing_dev_info *bdi;
        __u64 now;

        if (!folio_under_writeback(folio))
                return 0;
        pid = (__u32) bpf_get_current_pid_tgid();
        now = bpf_ktime_get_ns();
        old = bpf_map_lookup_elem(&waiting, &pid);
        m = bpf_map_lookup_elem(&stable_marks, &zero);
        if (m && m->pid == pid && m->folio == (__u64) folio && m->switches == current_switches())
                w.kind = STALL_KIND_STABLE;
        else if (old && old->context)
                w.kind = old->context;
        else
                w.kind = classify(ctx, &w.stack);
        if (m && m->pid == pid)
                m->folio = 0; /* a mark is for the call right after it only */
        w.context = old ? old->context : 0;
        w.start_ns = now;
        w.nvcsw = current_nvcsw();
        bdi = mapping_bdi(folio_file_mapping(folio));
        if (bdi)
                bpf_probe_read_kernel_str(w.bdi, sizeof(w.bdi), bdi->dev_name);
        else
                __builtin_memcpy(w.bdi, "(unknown)", sizeof("(unknown)"));
        bpf_get_current_comm(w.comm, sizeof(w.comm));

        if (old) {
                if (old->start_ns) /* its fexit never ran (a recursion miss) */
                        __sync_fetch_and_add(&unmatched, 1);
                __builtin_memcpy(old, &w, sizeof(w));
                return 0;
        }
        if (bpf_map_update_elem(&waiting, &pid, &w, BPF_NOEXIST) == 0)
                __sync_fetch_and_add(&nr_waiting, 1);
        else
                __sync_fetch_and_add(&lost, 1);
        return 0;
}

static __always_inline int fexit_wait_end(void) {
        __u32 pid;
        struct waiting *w, done;
        __u64 now;

        /* Most calls found their folio not under writeback (ext4 calls for every folio it writes
         * back) and added no record: with none in the map, no lookup. */
        if (!nr_waiting)
                return 0;
        pid = (__u32) bpf_get_current_pid_tgid();
        now = bpf_ktime_get_ns();
        w = bpf_map_lookup_elem(&waiting, &pid);
        if (!w || !w->start_ns)
                return 0; /* not under writeback at the call, or attached meanwhile */
        done = *w;
        if (w->context)
                w->start_ns = 0; /* back to the fdatawait context */
        else
                drop(pid, NULL);
        if (current_nvcsw() == done.nvcsw) {
                __sync_fetch_and_add(&unmatched, 1); /* it never slept */
                return 0;
        }
        wait_end(&done, now, 1);
        return 0;
}

SEC("fentry/folio_wait_writeback")
int writeback_enter(__u64 *ctx) {
        return fentry_wait_start(ctx, (void *) ctx[0]);
}

SEC("fexit/folio_wait_writeback")
int writeback_exit(__u64 *ctx) {
        (void) ctx;
        return fexit_wait_end();
}

SEC("fentry/folio_wait_writeback_killable")
int writeback_killable_enter(__u64 *ctx) {
        return fentry_wait_start(ctx, (void *) ctx[0]);
}

SEC("fexit/folio_wait_writeback_killable")
int writeback_killable_exit(__u64 *ctx) {
        (void) ctx;
        return fexit_wait_end();
}

SEC("fentry/__filemap_fdatawait_range")
int fdatawait_enter(__u64 *ctx) {
        __u32 pid = (__u32) bpf_get_current_pid_tgid();
        struct waiting w = { .context = STALL_KIND_SYNC }, *old;

        (void) ctx;
        old = bpf_map_lookup_elem(&waiting, &pid);
        if (old)
                old->context = STALL_KIND_SYNC;
        else if (bpf_map_update_elem(&waiting, &pid, &w, BPF_NOEXIST) == 0)
                __sync_fetch_and_add(&nr_waiting, 1);
        /* else the map is full: its waits are classified by their stacks */
        return 0;
}

SEC("fexit/__filemap_fdatawait_range")
int fdatawait_exit(__u64 *ctx) {
        (void) ctx;
        drop((__u32) bpf_get_current_pid_tgid(), NULL);
        return 0;
}

/* For user space, run with BPF_PROG_TEST_RUN: names the kernel text address sym_ip as
 * "function+0xoffset/0xsize [module]" in sym_name (the %pB of the kernel's backtraces: a return
 * address is looked up one byte before it). sym_len is what bpf_snprintf() returned. */
__u64 sym_ip = 0;
long sym_len = 0;
char sym_name[STALL_BPF_SYMBOL_LEN] = {};

SEC("syscall")
int symbolize(void *ctx) {
        __u64 args[1] = { sym_ip };

        (void) ctx;
        sym_len = bpf_snprintf(sym_name, sizeof(sym_name), "%pB", args, sizeof(args));
        return 0;
}
