/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The stall probe: what measures the figures of stalls.h, in one of the modes it describes
 * (bpf, tracefs, unavailable). The front is stalls.c, the backends stalls-bpf.c (built when
 * HAVE_BPF is 1) and stalls-tracefs.c; all of it is the library stablepages-stalls, which
 * stablepagesd links and stablepagesctl does not. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "stalls.h"

typedef struct StallProbe StallProbe;

/* Creates a probe and starts measuring: BPF when it loads and attaches, else the tracefs
 * counter, else mode "unavailable" (which is not an error: *ret is set, the reason says why).
 * Mounts tracefs on /sys/kernel/tracing when no tracefs is mounted (both modes look for the
 * tracepoint there). Needs CAP_BPF+CAP_PERFMON (or CAP_SYS_ADMIN) for
 * BPF, root for tracefs.
 * Test only: STABLEPAGES_STALLS_FORCE_TRACEPOINTS=1 skips fentry/fexit (the raw tracepoints
 * where both work), STABLEPAGES_STALLS_FORCE_TRACEFS=1 skips BPF, STABLEPAGES_STALLS_FORCE_UNAVAILABLE=1
 * skips both, STABLEPAGES_STALLS_FORCE_KALLSYMS=1 names addresses from /proc/kallsyms, not with
 * the symbolize program. Returns 0 or -ENOMEM. */
int stall_probe_new(StallProbe **ret);

/* Detaches everything, removes the tracefs instance; returns NULL. */
StallProbe *stall_probe_free(StallProbe *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(StallProbe *, stall_probe_free);
#define _cleanup_stall_probe_free_ _cleanup_(stall_probe_freep)

StallProbeMode stall_probe_mode(const StallProbe *p);

/* Why this mode, for status: "BPF fentry/fexit folio_wait_bit + folio_wait_stable +
 * __filemap_fdatawait_range with the BTF tracepoint writeback:folio_wait_writeback, waits
 * classified by caller", "BPF raw tracepoints
 * writeback:folio_wait_writeback + sched_switch, waits classified by caller; fentry/fexit: (why
 * not)", or what failed on the way ("BPF: ...; tracefs: ..."). Never NULL. */
const char *stall_probe_mode_reason(const StallProbe *p);

/* Whether the probe sorts waits by cause (StallStats.classified of what it reads). */
bool stall_probe_classified(const StallProbe *p);

/* Waits seen but not recorded (a map full, tracefs ring buffer overrun): when non-zero the
 * counts are lower bounds. Tracepoint hits that did not sleep are not waits and not lost. */
uint64_t stall_probe_lost(StallProbe *p);

/* Stable-pages waits recorded without their command (BPF mode: the table of commands, least
 * recently used out first, could take no entry): the top commands may miss some. Else 0. */
uint64_t stall_probe_lost_comms(StallProbe *p);

/* Whether the probe measures shadow waits (stalls.h; BPF mode, both modes of it, on kernels with
 * the tracepoints writeback:writeback_dirty_folio and writeback:sb_clear_inode_writeback:
 * Debian's 6.1 and 6.12 and later) and counts O_DIRECT writes (the tracepoint
 * iomap:iomap_dio_rw_begin: 6.2 and later; before, their bios, in the fentry mode).
 * The tracefs mode measures neither. */
bool stall_probe_shadows(const StallProbe *p);
bool stall_probe_direct(const StallProbe *p);

/* Shadow waits cost a writer that rewrites pages under writeback up to a tenth of its loops
 * (tests/bench/probe-overhead): their programs start attached, and the daemon detaches them
 * while no disk needs the figures. stall_probe_set_shadows() attaches (on) or detaches them;
 * returns 0, -EOPNOTSUPP (not in BPF mode, or the kernel lacks their tracepoints) or -errno.
 * Available: they could be attached. The epoch counts their attachments (StallStats). */
int stall_probe_set_shadows(StallProbe *p, bool on);
bool stall_probe_shadows_available(const StallProbe *p);
uint32_t stall_probe_shadow_epoch(const StallProbe *p);

/* Tracepoint hits that did not end in a sleep (the writeback completed between the check and
 * the sleep): not waits, not counted. BPF mode only (tracefs counts them as waits); else 0. */
uint64_t stall_probe_unmatched(StallProbe *p);

/* Raw-tracepoint mode: waits classified from two words of the stack at slots learned from a
 * walk, without a walk of their own. Else 0. */
uint64_t stall_probe_frame_reads(StallProbe *p);

/* Raw-tracepoint mode: audits of those answers by a walk that found another caller (up to
 * FRAME_AUDIT - 1 waits before it may have been counted under a wrong cause; the probe walks
 * every stack from then on). Else 0. */
uint64_t stall_probe_frame_mismatches(StallProbe *p);

/* Tracefs mode collects by draining a ring buffer: call this periodically (every few seconds;
 * read and list call it too) so that it does not overrun. No-op in the other modes.
 * Returns 0 or -errno. */
int stall_probe_poll(StallProbe *p);

/* Stats of one disk since start or the last reset. A disk with no waits reads 0 with
 * count 0 (that is a measurement). Returns 0 or -EOPNOTSUPP (mode unavailable), -errno. */
int stall_probe_read(StallProbe *p, dev_t devnum, StallStats *ret);

/* Stats of every bdi with at least one wait, sorted by devnum then bdi name. *ret is a
 * malloc()ed array. Returns 0, -EOPNOTSUPP (mode unavailable) or -errno. */
int stall_probe_list(StallProbe *p, StallStats **ret, size_t *ret_n);

/* Forgets the waits of one disk, or of all when devnum is 0. Returns 0, -EOPNOTSUPP, -errno. */
int stall_probe_reset(StallProbe *p, dev_t devnum);

/* ---- internal: the tracefs backend (stalls-tracefs.c; the BPF one is in stalls-bpf.h) ---- */

typedef struct StallTracefs StallTracefs;

/* Makes a private instance under the tracefs root and enables the wait tracepoint in it.
 * On failure returns -errno and a malloc()ed explanation in *ret_reason. */
int stall_tracefs_new(const char *tracefs_root, StallTracefs **ret, char **ret_reason);
StallTracefs *stall_tracefs_free(StallTracefs *t);
/* Drains the instance's trace_pipe into the per-bdi counts. */
int stall_tracefs_poll(StallTracefs *t);
/* Copies the accumulated counts (has_durations false). */
int stall_tracefs_list(StallTracefs *t, StallStats **ret, size_t *ret_n);
void stall_tracefs_reset(StallTracefs *t, const char *bdi_or_null);
uint64_t stall_tracefs_lost(StallTracefs *t);
bool stall_tracefs_classified(StallTracefs *t);
const char *stall_tracefs_event(StallTracefs *t);

/* Finds the mounted tracefs, mounting it on /sys/kernel/tracing when none is (*ret_mounted
 * says so). *ret is a static string. Returns 0 or -errno. */
int stall_tracefs_find_root(const char **ret, bool *ret_mounted);
