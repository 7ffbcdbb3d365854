/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The BPF backend of the stall probe (stalls-bpf.c), for the probe's front in stalls.c. It is
 * built only when HAVE_BPF is 1; without it stall_bpf_new() fails and says so, and the front
 * never calls the rest (its mode is never STALL_PROBE_BPF). */

#include <errno.h>
#include <string.h>

#include "stalls.h"

#ifndef HAVE_BPF
#define HAVE_BPF 0
#endif

typedef struct StallBpf StallBpf;

#if HAVE_BPF

/* Loads the programs this kernel needs and attaches them: fentry/fexit on the wait functions
 * and the wait tracepoint where the kernel has BPF trampolines, else the raw tracepoints; the
 * wait tracepoint must be found under tracefs_root.
 * Returns 0 and *ret, or -errno with a malloc()ed explanation in *ret_reason (may be NULL for
 * -ENOMEM). */
int stall_bpf_new(const char *tracefs_root, StallBpf **ret, char **ret_reason);

/* Detaches the programs and frees everything. */
StallBpf *stall_bpf_free(StallBpf *p);

/* Whether waits are classified by caller (the kernel shows its addresses, or the symbolize
 * program names them). */
bool stall_bpf_classified(const StallBpf *p);

/* What the probe measures ("BPF fentry/fexit folio_wait_writeback + ...", "BPF raw
 * tracepoints writeback:... + sched_switch, ..."). */
const char *stall_bpf_description(const StallBpf *p);

/* The counts of every bdi with waits (has_durations true), unsorted; *ret is malloc()ed.
 * Returns 0 or -errno. */
int stall_bpf_list(StallBpf *p, StallStats **ret, size_t *ret_n);

/* Forgets the waits of the bdi of that name, or of all when bdi_or_null is NULL. Returns 0 or
 * -errno. */
int stall_bpf_reset(StallBpf *p, const char *bdi_or_null);

/* Whether shadow waits (stalls.h) are measured and O_DIRECT writes counted: their programs are
 * attached. */
bool stall_bpf_shadows(const StallBpf *p);
bool stall_bpf_direct(const StallBpf *p);

/* Attaches (on) or detaches the shadow programs; they start attached. Returns 0, -EOPNOTSUPP
 * (the kernel lacks their tracepoints) or -errno. */
int stall_bpf_set_shadows(StallBpf *p, bool on);
bool stall_bpf_shadows_available(const StallBpf *p);

/* How many times the shadow programs were attached (StallStats.shadow_epoch). */
uint32_t stall_bpf_shadow_epoch(const StallBpf *p);

/* The programs' counters: as stall_probe_lost(), stall_probe_lost_comms() and
 * stall_probe_unmatched() describe them. */
uint64_t stall_bpf_lost(const StallBpf *p);
uint64_t stall_bpf_lost_comms(const StallBpf *p);
uint64_t stall_bpf_unmatched(const StallBpf *p);

/* The raw-tracepoint mode's shortcut past the stack walk: as stall_probe_frame_reads() and
 * stall_probe_frame_mismatches() describe it. */
uint64_t stall_bpf_frame_reads(const StallBpf *p);
uint64_t stall_bpf_frame_mismatches(const StallBpf *p);

#else

static inline int stall_bpf_new(const char *tracefs_root, StallBpf **ret, char **ret_reason) {
        *ret_reason = strdup("not built with BPF support (-Dbpf=disabled or no clang/bpftool/libbpf)");
        return *ret_reason ? -EOPNOTSUPP : -ENOMEM;
}
static inline StallBpf *stall_bpf_free(StallBpf *p) {
        return NULL;
}
static inline bool stall_bpf_classified(const StallBpf *p) {
        return false;
}
static inline const char *stall_bpf_description(const StallBpf *p) {
        return NULL;
}
static inline int stall_bpf_list(StallBpf *p, StallStats **ret, size_t *ret_n) {
        return -EOPNOTSUPP;
}
static inline int stall_bpf_reset(StallBpf *p, const char *bdi_or_null) {
        return -EOPNOTSUPP;
}
static inline uint64_t stall_bpf_lost(const StallBpf *p) {
        return 0;
}
static inline uint64_t stall_bpf_lost_comms(const StallBpf *p) {
        return 0;
}
static inline bool stall_bpf_shadows(const StallBpf *p) {
        return false;
}
static inline bool stall_bpf_direct(const StallBpf *p) {
        return false;
}
static inline int stall_bpf_set_shadows(StallBpf *p, bool on) {
        return -EOPNOTSUPP;
}
static inline bool stall_bpf_shadows_available(const StallBpf *p) {
        return false;
}
static inline uint32_t stall_bpf_shadow_epoch(const StallBpf *p) {
        return 0;
}
static inline uint64_t stall_bpf_unmatched(const StallBpf *p) {
        return 0;
}
static inline uint64_t stall_bpf_frame_reads(const StallBpf *p) {
        return 0;
}
static inline uint64_t stall_bpf_frame_mismatches(const StallBpf *p) {
        return 0;
}

#endif

DEFINE_TRIVIAL_CLEANUP_FUNC(StallBpf *, stall_bpf_free);
