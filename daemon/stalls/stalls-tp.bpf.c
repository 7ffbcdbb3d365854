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
 * sleep): it is dropped and counted in `unmatched`. Every wait is classified by its stack. */

#include "stalls.bpf.h"

#define TASK_UNINTERRUPTIBLE 0x2
#define STALE_NS (10ULL * 1000 * 1000) /* run time between tracepoint and sleep, at most */

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

static __always_inline int wait_start(void *ctx, struct address_space *mapping) {
        __u64 task = bpf_get_current_task();
        struct waiting w = {};

        w.start_ns = bpf_ktime_get_ns();
        w.resumed_ns = w.start_ns;
        wait_describe(&w, mapping);
        w.kind = classify(ctx, &w.stack);
        /* A record left: the previous hit never slept, this is a new wait. */
        return wait_record(task, bpf_map_lookup_elem(&waiting, &task), &w);
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
