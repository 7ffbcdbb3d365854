/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stall probe's front (stall-probe.h), which runs the BPF backend (stalls-bpf.c, built when
 * HAVE_BPF is 1) or the tracefs fallback (stalls-tracefs.c). The pure parsers it shares with
 * them are in the core library (core/stalls-parse.c). */
#include "log.h"
#include "stall-probe.h"
#include "stalls-bpf.h"
#include "util.h"

static int stats_compare(const void *a, const void *b) {
        const StallStats *x = a, *y = b;

        if (x->devnum != y->devnum)
                return x->devnum < y->devnum ? -1 : 1;
        return strncmp(x->bdi, y->bdi, sizeof(x->bdi));
}

/* ---- the probe ---- */

struct StallProbe {
        StallProbeMode mode;
        bool classified;
        char *reason;
        StallTracefs *tracefs;
        StallBpf *bpf;
};

static const char *strnull(const char *s) {
        return s ?: "(null)";
}

int stall_probe_new(StallProbe **ret) {
        _cleanup_free_ char *bpf_error = NULL, *tracefs_error = NULL;
        StallProbe *p;
        const char *root = NULL;
        bool mounted = false;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;

        if (env_true("STABLEPAGES_STALLS_FORCE_UNAVAILABLE")) {
                p->reason = strdup("forced by STABLEPAGES_STALLS_FORCE_UNAVAILABLE (test only)");
                goto done;
        }

        r = stall_tracefs_find_root(&root, &mounted);
        if (r < 0) {
                p->reason = strdup_printf("tracefs is not mounted and cannot be mounted on "
                                          "/sys/kernel/tracing: %s",
                                          strerror(-r));
                goto done;
        }
        if (mounted)
                log_notice("Mounted tracefs on %s for the stall probe.", root);

        if (HAVE_BPF && env_true("STABLEPAGES_STALLS_FORCE_TRACEFS"))
                bpf_error = strdup("skipped: STABLEPAGES_STALLS_FORCE_TRACEFS is set (test only)");
        else {
                r = stall_bpf_new(root, &p->bpf, &bpf_error);
                if (r == -ENOMEM)
                        goto oom;
                if (r >= 0) {
                        p->mode = STALL_PROBE_BPF;
                        p->classified = stall_bpf_classified(p->bpf);
                        p->reason = strdup(stall_bpf_description(p->bpf));
                        goto done;
                }
                if (!bpf_error)
                        bpf_error = strdup(strerror(-r));
        }
        log_debug("Stall probe: BPF unavailable: %s", strnull(bpf_error));

        r = stall_tracefs_new(root, &p->tracefs, &tracefs_error);
        if (r >= 0) {
                p->mode = STALL_PROBE_TRACEFS;
                p->classified = stall_tracefs_classified(p->tracefs);
                p->reason = strdup_printf("tracefs: counting writeback:%s without durations, %s (BPF: %s)",
                                          stall_tracefs_event(p->tracefs),
                                          p->classified ? "waits classified by caller" : "unclassified",
                                          strnull(bpf_error));
                goto done;
        }
        if (r == -ENOMEM)
                goto oom;
        p->reason = strdup_printf("BPF: %s; tracefs: %s", strnull(bpf_error), tracefs_error ?: strerror(-r));

done:
        if (!p->reason)
                goto oom;
        if (p->mode == STALL_PROBE_UNAVAILABLE)
                log_warning("Stall probe unavailable: %s", p->reason);
        else
                log_debug("Stall probe: %s.", p->reason);
        *ret = p;
        return 0;
oom:
        stall_probe_free(p);
        return -ENOMEM;
}

StallProbe *stall_probe_free(StallProbe *p) {
        if (!p)
                return NULL;
        stall_bpf_free(p->bpf);
        stall_tracefs_free(p->tracefs);
        free(p->reason);
        return mfree(p);
}

StallProbeMode stall_probe_mode(const StallProbe *p) {
        return p->mode;
}

const char *stall_probe_mode_reason(const StallProbe *p) {
        return p->reason;
}

bool stall_probe_classified(const StallProbe *p) {
        return p->classified;
}

uint64_t stall_probe_lost(StallProbe *p) {
        switch (p->mode) {
        case STALL_PROBE_BPF:
                return stall_bpf_lost(p->bpf);
        case STALL_PROBE_TRACEFS:
                (void) stall_tracefs_poll(p->tracefs);
                return stall_tracefs_lost(p->tracefs);
        default:
                return 0;
        }
}

uint64_t stall_probe_lost_comms(StallProbe *p) {
        return p->mode == STALL_PROBE_BPF ? stall_bpf_lost_comms(p->bpf) : 0;
}

bool stall_probe_shadows(const StallProbe *p) {
        return p->mode == STALL_PROBE_BPF && stall_bpf_shadows(p->bpf);
}

bool stall_probe_shadows_available(const StallProbe *p) {
        return p->mode == STALL_PROBE_BPF && stall_bpf_shadows_available(p->bpf);
}

uint32_t stall_probe_shadow_epoch(const StallProbe *p) {
        return p->mode == STALL_PROBE_BPF ? stall_bpf_shadow_epoch(p->bpf) : 0;
}

int stall_probe_set_shadows(StallProbe *p, bool on) {
        return p->mode == STALL_PROBE_BPF ? stall_bpf_set_shadows(p->bpf, on) : -EOPNOTSUPP;
}

bool stall_probe_direct(const StallProbe *p) {
        return p->mode == STALL_PROBE_BPF && stall_bpf_direct(p->bpf);
}

uint64_t stall_probe_unmatched(StallProbe *p) {
        return p->mode == STALL_PROBE_BPF ? stall_bpf_unmatched(p->bpf) : 0;
}

uint64_t stall_probe_frame_reads(StallProbe *p) {
        return p->mode == STALL_PROBE_BPF ? stall_bpf_frame_reads(p->bpf) : 0;
}

uint64_t stall_probe_frame_mismatches(StallProbe *p) {
        return p->mode == STALL_PROBE_BPF ? stall_bpf_frame_mismatches(p->bpf) : 0;
}

int stall_probe_poll(StallProbe *p) {
        if (p->mode == STALL_PROBE_TRACEFS)
                return stall_tracefs_poll(p->tracefs);
        return 0;
}

int stall_probe_list(StallProbe *p, StallStats **ret, size_t *ret_n) {
        StallStats *list = NULL;
        size_t n = 0;
        int r;

        switch (p->mode) {
        case STALL_PROBE_BPF:
                r = stall_bpf_list(p->bpf, &list, &n);
                break;
        case STALL_PROBE_TRACEFS:
                r = stall_tracefs_list(p->tracefs, &list, &n);
                break;
        default:
                return -EOPNOTSUPP;
        }
        if (r < 0)
                return r;
        if (n > 1)
                qsort(list, n, sizeof(*list), stats_compare);
        *ret = list;
        *ret_n = n;
        return 0;
}

int stall_probe_read(StallProbe *p, dev_t devnum, StallStats *ret) {
        _cleanup_free_ StallStats *list = NULL;
        StallStats s = {
                .devnum = devnum,
                .has_durations = p->mode == STALL_PROBE_BPF,
                .classified = p->classified,
                .has_shadows = stall_probe_shadows(p),
                .shadow_epoch = stall_probe_shadow_epoch(p),
                .has_direct = stall_probe_direct(p),
        };
        size_t n;
        int r;

        r = stall_probe_list(p, &list, &n);
        if (r < 0)
                return r;
        format_devnum(devnum, s.bdi);
        for (size_t i = 0; i < n; i++)
                if (list[i].devnum == devnum && devnum != 0) {
                        memcpy(s.bdi, list[i].bdi, sizeof(s.bdi));
                        stall_stats_merge(&s, &list[i]);
                }
        *ret = s;
        return 0;
}

int stall_probe_reset(StallProbe *p, dev_t devnum) {
        char bdi[32];

        if (devnum != 0)
                format_devnum(devnum, bdi);
        switch (p->mode) {
        case STALL_PROBE_BPF:
                return stall_bpf_reset(p->bpf, devnum ? bdi : NULL);
        case STALL_PROBE_TRACEFS:
                (void) stall_tracefs_poll(p->tracefs);
                stall_tracefs_reset(p->tracefs, devnum ? bdi : NULL);
                return 0;
        default:
                return -EOPNOTSUPP;
        }
}
