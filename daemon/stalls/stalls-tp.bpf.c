/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stall probe's raw-tracepoint mode, for kernels without BPF trampolines (stalls.bpf.h has
 * what both modes share).
 *
 * The tracepoint writeback:folio_wait_writeback fires in the waiting task just before it
 * sleeps on PG_writeback; the wait ends when sched_switch switches that task back in. Both are
 * attached as raw tracepoints: a classic one would format a perf record on every hit before the
 * program could return (on every context switch of the machine, for sched_switch), and
 * attaching a classic one needs perf_event_open(2), which Debian's kernels
 * (perf_event_paranoid=3) refuse without CAP_SYS_ADMIN. The raw wait tracepoint hands over the
 * folio and its mapping; the program derives the bdi name the classic tracepoint would print
 * (inode_to_bdi()'s bdi->dev_name, "MAJ:MIN" of the whole disk).
 *
 * Cost model: sched_switch runs on every context switch, so it first reads one global
 * (nr_waiting) and returns when no task is waiting; only then does it look prev and next up in
 * the `waiting` hash, keyed by the task_struct's address: the tracepoint's arguments themselves,
 * with no read of the task (a pid would take a bpf_probe_read_kernel() for each, on each switch
 * while a task waits). A task waits on writeback only alive (it cannot exit before it is woken)
 * and its record goes when it is switched out in another state, so an address reused by a new
 * task finds no record of the old one. The wait tracepoint runs only when a task waits.
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
 * Every wait is classified by its caller, and a walk of the stack (bpf_get_stack(): 2 µs, the
 * unwinder's) would cost more than the rest of the program. The program's own frame lies on the
 * kernel stack right under those of the tracepoint's glue and of folio_wait_writeback(), whose
 * sizes are fixed for a kernel and a set of programs on the tracepoint; so the return address
 * into folio_wait_writeback()'s caller sits at a fixed distance above the program's frame
 * pointer (r10). A walk finds it: the program looks for the walk's last wait-function frame and
 * the caller's frame among the words above its frame and keeps their slots (frame_slots); a
 * later wait reads those two words and takes the caller's kind from `callers` when the first is
 * a wait function's return address and the second one of a classified caller. Anything else (a
 * caller through a wrapper, another program on the tracepoint, which adds __traceiter_'s frame)
 * takes the walk, which learns the slots again. The answer is audited: 1 wait in FRAME_AUDIT
 * also takes the walk, and a caller that differs turns the slots off for good (frame_mismatches
 * is no longer 0). From 6.13 on the kernel runs a program whose frame is 64 bytes or more on
 * a private per-CPU stack, away from the traced function's frames: the wait program keeps its
 * larger locals in a per-CPU scratch map and its frame under that. */

#include "stalls.bpf.h"

#define TASK_UNINTERRUPTIBLE 0x2
#define STALE_NS (10ULL * 1000 * 1000) /* run time between tracepoint and sleep, at most */

#define FRAME_WORDS 64               /* stack words above the program's frame searched by a walk */
#define FRAME_AUDIT 64               /* 1 in this many shortcut answers is checked by a walk */
#define FRAME_SLOTS_VALID (1U << 16) /* frame_slots: wait slot | caller slot << 8 | VALID */
#define KIND_NONE ((__u32) -1)

/* The wait program's larger locals (one per CPU: the program does not nest on a CPU). */
struct wait_scratch {
        struct waiting w;
        struct stall_bpf_stack st;
        __u64 words[FRAME_WORDS];
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct wait_scratch);
} scratch SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 4096); /* tasks waiting at once; more are counted in `lost` */
        __type(key, __u64);        /* the task_struct's address */
        __type(value, struct waiting);
} waiting SEC(".maps");

/* Deletes task's record, if any, and counts in *counter (when not NULL). */
static __always_inline void drop(__u64 task, __u64 *counter) {
        if (bpf_map_delete_elem(&waiting, &task) == 0)
                __sync_fetch_and_add(&globals.nr_waiting, -1);
        if (counter)
                __sync_fetch_and_add(counter, 1);
}

/* Records the wait w of task that begins now: over old, the task's record of a wait that never
 * ended (counted in `unmatched`), else as a new record. */
static __always_inline int wait_record(__u64 task, struct waiting *old, const struct waiting *w) {
        if (old) {
                __builtin_memcpy(old, w, sizeof(*w));
                __sync_fetch_and_add(&globals.unmatched, 1);
                return 0;
        }
        if (bpf_map_update_elem(&waiting, &task, w, BPF_NOEXIST) == 0)
                __sync_fetch_and_add(&globals.nr_waiting, 1);
        else
                __sync_fetch_and_add(&globals.lost, 1);
        return 0;
}

struct task_struct___state { /* sched_switch_3args: the task's state */
        unsigned int __state;
} __attribute__((preserve_access_index));

/* The program's frame pointer: the kernel stack address above which lie the frames of the
 * tracepoint's glue and of the traced function. */
static __always_inline __u64 frame_pointer(void) {
        __u64 fp;

        asm volatile("%0 = r10" : "=r"(fp));
        return fp;
}

/* The kind of the wait's caller from the stack words at the learned slots (a return address
 * into a wait function, then one into its caller, both in `callers`), with the caller's return
 * address in *ret_caller; KIND_NONE when the words are not that. */
static __always_inline __u32 kind_from_slots(__u64 fp, __u32 slots, __u64 *ret_caller) {
        __u64 word, off;
        __u32 *kind;

        off = (slots & (FRAME_WORDS - 1)) * sizeof(__u64);
        if (bpf_probe_read_kernel(&word, sizeof(word), (void *) (fp + off)) < 0)
                return KIND_NONE;
        kind = bpf_map_lookup_elem(&callers, &word);
        if (!kind || *kind != STALL_KIND_SKIP)
                return KIND_NONE;
        off = ((slots >> 8) & (FRAME_WORDS - 1)) * sizeof(__u64);
        if (bpf_probe_read_kernel(&word, sizeof(word), (void *) (fp + off)) < 0)
                return KIND_NONE;
        kind = bpf_map_lookup_elem(&callers, &word);
        if (!kind || *kind == STALL_KIND_SKIP)
                return KIND_NONE;
        *ret_caller = word;
        return *kind;
}

/* Learns the slots of the walk's frames caller - 1 (a wait function) and caller among the
 * words above fp. */
static __always_inline void slots_learn(__u64 fp, struct wait_scratch *s, __s32 caller) {
        __u64 wait_ret, caller_ret;
        __u32 j, k;

        if (caller < 1 || caller >= STALL_BPF_STACK_DEPTH)
                return;
        wait_ret = s->st.ips[(caller - 1) & (STALL_BPF_STACK_DEPTH - 1)];
        caller_ret = s->st.ips[caller & (STALL_BPF_STACK_DEPTH - 1)];
        if (bpf_probe_read_kernel(s->words, sizeof(s->words), (void *) fp) < 0)
                return;
        for (j = 0; j < FRAME_WORDS; j++)
                if (s->words[j] == wait_ret)
                        break;
        for (k = j + 1; k < FRAME_WORDS; k++)
                if (s->words[k] == caller_ret)
                        break;
        if (k < FRAME_WORDS)
                globals.frame_slots = j | k << 8 | FRAME_SLOTS_VALID;
}

/* The kind of the wait that begins: from the learned slots, else (and when audited) by a walk. */
static __always_inline __u32 wait_classify(void *ctx, struct wait_scratch *s, __u32 *ret_stack) {
        __u64 fp = frame_pointer(), caller_ret = 0;
        __u32 slots = globals.frame_slots, kind = KIND_NONE, walked;
        __s32 caller;

        if (!classify_callers)
                return STALL_KIND_STABLE;
        if ((slots & FRAME_SLOTS_VALID) && !globals.frame_mismatches) {
                kind = kind_from_slots(fp, slots, &caller_ret);
                if (kind != KIND_NONE && bpf_get_prandom_u32() % FRAME_AUDIT) {
                        __sync_fetch_and_add(&globals.frame_reads, 1);
                        return kind;
                }
        }
        walked = classify(ctx, &s->st, ret_stack, &caller);
        if (caller < 0)
                return walked;
        if (kind == KIND_NONE) {
                if (!globals.frame_mismatches)
                        slots_learn(fp, s, caller);
        } else if (s->st.ips[caller & (STALL_BPF_STACK_DEPTH - 1)] != caller_ret)
                __sync_fetch_and_add(&globals.frame_mismatches, 1); /* an audit found another caller */
        return walked;
}

static __always_inline int wait_start(void *ctx, struct address_space *mapping) {
        __u64 task = bpf_get_current_task();
        struct wait_scratch *s;
        __u32 zero = 0;

        s = bpf_map_lookup_elem(&scratch, &zero);
        if (!s)
                return 0;
        __builtin_memset(&s->w, 0, sizeof(s->w));
        s->w.start_ns = bpf_ktime_get_ns();
        s->w.resumed_ns = s->w.start_ns;
        wait_describe(&s->w, mapping);
        s->w.kind = wait_classify(ctx, s, &s->w.stack);
        /* A record left: the previous hit never slept, this is a new wait. */
        return wait_record(task, bpf_map_lookup_elem(&waiting, &task), &s->w);
}

/* TP_PROTO(struct folio *folio, struct address_space *mapping) */
SEC("raw_tracepoint/folio_wait_writeback")
int folio_wait_writeback(struct bpf_raw_tracepoint_args *ctx) {
        return wait_start(ctx, (void *) ctx->args[1]);
}

static __always_inline int switch_common(int preempt, __u64 prev, __u64 next, unsigned long prev_state) {
        struct waiting *w;
        __u64 now;

        /* The clock is read only for a task that has a record: most switches while a task waits
         * are of other tasks. */
        w = bpf_map_lookup_elem(&waiting, &prev);
        if (w && !w->armed && !preempt) { /* preempted on the way to sleep: keep */
                if ((prev_state & TASK_UNINTERRUPTIBLE) && bpf_ktime_get_ns() - w->resumed_ns <= STALE_NS)
                        w->armed = 1;
                else
                        drop(prev, &globals.unmatched);
        }

        w = bpf_map_lookup_elem(&waiting, &next);
        if (!w)
                return 0;
        now = bpf_ktime_get_ns();
        if (w->armed) {
                struct waiting done = *w;

                drop(next, NULL);
                wait_end(&done, now, 0);
        } else
                w->resumed_ns = now;
        return 0;
}

/* 5.18+: TP_PROTO(bool preempt, struct task_struct *prev, struct task_struct *next,
 *                 unsigned int prev_state) */
SEC("raw_tracepoint/sched_switch")
int sched_switch(struct bpf_raw_tracepoint_args *ctx) {
        if (!globals.nr_waiting)
                return 0;
        return switch_common(ctx->args[0], ctx->args[1], ctx->args[2], (unsigned int) ctx->args[3]);
}

/* 5.17 (the light skeleton's oldest kernel) has no prev_state argument: read the task's state. */
SEC("raw_tracepoint/sched_switch")
int sched_switch_3args(struct bpf_raw_tracepoint_args *ctx) {
        struct task_struct___state *prev = (void *) ctx->args[1];

        if (!globals.nr_waiting)
                return 0;
        return switch_common(ctx->args[0], ctx->args[1], ctx->args[2], BPF_CORE_READ(prev, __state));
}
