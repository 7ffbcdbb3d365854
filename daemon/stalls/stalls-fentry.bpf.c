/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stall probe's fentry mode, where BPF trampolines exist (5.5+ with ftrace direct calls,
 * e.g. Debian's 6.1 and 6.12; stalls-tp.bpf.c is the fallback, stalls.bpf.h has what both modes
 * share).
 *
 * A wait lasts from the tracepoint writeback:folio_wait_writeback in folio_wait_writeback()
 * (wait_begin: the folio is under writeback, the task is about to sleep) to the return of its
 * sleep, folio_wait_bit(folio, PG_writeback) (fexit), with the folio no longer under writeback:
 * the time the writer was blocked. A wait that did not sleep after all (the writeback ended
 * first: the task's voluntary context switches did not change) is dropped and counted in
 * `unmatched`. No sched_switch program: a context switch costs nothing. When the folio is still
 * (or again) under writeback at that return, folio_wait_writeback() sleeps again and the
 * tracepoint fires again: the wait goes on, from its first hit.
 *
 * Why folio_wait_bit() and not folio_wait_writeback()'s own return: every call of
 * folio_wait_bit() is a wait for a folio's bit (writeback, PG_locked through folio_wait_locked(),
 * PG_private_2), while folio_wait_writeback() is called for every folio that ext4 and the
 * writeback loops write back, most of which are not under writeback: its trampoline ran 3-5
 * times per loop of the worst-case writer, on the paths that do not wait too.
 *
 * Its kind, without a stack walk on the common paths:
 *   - folio_wait_stable() (every wait that depends on the stable-writes flag, in the sources of
 *     6.1.192 and 6.12.118: write_begin through FGP_STABLE, page_mkwrite,
 *     wait_for_stable_page()) calls folio_wait_writeback() (a tail call) when the folio's
 *     mapping has stable writes; its fentry program makes the same test and, when the folio is
 *     under writeback, leaves this CPU a mark (task, folio, the task's context switch count): a
 *     wait on that folio by that task right after, with no context switch between (no
 *     migration to another CPU's mark), is STALL_KIND_STABLE. The next wait of the task clears
 *     the mark, so a later one (the same task's fsync of the page) never takes it. No clock
 *     read: under a VM's emulated clock (HPET) that is the dearest part;
 *   - __filemap_fdatawait_range() (fsync, fdatasync, sync_file_range, msync, sync) waits for
 *     the folios of one mapping in a loop that sleeps only in those waits: its fentry program
 *     records the mapping and the task's voluntary switch count, each wait of its loop renews
 *     that count at its end, and a wait of the task on that mapping with the count unchanged
 *     is STALL_KIND_SYNC. No fexit there: the record is left for the LRU map to recycle, and
 *     its count goes stale with the task's next sleep. So only a wait by the same task on the
 *     same mapping after its fsync returned, with no sleep between (a truncation of what it
 *     just synced, while a flusher writes it back again), would count as SYNC, not OTHER;
 *   - any other wait (the WB_SYNC_ALL writeback loops, truncation, reclaim, btrfs' own waits, a
 *     mark lost to a migration between the two calls) is classified by its stack as in the
 *     raw-tracepoint mode.
 *
 * The attach cost decides the shape (issue 16: start-up): each trampoline costs ftrace a pass
 * over every patchable function to install, and a second program on a traced function a
 * rebuild that costs twice that, so there is one program per traced function; and the
 * tracepoint, cheap to attach, opens the wait. folio_wait_writeback_killable() (afs' only) is
 * not traced: the tracepoint fires in it too (it sleeps in folio_wait_bit_killable()), and its
 * record is replaced at the task's next wait (counted in `unmatched`) and never closed by
 * another folio's return. */

#include "stalls.bpf.h"

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

struct sync_context {
        __u64 mapping; /* what __filemap_fdatawait_range() waits for */
        __u64 nvcsw;   /* the task's voluntary switches at its entry, or at the end of its last wait */
};

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 1024); /* tasks in fsync at once; one evicted is classified by its stack */
        __type(key, __u32);        /* thread id */
        __type(value, struct sync_context);
} sync_contexts SEC(".maps");

/* The task's wait in progress (start_ns != 0), in the task's own storage: no hash insert and
 * delete per wait, and a task's record goes with the task. */
struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, struct waiting);
} task_waits SEC(".maps");

/* The fentry programs' arguments are typed by the kernel's BTF (the verifier knows ctx[0] is a
 * struct folio *), so the flags are one plain load, relocated like a CO-RE read, instead of a
 * bpf_probe_read_kernel() call: this test runs on every call of folio_wait_stable(), and most
 * calls do not wait. */
static __always_inline int folio_under_writeback(struct folio *folio) {
        struct folio___memdesc *m = (void *) folio;
        unsigned long flags = bpf_core_field_exists(m->flags.f) ? m->flags.f : folio->flags;

        return (flags >> bpf_core_enum_value(enum pageflags, PG_writeback)) & 1;
}

/* folio_mapping(): page cache folios only (not anonymous or movable ones), else NULL. */
static __always_inline struct address_space *folio_file_mapping(struct folio *folio) {
        struct address_space *mapping = BPF_CORE_READ(folio, mapping);

        return (unsigned long) mapping & 3 ? NULL : mapping;
}

/* folio_wait_stable()'s own test: whether it will wait for the folio's writeback. */
static __always_inline int folio_stable_writes(struct folio *folio) {
        struct address_space *mapping = folio_file_mapping(folio);

        return mapping && mapping_stable_writes(mapping);
}

/* Plain loads through the BTF-typed current task. */
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

SEC("fentry/__filemap_fdatawait_range")
int fdatawait_enter(__u64 *ctx) {
        __u32 pid = (__u32) bpf_get_current_pid_tgid();
        struct sync_context sc = { .mapping = ctx[0], .nvcsw = current_nvcsw() };

        bpf_map_update_elem(&sync_contexts, &pid, &sc, BPF_ANY);
        return 0;
}

/* The kind of the wait of task pid on folio of mapping that begins now (see above). */
static __always_inline __u32 wait_kind(void *ctx, __u32 pid, __u64 folio, __u64 mapping, __u32 *ret_stack) {
        struct stable_mark *m;
        struct sync_context *sc;
        struct stall_bpf_stack st = {};
        __u32 zero = 0, kind;
        __s32 caller;

        m = bpf_map_lookup_elem(&stable_marks, &zero);
        if (m && m->pid == pid && m->folio == folio && m->switches == current_switches())
                kind = STALL_KIND_STABLE;
        else if ((sc = bpf_map_lookup_elem(&sync_contexts, &pid)) && sc->mapping == mapping &&
                 sc->nvcsw == current_nvcsw())
                kind = STALL_KIND_SYNC;
        else
                kind = classify(ctx, &st, ret_stack, &caller);
        if (m && m->pid == pid)
                m->folio = 0; /* a mark is for the call right after it only */
        return kind;
}

/* wait_describe() through plain loads: the tp_btf program's arguments are typed by the kernel's
 * BTF, so the superblock, its bdi and the bdi's name are read like a struct's fields, without a
 * bpf_probe_read_kernel() call each. A block device node's page cache (its bdi is its disk's)
 * takes wait_describe()'s reads. The name is copied 8 bytes at a time: it is short ("MAJ:MIN")
 * and the bytes after its end are zero (bdi_alloc() zeroes the struct). */
static __always_inline void wait_describe_btf(struct waiting *w, struct address_space *mapping) {
        struct super_block *sb = mapping ? mapping->host->i_sb : NULL;
        struct backing_dev_info *bdi = sb ? sb->s_bdi : NULL;
        __u64 *name = (__u64 *) w->bdi;
        const __u64 *src;

        if (!bdi || sb->s_magic == BDEVFS_MAGIC) {
                wait_describe(w, mapping);
                return;
        }
        src = (const __u64 *) bdi->dev_name;
        for (int i = 0; i < STALL_BPF_BDI_LEN / 8; i++)
                name[i] = src[i];
        w->bdi[STALL_BPF_BDI_LEN - 1] = 0;
        bpf_get_current_comm(w->comm, sizeof(w->comm));
}

/* TP_PROTO(struct folio *folio, struct address_space *mapping) */
SEC("tp_btf/folio_wait_writeback")
int wait_begin(__u64 *ctx) {
        __u64 folio = ctx[0], mapping = ctx[1];
        __u32 pid = (__u32) bpf_get_current_pid_tgid();
        struct waiting n = {}, *w;

        w = bpf_task_storage_get(&task_waits, bpf_get_current_task_btf(), NULL,
                                 BPF_LOCAL_STORAGE_GET_F_CREATE);
        if (!w) {
                __sync_fetch_and_add(&globals.lost, 1);
                return 0;
        }
        if (w->start_ns && w->folio == folio)
                return 0; /* woken with the folio under writeback again: the same wait */
        n.kind = wait_kind(ctx, pid, folio, mapping, &n.stack);
        n.folio = folio;
        n.nvcsw = current_nvcsw();
        wait_describe_btf(&n, (struct address_space *) ctx[1]);
        n.start_ns = bpf_ktime_get_ns();
        /* A record left: its wait never ended through the fexit below (the tracepoint fires in
         * folio_wait_writeback_killable() too), this one replaces it. */
        __sync_fetch_and_add(w->start_ns ? &globals.unmatched : &globals.nr_waiting, 1);
        __builtin_memcpy(w, &n, sizeof(n));
        return 0;
}

/* void folio_wait_bit(struct folio *folio, int bit_nr) */
SEC("fexit/folio_wait_bit")
int writeback_exit(__u64 *ctx) {
        struct folio *folio = (void *) ctx[0];
        struct sync_context *sc;
        struct waiting *w, done;
        __u64 now, nvcsw;
        __u32 pid;

        if (!globals.nr_waiting || (int) ctx[1] != (int) bpf_core_enum_value(enum pageflags, PG_writeback))
                return 0;
        w = bpf_task_storage_get(&task_waits, bpf_get_current_task_btf(), NULL, 0);
        if (!w || !w->start_ns || w->folio != ctx[0])
                return 0; /* no wait began before this sleep, or it began before the probe attached */
        if (folio_under_writeback(folio))
                return 0; /* written back again meanwhile: folio_wait_writeback() sleeps again */
        now = bpf_ktime_get_ns();
        done = *w;
        w->start_ns = 0;
        __sync_fetch_and_add(&globals.nr_waiting, -1);
        nvcsw = current_nvcsw();
        if (nvcsw == done.nvcsw) {
                __sync_fetch_and_add(&globals.unmatched, 1); /* it never slept */
                return 0;
        }
        if (done.kind == STALL_KIND_SYNC) {
                pid = (__u32) bpf_get_current_pid_tgid();
                sc = bpf_map_lookup_elem(&sync_contexts, &pid);
                if (sc)
                        sc->nvcsw = nvcsw; /* the fdatawait loop goes on */
        }
        wait_end(&done, now, 1);
        return 0;
}

struct bio {
        struct block_device *bi_bdev;
        unsigned int bi_opf;
} __attribute__((preserve_access_index));

#define REQ_OP_MASK 0xffU /* the operation: bi_opf's low 8 bits */
#define REQ_OP_WRITE 1U

/* void iomap_dio_bio_end_io(struct bio *bio): the end of each bio of an O_DIRECT read or write of
 * ext4, xfs and others on iomap (the bio's own end_io, called through a pointer). Where the
 * kernel has no tracepoint iomap:iomap_dio_rw_begin (6.1: __iomap_dio_rw and iomap_dio_rw have 7
 * arguments, more than its trampolines take), user space attaches this one: it counts the write
 * bios, per disk the bio was sent to (a large write may count several). */
SEC("fentry/iomap_dio_bio_end_io")
int direct_bio_end(__u64 *ctx) {
        struct stall_bpf_key bk = { .kind = STALL_KIND_DIRECT };
        struct bio *bio = (void *) ctx[0];
        struct backing_dev_info *bdi;

        if ((BPF_CORE_READ(bio, bi_opf) & REQ_OP_MASK) != REQ_OP_WRITE)
                return 0;
        bdi = BPF_CORE_READ(bio, bi_bdev, bd_disk, bdi);
        if (!bdi)
                return 0;
        bpf_probe_read_kernel_str(bk.bdi, sizeof(bk.bdi), bdi->dev_name);
        hist_add(&bk, 0, 1);
        return 0;
}
