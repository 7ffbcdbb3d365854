/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The stall observatory: how long writers wait for pages under writeback, per disk.
 *
 * A StallProbe measures in one of three modes:
 *   bpf          through a light skeleton (the kernel relocates the programs: 5.17+), per
 *                disk a log2 histogram of wait durations, count, sum, max and the top waiting
 *                commands; the raw tracepoint writeback:folio_wait_writeback starts a wait,
 *                and where the kernel has BPF trampolines fexit on folio_wait_writeback() ends
 *                it and fentry on folio_wait_stable() and __filemap_fdatawait_range() tell its
 *                cause, else the raw tracepoint sched_switch ends it;
 *   tracefs      the same tracepoint enabled in a private tracefs instance and counted from its
 *                trace_pipe: counts and commands, no durations (has_durations is false);
 *   unavailable  nothing measures; the reason says why. Reads fail with -EOPNOTSUPP: never
 *                zeros that look measured.
 *
 * What is a stall: the tracepoint fires for every wait on a page under writeback, and most of
 * those are not caused by stable pages: fsync() and the WB_SYNC_ALL writeback loops wait the
 * same way, and so do truncation, reclaim and migration. Both modes classify each wait by the
 * kernel function that called folio_wait_writeback() (BPF: bpf_get_stack, each return address
 * named once, when first seen; fentry/fexit: through folio_wait_stable() or
 * __filemap_fdatawait_range() without it, other waits with it; tracefs: the instance's
 * stacktrace option); count, sum, max, hist and comms
 * are the stable-pages waits only, sync_* and other_* count the rest. When classification is
 * impossible, classified is false and every wait counts as a stable-pages wait.
 *
 * The key is the disk: the tracepoint reports the bdi name, which for a block device is the
 * whole disk's "MAJ:MIN" (partitions share it). Per-filesystem figures are derived by the
 * caller from its mount -> disk mapping; filesystems with their own bdi report it here as
 * well: NFS and FUSE as "0:N" (the superblock's s_dev), btrfs as "btrfs-N" (devnum 0, bdi
 * name kept).
 *
 * Windows: counters only grow (until a reset); the caller keeps a snapshot (stall_probe_read)
 * and subtracts it from a later one (stall_stats_subtract) to get, e.g., the p99 over
 * StallWindowSec=.
 *
 * Histogram: bucket 0 holds waits of 0..1 us, bucket i >= 1 holds [2^i, 2^(i+1)) us, the last
 * bucket is open-ended. The pure helpers need neither BPF nor tracefs nor privileges: the
 * statistics (stall_hist_*, stall_stats_*) are in stalls-stats.c, the parsers (stall_parse_*,
 * stall_classify_caller, stall_kallsyms_lookup, stall_probe_mode_to_string) in stalls-parse.c,
 * the JSON in stalls-json.c.
 *
 * This header is the contract between the probe that measures (stalls/stall-probe.h, the
 * library stablepages-stalls) and all that reads its figures: it and the pure helpers are in
 * the core library, which stablepagesctl links too. */

/* Layout shared with the BPF objects (stalls/stalls.bpf.h); plain C types only. */
#define STALL_HIST_BUCKETS 32
#define STALL_BPF_BUCKETS STALL_HIST_BUCKETS
#define STALL_BPF_BDI_LEN 32  /* the tracepoint's char name[32] */
#define STALL_BPF_COMM_LEN 16 /* TASK_COMM_LEN */
#define STALL_BPF_MAX_BDIS 1024
#define STALL_BPF_MAX_COMMS 8192
#define STALL_BPF_MAX_CALLERS 4096 /* return addresses named and classified by user space */
#define STALL_BPF_MAX_STACKS 1024  /* frames of waits recorded before their addresses were named */
#define STALL_BPF_STACK_DEPTH 8    /* frames examined to find the caller */
#define STALL_BPF_SYMBOL_LEN 128
#define STALL_BPF_SHADOW_COUNTERS 32 /* slots of the per-CPU counts of shadow waits (a power of 2) */

/* Why a task waited, from the function that called folio_wait_writeback(): */
#define STALL_KIND_STABLE 0 /* about to modify the page: a stable-pages wait (the default) */
#define STALL_KIND_SYNC 1   /* data integrity: fsync, fdatasync, sync, msync, O_SYNC writes */
#define STALL_KIND_OTHER 2  /* truncation, invalidation, reclaim, migration, splitting */
#define STALL_KIND_SKIP 3   /* callers only: the wait functions themselves, look further up */
#define STALL_KIND_PENDING                                                                                  \
        4 /* maps only: a frame was not named yet; user space classifies the                                \
           * frames saved under the key's stack */
/* Not waits: what stable writes would have cost, and what they cannot protect. */
#define STALL_KIND_SHADOW                                                                                   \
        5 /* a shadow wait: a page dirtied while under writeback on a mapping without                       \
           * stable writes, from then until its inode's writeback ended */
#define STALL_KIND_DIRECT                                                                                   \
        6 /* an O_DIRECT write (count only): its buffer is read by the device as it                         \
           * is, whatever stable_writes says */

struct stall_bpf_key {
        char bdi[STALL_BPF_BDI_LEN];
        unsigned int kind;
        unsigned int stack; /* STALL_KIND_PENDING: the key of its frames in pending_stacks, else 0 */
};

struct stall_bpf_comm_key {
        char bdi[STALL_BPF_BDI_LEN];
        char comm[STALL_BPF_COMM_LEN];
        unsigned int kind;
        unsigned int stack;
};

/* A disk's shadow waits on one CPU, in the slot of shadow_cpu's counters its name hashes to. */
struct stall_bpf_shadow_counter {
        unsigned long long name[STALL_BPF_BDI_LEN / 8]; /* the bdi's name; zeros: a free slot */
        unsigned long long count;
};

/* A CPU's counts of shadow waits, and the jiffies when it last timed one. */
struct stall_bpf_shadow_cpu {
        unsigned long long timed_jiffies;
        struct stall_bpf_shadow_counter counters[STALL_BPF_SHADOW_COUNTERS];
};

struct stall_bpf_stack {
        unsigned long long ips[STALL_BPF_STACK_DEPTH]; /* return addresses, 0 after the last */
};

struct stall_bpf_hist {
        unsigned long long count;
        unsigned long long sum_us;
        unsigned long long max_us;
        unsigned long long slots[STALL_BPF_BUCKETS];
};

/* The global variables of both BPF objects (their .bss, mapped by the light skeletons): the
 * probe's counters, and the arguments and result of the symbolize program. */
struct stall_bpf_globals {
        unsigned long long nr_waiting;       /* waits in progress; 0 makes the hot paths return */
        unsigned long long unmatched;        /* wait starts that did not sleep */
        unsigned long long lost;             /* waits not recorded: a map was full */
        unsigned long long lost_comms;       /* stable-pages waits recorded without their command */
        unsigned long long unclassified;     /* waits whose stack could not be read: STALL_KIND_STABLE */
        unsigned long long frame_reads;      /* raw-tracepoint mode: waits classified without a walk */
        unsigned long long frame_mismatches; /* ... whose audit by a walk found another caller (not 0:
                                              * the slots are no longer read) */
        unsigned long long frame_slots;      /* raw-tracepoint mode: the slots learned (stalls-tp.bpf.c) */
        unsigned long long nr_shadows;       /* inodes with shadow waits in progress; 0: the end returns */
        unsigned long long sym_ip;           /* symbolize: the address to name */
        long long sym_len;                   /* symbolize: what bpf_snprintf() returned */
        char sym_name[STALL_BPF_SYMBOL_LEN];
};

#ifndef __bpf__

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "json.h"
#include "macro.h"

#define STALL_TOP_COMMS 8

typedef enum StallProbeMode {
        STALL_PROBE_UNAVAILABLE,
        STALL_PROBE_BPF,
        STALL_PROBE_TRACEFS,
        _STALL_PROBE_MODE_MAX,
} StallProbeMode;

typedef struct StallComm {
        char comm[STALL_BPF_COMM_LEN];
        uint64_t count;
} StallComm;

typedef struct StallStats {
        dev_t devnum;                /* parsed from bdi; 0 when bdi is not "MAJ:MIN" */
        char bdi[STALL_BPF_BDI_LEN]; /* the tracepoint's bdi name */
        bool has_durations;          /* false in tracefs mode: sum, max, hist are not measured */
        bool classified;             /* waits were sorted by cause; false: the figures below
                                      * include every writeback wait, fsync's too */
        /* Stable-pages waits (STALL_KIND_STABLE): a task about to modify a page under writeback. */
        uint64_t count;
        uint64_t sum_usec;
        uint64_t max_usec;
        uint64_t hist[STALL_HIST_BUCKETS];
        size_t n_comms;
        StallComm comms[STALL_TOP_COMMS]; /* by count, descending */
        /* Writeback waits with other causes, not in the figures above: they happen whatever
         * stable_writes says. */
        uint64_t sync_count, sync_sum_usec;   /* fsync, sync, msync, O_SYNC (data integrity) */
        uint64_t other_count, other_sum_usec; /* truncation, reclaim, migration */
        /* Shadow waits: while a mapping of the disk runs without stable writes, each page dirtied
         * while it is under writeback is a write that would have waited with them, from then
         * until the writeback of its file ended (an upper bound of the page's own). What turning
         * stable writes on would cost, and on a mirror the pages whose legs may differ. BPF mode
         * only, on kernels with the tracepoints writeback:writeback_dirty_folio and
         * writeback:sb_clear_inode_writeback, while the daemon has their programs attached
         * (has_shadows; shadow_epoch counts the attachments: figures of two epochs are no
         * window). */
        bool has_shadows;
        uint32_t shadow_epoch;
        uint64_t shadow_count; /* all shadow waits */
        uint64_t shadow_timed; /* those whose duration was measured (all, or a sample: the
                                * first on a CPU in each clock tick): the sum, max and hist */
        uint64_t shadow_sum_usec;
        uint64_t shadow_max_usec;
        uint64_t shadow_hist[STALL_HIST_BUCKETS];
        /* O_DIRECT writes (BPF mode, kernels with the tracepoint iomap:iomap_dio_rw_begin:
         * has_direct): a writer that changes its buffer in flight makes mirror legs differ
         * whatever stable_writes says. */
        bool has_direct;
        uint64_t direct_count;
} StallStats;

/* ---- pure helpers ---- */

/* The bucket of a wait of usec microseconds. */
unsigned stall_hist_bucket(uint64_t usec);

/* Smallest wait (us) bucket i holds: 0 for bucket 0, else 2^i. */
uint64_t stall_hist_bucket_lower_usec(unsigned i);

/* Largest wait (us, inclusive) bucket i holds: 2^(i+1)-1, UINT64_MAX for the last bucket;
 * this is the Prometheus "le" of the bucket. */
uint64_t stall_hist_bucket_upper_usec(unsigned i);

/* Accounts one wait of usec microseconds by comm (may be NULL) into s. */
void stall_stats_add_sample(StallStats *s, uint64_t usec, const char *comm);

/* Adds count waits by comm to the top list of s (kept sorted, at most STALL_TOP_COMMS; the
 * smallest falls off). Does not touch s->count. */
void stall_stats_add_comm(StallStats *s, const char *comm, uint64_t count);

/* Adds b into a (counts, sums, buckets, commands; max is the larger). */
void stall_stats_merge(StallStats *a, const StallStats *b);

/* The q-quantile (0 < q <= 1, e.g. 0.5, 0.99) of the waits in s, as the inclusive upper bound
 * of the bucket holding the ceil(q*count)-th wait, capped at max_usec: a value the true
 * quantile does not exceed and is at most twice as large as it (for waits >= 1 us).
 * Returns 0, -ENODATA (no waits), -EOPNOTSUPP (no durations) or -EINVAL (q). */
int stall_stats_percentile(const StallStats *s, double q, uint64_t *ret_usec);

/* The q-quantile of the shadow waits of s, as stall_stats_percentile(); -EOPNOTSUPP when shadows
 * are not measured. */
int stall_stats_shadow_percentile(const StallStats *s, double q, uint64_t *ret_usec);

/* The waits accumulated between the snapshot before and the snapshot now of one disk, for
 * windowed figures. max of the window is not known exactly: it is min(now->max, upper bound of
 * the highest non-empty bucket of the difference). Command counts are exact for commands in
 * both top lists. Returns 0; 1 when the probe was reset in between (a counter went backwards:
 * ret is then a copy of now, everything since the reset); -EINVAL when they are different
 * disks. */
int stall_stats_subtract(const StallStats *now, const StallStats *before, StallStats *ret);

/* Parses a bdi name "MAJ:MIN" into a devnum. Returns 0 or -EINVAL ("btrfs-1", "(unknown)"). */
int stall_parse_bdi_name(const char *bdi, dev_t *ret);

/* The kind (STALL_KIND_SYNC, STALL_KIND_OTHER, STALL_KIND_SKIP for the wait functions themselves,
 * else STALL_KIND_STABLE) of a wait whose caller is the kernel function symbol; suffixes such as
 * ".constprop.0" and " [module]" are ignored. */
unsigned stall_classify_caller(const char *symbol);

/* Names kernel text return addresses from a /proc/kallsyms-format file, as the kernel's %pB
 * does: ret_names[i] is "function+0xoffset [module]" of the last symbol starting before ips[i],
 * or "" when none does. For kernels where the probe cannot name addresses itself; reads the
 * whole file, so call it with every address at once. Returns 0, -EPERM (addresses are hidden:
 * all zero) or -errno. */
int stall_kallsyms_lookup(const char *path, const uint64_t *ips, size_t n,
                          char (*ret_names)[STALL_BPF_SYMBOL_LEN]);

/* What one line of a tracefs trace_pipe holds: */
typedef enum StallTraceLine {
        STALL_TRACE_OTHER, /* anything else */
        STALL_TRACE_EVENT, /* a folio_wait_writeback or wait_on_page_writeback event */
        STALL_TRACE_LOST,  /* "CPU:N [LOST M EVENTS]" */
        STALL_TRACE_FRAME, /* a stack line (" => symbol") of the stacktrace option */
} StallTraceLine;

/* Parses one line of a tracefs trace_pipe. An event ("  comm-pid  [cpu] flags  ts:
 * folio_wait_writeback: bdi 7:0: ino=12 index=0") copies the command and the bdi name; a lost
 * line sets *ret_lost to M; a frame points *ret_symbol at the symbol in line. */
StallTraceLine stall_parse_trace_line(const char *line, char comm[static STALL_BPF_COMM_LEN],
                                      char bdi[static STALL_BPF_BDI_LEN], uint64_t *ret_lost,
                                      const char **ret_symbol);

/* "unavailable", "bpf" or "tracefs"; NULL for a value out of range. */
const char *stall_probe_mode_to_string(StallProbeMode m);

/* A disk's stall figures in the one form every JSON of them takes: the "stalls" object of
 * status --json, DumpJSON, devices.json and stablepagesctl stats --json. */
typedef struct StallReport {
        const char *mode;         /* the probe's mode (stall_probe_mode_to_string()) */
        bool measured;            /* a probe runs: total and window hold figures */
        uint64_t window_usec;     /* StallWindowSec= */
        const StallStats *total;  /* since the probe started (or ResetStalls) */
        const StallStats *window; /* over the last window_usec */
        const char *reason;       /* why not measured, or what limits the figures ("" for nothing) */
        bool losses_known;        /* lost and lost_comms are the probe's (it runs) */
        uint64_t lost;            /* waits of every disk the probe could not record */
        uint64_t lost_comms;      /* waits of every disk recorded without their command */
} StallReport;

/* Writes r as a JSON object: mode, measured, durations; when measured window_usec, total and
 * window (count; with durations sum_usec, max_usec, p50_usec, p99_usec and, in total only,
 * hist; shadows_measured, shadow_count (null when not measured) and with it shadow_sum_usec,
 * shadow_max_usec, shadow_p50_usec, shadow_p99_usec and, in total only, shadow_hist;
 * direct_count (null when not counted); classified, sync_count, other_count, comms); reason,
 * probe_lost, probe_lost_comms. */
void stall_report_json(const StallReport *r, JsonWriter *w);

#endif /* __bpf__ */
