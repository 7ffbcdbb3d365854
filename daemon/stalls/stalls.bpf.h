/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the two BPF objects of the stall probe share (stalls-tp.bpf.c, stalls-fentry.bpf.c: one
 * per mode, each loaded whole by its light skeleton): the kernel structs they read, the record
 * of a wait in progress, the maps user space reads, the classification of a wait by its caller,
 * the histogram update at its end, and the symbolize program.
 *
 * A wait is recorded for its task when it starts (in each mode's own way) and added to `hists`
 * (per disk and kind: a log2 histogram of durations) and, for stable-pages waits, `comms` when it
 * ends.
 *
 * Not every wait is a stable-pages wait: fsync() waits for writeback the same way (in
 * __filemap_fdatawait_range), so do the WB_SYNC_ALL writeback loops, truncation, reclaim and
 * migration. Where a mode cannot tell by cheaper means (the raw-tracepoint mode's cheaper means
 * are stack slots learned from an earlier walk, stalls-tp.bpf.c), the program takes a few kernel
 * stack frames (bpf_get_stack, paid only by a waiting task) and classifies the wait by its caller,
 * the first frame after the wait functions, looking each return address up in `callers`
 * (address -> STALL_KIND_*), which user space fills: it names an address it has not seen yet
 * (the `symbolize` program below) and classifies the name. A wait with an address not in
 * `callers` yet is recorded as STALL_KIND_PENDING under a hash of its frames, which are kept in
 * `pending_stacks`: user space resolves those frames when it reads the figures, counts the
 * wait under its kind, and from then on the program classifies that path itself. Nothing is
 * read from /proc/kallsyms at start-up. With classify_callers 0 (nothing can name an address)
 * every wait is STALL_KIND_STABLE and user space says the waits are unclassified.
 *
 * The structs are declared locally with preserve_access_index (CO-RE): the kernel relocates
 * the field offsets against its own BTF when the light skeleton's loader loads the programs
 * (5.17+), so neither a vmlinux.h nor a parse of /sys/kernel/btf/vmlinux in user space is
 * needed.
 *
 * The kernel recognises only GPL-type strings as GPL-compatible (bpf_probe_read_kernel and
 * bpf_get_stack need one); LGPL-2.1 section 3 allows these files to be used under the GPL. */
#pragma once

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "stalls.h" /* the shared map layout only, under __bpf__ */

char LICENSE[] SEC("license") = "GPL";

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

struct folio {
        unsigned long flags;
        struct address_space *mapping;
} __attribute__((preserve_access_index));

/* 6.18+: the flags are a memdesc_flags_t, a struct around the word. */
struct folio___memdesc {
        struct {
                unsigned long f;
        } flags;
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

struct task_struct {
        int pid;
        unsigned long nvcsw;
        unsigned long nivcsw;
} __attribute__((preserve_access_index));

struct waiting {
        __u64 start_ns;   /* tracepoint time */
        __u64 resumed_ns; /* raw-tracepoint mode: last switch-in while not yet asleep */
        __u32 armed;      /* raw-tracepoint mode: switched out in D since start */
        __u32 kind;       /* STALL_KIND_* */
        __u32 stack;      /* STALL_KIND_PENDING: the key of its frames in pending_stacks */
        __u64 folio;      /* fentry mode: the folio waited for */
        __u64 nvcsw;      /* fentry mode: the task's voluntary switches at the start */
        char bdi[STALL_BPF_BDI_LEN];
        char comm[STALL_BPF_COMM_LEN];
};

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

struct stall_bpf_globals globals = {};

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
 * (STALL_KIND_SKIP), so frames before them do not count. *ret_caller is the caller's index in
 * st->ips when `callers` named it, else -1. */
static __always_inline __u32 classify_frames(struct stall_bpf_stack *st, long n, __u32 *ret_stack,
                                             __s32 *ret_caller) {
        __u32 in_wait = 0, hash = 2166136261u;

        *ret_caller = -1;
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
                else if (in_wait) {
                        *ret_caller = f;
                        return *kind;
                }
        }
        __sync_fetch_and_add(&globals.unclassified, 1);
        return STALL_KIND_STABLE;
}

/* The kind of the wait the program ctx is called for, by a walk of the kernel stack into st (as
 * classify_frames(), which sets *ret_caller). */
static __always_inline __u32 classify(void *ctx, struct stall_bpf_stack *st, __u32 *ret_stack,
                                      __s32 *ret_caller) {
        long n;

        *ret_caller = -1;
        if (!classify_callers)
                return STALL_KIND_STABLE;
        n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), 0);
        if (n <= 0) {
                __sync_fetch_and_add(&globals.unclassified, 1);
                return STALL_KIND_STABLE;
        }
        return classify_frames(st, n, ret_stack, ret_caller);
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

/* Fills in the wait w the bdi name of mapping's disk and the waiting task's command. */
static __always_inline void wait_describe(struct waiting *w, struct address_space *mapping) {
        struct backing_dev_info *bdi = mapping_bdi(mapping);

        if (bdi)
                bpf_probe_read_kernel_str(w->bdi, sizeof(w->bdi), bdi->dev_name);
        else
                __builtin_memcpy(w->bdi, "(unknown)", sizeof("(unknown)"));
        bpf_get_current_comm(w->comm, sizeof(w->comm));
}

/* The histogram of key bk, added when it is not there yet; NULL (counted in `lost`) when the map
 * is full. */
static __always_inline struct stall_bpf_hist *hist_get(const struct stall_bpf_key *bk) {
        struct stall_bpf_hist *h, zero = {};

        h = bpf_map_lookup_elem(&hists, bk);
        if (h)
                return h;
        if (bpf_map_update_elem(&hists, bk, &zero, BPF_NOEXIST) < 0 && !bpf_map_lookup_elem(&hists, bk)) {
                __sync_fetch_and_add(&globals.lost, 1);
                return NULL;
        }
        return bpf_map_lookup_elem(&hists, bk);
}

/* Adds a duration of us microseconds to the slots, sum and max of h, not to its count. Per-CPU values:
 * sched_switch does not nest on one CPU (plain updates); fexit programs run preemptible and the shadow end
 * in interrupts (atomic adds). */
static __always_inline void hist_time(struct stall_bpf_hist *h, __u64 us, int atomic) {
        __u64 slot = us ? log2_u64(us) : 0;

        if (slot >= STALL_BPF_BUCKETS)
                slot = STALL_BPF_BUCKETS - 1;
        /* Hide the value from clang so that it keeps the mask, which is what the verifier needs
         * to see the bound on the register used for the access (32 is a power of 2). */
        asm volatile("" : "+r"(slot));
        slot &= STALL_BPF_BUCKETS - 1;
        if (atomic) {
                __sync_fetch_and_add(&h->slots[slot], 1);
                __sync_fetch_and_add(&h->sum_us, us);
        } else {
                h->slots[slot]++;
                h->sum_us += us;
        }
        if (us > h->max_us)
                h->max_us = us;
}

/* Adds a wait of us microseconds to the histogram of key bk (as hist_time(), and to its count);
 * returns it, or NULL. */
static __always_inline struct stall_bpf_hist *hist_add(const struct stall_bpf_key *bk, __u64 us,
                                                       int atomic) {
        struct stall_bpf_hist *h = hist_get(bk);

        if (!h)
                return NULL;
        if (atomic)
                __sync_fetch_and_add(&h->count, 1);
        else
                h->count++;
        hist_time(h, us, atomic);
        return h;
}

/* Adds the wait w (a copy: its record may be gone) that ended at now to hists and comms. */
static __always_inline void wait_end(const struct waiting *w, __u64 now, int preemptible) {
        struct stall_bpf_key bk = {};
        struct stall_bpf_comm_key ck = {};
        __u64 *c, us, none = 0;

        us = (now - w->start_ns) / 1000;
        __builtin_memcpy(bk.bdi, w->bdi, sizeof(bk.bdi));
        __builtin_memcpy(ck.bdi, w->bdi, sizeof(ck.bdi));
        __builtin_memcpy(ck.comm, w->comm, sizeof(ck.comm));
        bk.kind = w->kind;
        bk.stack = w->stack;
        ck.kind = w->kind;
        ck.stack = w->stack;

        if (!hist_add(&bk, us, preemptible))
                return;
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
                __sync_fetch_and_add(&globals.lost_comms, 1); /* counted in hists, but no comm */
}

/* ---- Shadow waits: what stable writes would cost where they are off ----
 *
 * With stable writes, a write or a write fault on a page under writeback waits in
 * folio_wait_stable() until its writeback ends. Without them it does not wait and dirties the
 * page again while it is written back: the tracepoint writeback:writeback_dirty_folio fires
 * (once per page and writeback: the page stays dirty until its next writeback) with the page
 * still under writeback. That is a shadow wait's start, on a mapping without stable writes; its
 * end is the end of the writeback of the page's file, the tracepoint
 * writeback:sb_clear_inode_writeback (the inode has no page under writeback left: for the
 * page itself an upper bound, exact when it was the only one). Both are raw tracepoints, in
 * both modes: cheap to attach, and a kernel without them loses the shadows, not the probe.
 *
 * Every shadow wait is counted: per CPU, in the slot of `shadow_cpu` that the disk's name
 * hashes to (in its histogram's count when another disk holds that slot on the CPU). Its
 * duration is measured for a sample: the first shadow wait on a CPU in each tick (jiffy), when
 * its file has no timed one in progress, is timed, and its duration added to the slots, sum and
 * max of its disk's histogram, not to its count: the slots add up to the timed waits. Where
 * shadow waits come slower than a tick per CPU, every one is timed. A writer that rewrites one
 * page in a loop without stable writes (tests/bench/probe-overhead, rewrite0) starts a writeback
 * every two loops: timing each (two reads of the clock, about 140 ns each on a kvm-clock guest;
 * lookups in hash maps, about 100 ns each there; a record that moves between the writer's CPU
 * and the CPU that ends the writeback) cost it 5 to 7 % of its loops. The count is a few reads
 * of the page's own structures, a slot of a per-CPU array and an add. The timed record of a
 * file is keyed by its inode and kept when its writeback ends, for its next timed wait; the LRU
 * map recycles the records of files no longer written. Per page not under writeback (most
 * dirtyings) the cost is one read of its flags. */

#define SHADOW_STALE_NS (600ULL * 1000 * 1000 * 1000) /* a record older than this missed its end */

struct shadow {
        __u64 start_ns; /* the timed shadow wait of the file's writeback began; 0: none */
        char bdi[STALL_BPF_BDI_LEN];
};

/* Each CPU's counts of shadow waits and the jiffies when it last timed one: one value, so that
 * the program touches one more page, not two (see above). */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct stall_bpf_shadow_cpu);
} shadow_cpu SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        /* Files with a timed shadow wait at once: the least recently used record makes room (with
         * more files in writeback at once, a record in progress may go, and its wait with it). */
        __uint(max_entries, 4096);
        __type(key, __u64); /* the inode's address */
        __type(value, struct shadow);
} shadows SEC(".maps");

/* Whether folio is under writeback, read through bpf_probe_read_kernel() (any pointer). */
static __always_inline int folio_writeback_read(struct folio *folio) {
        struct folio___memdesc *m = (void *) folio;
        unsigned long flags =
                bpf_core_field_exists(m->flags.f) ? BPF_CORE_READ(m, flags.f) : BPF_CORE_READ(folio, flags);

        return (flags >> bpf_core_enum_value(enum pageflags, PG_writeback)) & 1;
}

/* folio_wait_stable()'s own test of the mapping: whether its writes wait for writeback. */
static __always_inline int mapping_stable_writes(struct address_space *mapping) {
        if (bpf_core_enum_value_exists(enum mapping_flags, AS_STABLE_WRITES))
                return (BPF_CORE_READ(mapping, flags) >>
                        bpf_core_enum_value(enum mapping_flags, AS_STABLE_WRITES)) &
                       1;
        return (BPF_CORE_READ(mapping, host, i_sb, s_iflags) & SB_I_STABLE_WRITES) != 0;
}

/* Starts timing the shadow wait that begins on the file (inode) of bk's disk, unless this CPU
 * timed one in this tick already or the file has one in progress. */
static __always_inline void shadow_time(struct stall_bpf_shadow_cpu *cpu, const struct stall_bpf_key *bk,
                                        __u64 inode) {
        struct shadow *s, n = {};
        __u64 tick, now;

        tick = bpf_jiffies64();
        if (cpu->timed_jiffies == tick)
                return;
        cpu->timed_jiffies = tick;
        now = bpf_ktime_get_ns();
        s = bpf_map_lookup_elem(&shadows, &inode);
        if (s && s->start_ns && now - s->start_ns < SHADOW_STALE_NS)
                return;
        if (s) { /* the file's next writeback, or a stale record whose end was missed */
                if (!s->start_ns)
                        __sync_fetch_and_add(&globals.nr_shadows, 1);
                __builtin_memcpy(s->bdi, bk->bdi, sizeof(s->bdi));
                s->start_ns = now;
                return;
        }
        n.start_ns = now;
        __builtin_memcpy(n.bdi, bk->bdi, sizeof(n.bdi));
        if (bpf_map_update_elem(&shadows, &inode, &n, BPF_NOEXIST) == 0)
                __sync_fetch_and_add(&globals.nr_shadows, 1);
}

/* Counts a shadow wait of the disk named name (the key of its histogram, bk) in cpu, this CPU's
 * counts. */
static __always_inline void shadow_count(struct stall_bpf_shadow_cpu *cpu, const __u64 *name,
                                         const struct stall_bpf_key *bk) {
        struct stall_bpf_shadow_counter *c;
        struct stall_bpf_hist *h;
        __u64 slot;

        slot = ((name[0] ^ name[1] * 31 ^ name[2] * 961 ^ name[3] * 29791) * 0x9E3779B97F4A7C15ULL) >> 32;
        c = &cpu->counters[slot & (STALL_BPF_SHADOW_COUNTERS - 1)];
        if (!c->name[0]) /* a free slot: the program does not nest on a CPU */
                __builtin_memcpy(c->name, name, sizeof(c->name));
        if (c->name[0] == name[0] && c->name[1] == name[1] && c->name[2] == name[2] &&
            c->name[3] == name[3]) {
                c->count++;
                return;
        }
        h = hist_get(bk); /* the slot is another disk's */
        if (h)
                __sync_fetch_and_add(&h->count, 1);
}

/* writeback_dirty_folio(folio, mapping): a shadow wait begins when the page is under writeback
 * and its mapping has no stable writes. */
static __always_inline int shadow_begin(struct folio *folio, struct address_space *mapping) {
        union {
                struct stall_bpf_key bk;
                __u64 name[STALL_BPF_BDI_LEN / 8];
        } k = { .bk.kind = STALL_KIND_SHADOW };
        struct stall_bpf_shadow_cpu *cpu;
        struct backing_dev_info *bdi;
        __u32 zero = 0;

        if (!folio_writeback_read(folio))
                return 0;
        if (!mapping || mapping_stable_writes(mapping))
                return 0;
        bdi = mapping_bdi(mapping);
        if (bdi)
                bpf_probe_read_kernel_str(k.bk.bdi, sizeof(k.bk.bdi), bdi->dev_name);
        else
                __builtin_memcpy(k.bk.bdi, "(unknown)", sizeof("(unknown)"));
        cpu = bpf_map_lookup_elem(&shadow_cpu, &zero);
        if (!cpu)
                return 0;
        shadow_count(cpu, k.name, &k.bk);
        shadow_time(cpu, &k.bk, (__u64) BPF_CORE_READ(mapping, host));
        return 0;
}

/* sb_clear_inode_writeback(inode): the timed shadow wait of the file, if any, ends now; its
 * record is kept for the file's next one. */
static __always_inline int shadow_end(__u64 inode) {
        struct stall_bpf_key bk = { .kind = STALL_KIND_SHADOW };
        struct stall_bpf_hist *h;
        struct shadow *s;
        __u64 start;

        if (!globals.nr_shadows)
                return 0;
        s = bpf_map_lookup_elem(&shadows, &inode);
        if (!s || !s->start_ns)
                return 0;
        start = s->start_ns;
        s->start_ns = 0;
        __sync_fetch_and_add(&globals.nr_shadows, -1);
        __builtin_memcpy(bk.bdi, s->bdi, sizeof(bk.bdi));
        h = hist_get(&bk);
        if (h)
                hist_time(h, (bpf_ktime_get_ns() - start) / 1000, 1);
        return 0;
}

/* ---- O_DIRECT writes: a risk to mirrors that stable writes cannot remove ---- */

struct iov_iter___direct {
        _Bool data_source; /* 6.1+: WRITE (ITER_SOURCE) */
} __attribute__((preserve_access_index));

struct file___direct {
        struct address_space *f_mapping;
} __attribute__((preserve_access_index));

struct kiocb___direct {
        struct file___direct *ki_filp;
} __attribute__((preserve_access_index));

/* iomap_dio_rw_begin(iocb, iter, dio_flags, done_before): counts the O_DIRECT writes per disk. */
static __always_inline int direct_begin(struct kiocb___direct *iocb, struct iov_iter___direct *iter) {
        struct stall_bpf_key bk = { .kind = STALL_KIND_DIRECT };
        struct backing_dev_info *bdi;

        if (!bpf_core_field_exists(iter->data_source) || !BPF_CORE_READ(iter, data_source))
                return 0;
        bdi = mapping_bdi((struct address_space *) BPF_CORE_READ(iocb, ki_filp, f_mapping));
        if (!bdi)
                return 0;
        bpf_probe_read_kernel_str(bk.bdi, sizeof(bk.bdi), bdi->dev_name);
        hist_add(&bk, 0, 1);
        return 0;
}

/* The raw tracepoints of shadows and O_DIRECT writes, the same in both modes; attaching each is
 * optional (user space says what is missing). */

/* TP_PROTO(struct folio *folio, struct address_space *mapping) */
SEC("raw_tracepoint/writeback_dirty_folio")
int shadow_dirty(struct bpf_raw_tracepoint_args *ctx) {
        return shadow_begin((void *) ctx->args[0], (void *) ctx->args[1]);
}

/* TP_PROTO(struct inode *inode) */
SEC("raw_tracepoint/sb_clear_inode_writeback")
int shadow_clear(struct bpf_raw_tracepoint_args *ctx) {
        return shadow_end(ctx->args[0]);
}

/* TP_PROTO(struct kiocb *iocb, struct iov_iter *iter, unsigned int dio_flags, size_t done_before) */
SEC("raw_tracepoint/iomap_dio_rw_begin")
int direct_write(struct bpf_raw_tracepoint_args *ctx) {
        return direct_begin((void *) ctx->args[0], (void *) ctx->args[1]);
}

/* For user space, run with BPF_PROG_TEST_RUN: names the kernel text address globals.sym_ip as
 * "function+0xoffset/0xsize [module]" in globals.sym_name (the %pB of the kernel's backtraces: a
 * return address is looked up one byte before it). globals.sym_len is what bpf_snprintf()
 * returned. */
SEC("syscall")
int symbolize(void *ctx) {
        __u64 args[1] = { globals.sym_ip };

        (void) ctx;
        globals.sym_len =
                bpf_snprintf(globals.sym_name, sizeof(globals.sym_name), "%pB", args, sizeof(args));
        return 0;
}
