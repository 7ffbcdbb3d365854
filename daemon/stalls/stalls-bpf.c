/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The BPF backend of the stall probe (stalls-bpf.h): the light skeleton of one mode
 * (stalls-fentry.bpf.c where the kernel has BPF trampolines, else stalls-tp.bpf.c), the naming
 * and classification of the callers of a wait, and the maps read into StallStats. Built only
 * with BPF support (HAVE_BPF).
 *
 * A light skeleton loads its object through a loader program that the kernel runs: the kernel
 * relocates the programs against its own BTF and looks their attach targets up there, so
 * nothing parses /sys/kernel/btf/vmlinux (5.5 MB on 6.18) in user space, as a libbpf skeleton
 * does on every start. It needs CO-RE relocation in the kernel (5.17+). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <inttypes.h>
#include <sys/utsname.h>

#include "log.h"
#include "stalls-bpf.h"
#include "stalls-fentry.lskel.h"
#include "stalls-tp.lskel.h"
#include "util.h"

typedef struct StallStackKind {
        uint32_t stack;
        unsigned kind;
} StallStackKind;

struct StallBpf {
        struct stalls_fentry_bpf *fentry; /* the skeleton of the mode in use; the other is NULL */
        struct stalls_tp_bpf *tp;
        /* Its maps, symbolize program and globals: */
        int hists_fd, comms_fd, callers_fd, pending_stacks_fd, symbolize_fd;
        struct stall_bpf_globals *globals;
        int ncpus;
        bool classified;                  /* waits are classified by caller */
        char *reason;                     /* what the probe measures, for the mode reason */
        int shadow_progs[2], direct_prog; /* the optional raw tracepoints (stalls.bpf.h) */
        int shadow_links[2], direct_link; /* ... attached, or -1 */
        int shadows_fd;                   /* the map of shadow waits in progress */
        int shadow_cpu_fd;                /* each CPU's counts of shadow waits */
        uint64_t *shadow_base;            /* ncpus x STALL_BPF_SHADOW_COUNTERS: the counts of the slots
                                           * when their disk's figures were last reset */
        bool shadows_available;           /* the kernel has the shadow tracepoints */
        bool shadows, direct;             /* shadow waits and O_DIRECT writes are counted */
        uint32_t shadow_epoch;            /* attachments of the shadow programs so far */
        bool symbolizer;                  /* the symbolize program names addresses, not kallsyms */
        StallStackKind *stack_kinds;      /* the kinds of pending_stacks' entries, once resolved */
        size_t n_stack_kinds;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct stalls_fentry_bpf *, stalls_fentry_bpf__destroy);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct stalls_tp_bpf *, stalls_tp_bpf__destroy);

#define VERIFIER_LOG_SIZE (1U << 20)

/* The running kernel as KERNEL_VERSION(), 0 when it cannot be told. */
static unsigned running_kernel(void) {
        struct utsname u;
        unsigned v = 0;

        if (uname(&u) < 0 || parse_kernel_version(u.release, &v) < 0)
                return 0;
        return v;
}

/* Whether the kernel refuses BPF tracing programs (fentry/fexit) outright: a two-instruction
 * one with a BTF id that is no function (1) is rejected by the verifier with EINVAL where they
 * may load, and with EPERM (an LSM, lockdown) before any verification where they may not. About
 * 0.1 ms, against loading the whole object to see it fail. */
static bool bpf_tracing_refused(void) {
        struct bpf_insn insns[] = {
                { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
                { .code = BPF_JMP | BPF_EXIT },
        };
        LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FENTRY, .attach_btf_id = 1);
        int fd =
                bpf_prog_load(BPF_PROG_TYPE_TRACING, "probe_fentry", "GPL", insns, ELEMENTSOF(insns), &opts);

        if (fd >= 0) {
                (void) close(fd);
                return false;
        }
        return errno == EPERM;
}

/* Whether /proc/kallsyms shows addresses (kernel.kptr_restrict lets us see them): its first
 * lines, not the whole file. */
static bool kallsyms_readable(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/kallsyms", "re");
        char line[256];

        for (int i = 0; f && i < 8 && fgets(line, sizeof(line), f); i++) {
                unsigned long long addr;
                if (sscanf(line, "%llx", &addr) == 1 && addr != 0)
                        return true;
        }
        return false;
}

/* Points a skeleton's loader at log, for the verifier's log of a failed load, or at nothing. */
static void loader_log(struct bpf_loader_ctx *ctx, char *log) {
        ctx->log_level = log ? 1 : 0;
        ctx->log_size = log ? VERIFIER_LOG_SIZE : 0;
        ctx->log_buf = (uintptr_t) log;
}

/* The fentry mode: loads its skeleton (the verifier's log into log, when not NULL) and attaches
 * its programs. Returns 0 and *ret, or -errno; *ret_loaded says whether loading succeeded. */
static int fentry_start(bool classify, char *log, struct stalls_fentry_bpf **ret, bool *ret_loaded) {
        _cleanup_(stalls_fentry_bpf__destroyp) struct stalls_fentry_bpf *s = stalls_fentry_bpf__open();
        int r;

        *ret_loaded = false;
        if (!s)
                return -ENOMEM;
        s->rodata->classify_callers = classify;
        loader_log(&s->ctx, log);
        r = stalls_fentry_bpf__load(s);
        if (r < 0)
                return r;
        *ret_loaded = true;
        if (stalls_fentry_bpf__stable_enter__attach(s) < 0 ||
            stalls_fentry_bpf__fdatawait_enter__attach(s) < 0 ||
            stalls_fentry_bpf__wait_begin__attach(s) < 0 || stalls_fentry_bpf__writeback_exit__attach(s) < 0)
                return -errno;
        *ret = TAKE_PTR(s);
        return 0;
}

/* The raw-tracepoint mode, as fentry_start(). */
static int tp_start(bool classify, char *log, struct stalls_tp_bpf **ret, bool *ret_loaded) {
        _cleanup_(stalls_tp_bpf__destroyp) struct stalls_tp_bpf *s = stalls_tp_bpf__open();
        bool four_args = running_kernel() >= KERNEL_VERSION(5, 18, 0); /* sched_switch got prev_state */
        int r;

        *ret_loaded = false;
        if (!s)
                return -ENOMEM;
        s->rodata->classify_callers = classify;
        loader_log(&s->ctx, log);
        r = stalls_tp_bpf__load(s);
        if (r < 0)
                return r;
        *ret_loaded = true;
        if (stalls_tp_bpf__folio_wait_writeback__attach(s) < 0 ||
            (four_args ? stalls_tp_bpf__sched_switch__attach(s)
                       : stalls_tp_bpf__sched_switch_3args__attach(s)) < 0)
                return -errno;
        *ret = TAKE_PTR(s);
        return 0;
}

/* The verifier's last line in log that is not its statistics: what rejected a program; NULL
 * when there is none. */
static char *verifier_last_line(const char *log) {
        const char *e = log + strnlen(log, VERIFIER_LOG_SIZE), *b;

        for (;;) {
                while (e > log && (e[-1] == '\n' || e[-1] == ' '))
                        e--;
                for (b = e; b > log && b[-1] != '\n'; b--)
                        ;
                if (b == log || !(startswith(b, "processed ") || startswith(b, "verification time")))
                        break;
                e = b;
        }
        return e > b ? strndup(b, e - b) : NULL;
}

/* Starts one mode (fentry_start() or tp_start()) into p; when that fails, says why in
 * *ret_reason: the step, the error and, for a rejected program, the verifier's last line, from a
 * second load with the verifier's log (only then: logging costs). */
static int start_mode(StallBpf *p, bool fentry, bool classify, char **ret_reason) {
        _cleanup_free_ char *log = NULL, *line = NULL;
        bool loaded, loaded_again;
        int r;

        r = fentry ? fentry_start(classify, NULL, &p->fentry, &loaded)
                   : tp_start(classify, NULL, &p->tp, &loaded);
        if (r >= 0)
                return 0;
        if (!loaded && r != -ENOMEM && (log = calloc(1, VERIFIER_LOG_SIZE))) {
                struct stalls_fentry_bpf *f = NULL;
                struct stalls_tp_bpf *t = NULL;

                (void) (fentry ? fentry_start(classify, log, &f, &loaded_again)
                               : tp_start(classify, log, &t, &loaded_again));
                stalls_fentry_bpf__destroy(f);
                stalls_tp_bpf__destroy(t);
                line = verifier_last_line(log);
        }
        *ret_reason = strdup_printf("%s: %s%s%s",
                                    !loaded  ? "loading the BPF programs"
                                    : fentry ? "attaching to the wait functions"
                                             : "attaching to the tracepoints",
                                    strerror(-r), line ? ": verifier: " : "", line ?: "");
        return r;
}

/* Takes the map and program fds and the globals of the light skeleton s of either mode (their
 * maps and programs have the same names). */
#define STALL_BPF_TAKE(p, s)                                                                                \
        do {                                                                                                \
                (p)->hists_fd = (s)->maps.hists.map_fd;                                                     \
                (p)->comms_fd = (s)->maps.comms.map_fd;                                                     \
                (p)->callers_fd = (s)->maps.callers.map_fd;                                                 \
                (p)->pending_stacks_fd = (s)->maps.pending_stacks.map_fd;                                   \
                (p)->symbolize_fd = (s)->progs.symbolize.prog_fd;                                           \
                (p)->shadow_progs[0] = (s)->progs.shadow_dirty.prog_fd;                                     \
                (p)->shadow_progs[1] = (s)->progs.shadow_clear.prog_fd;                                     \
                (p)->direct_prog = (s)->progs.direct_write.prog_fd;                                         \
                (p)->shadows_fd = (s)->maps.shadows.map_fd;                                                 \
                (p)->shadow_cpu_fd = (s)->maps.shadow_cpu.map_fd;                                           \
                (p)->globals = &(s)->bss->globals;                                                          \
        } while (0)

/* Attaches the program prog_fd to the raw tracepoint tp. Returns the link's fd or -errno. */
static int raw_tp_attach(const char *tp, int prog_fd) {
        int fd = skel_raw_tracepoint_open(tp, prog_fd);
        return fd < 0 ? -errno : fd;
}

static void bpf_detach_shadows(StallBpf *p) {
        for (size_t i = 0; i < 2; i++)
                if (p->shadow_links[i] >= 0) {
                        (void) close(p->shadow_links[i]);
                        p->shadow_links[i] = -1;
                }
        p->shadows = false;
}

/* Attaches the shadow programs (both or neither), the end first, after forgetting the records
 * of waits in progress: their ends may have passed while the programs were detached. Returns 0
 * or -errno. */
static int bpf_attach_shadows(StallBpf *p) {
        static const char *const shadow_tps[2] = { "writeback_dirty_folio", "sb_clear_inode_writeback" };
        uint64_t key;
        int r;

        while (bpf_map_get_next_key(p->shadows_fd, NULL, &key) == 0)
                if (bpf_map_delete_elem(p->shadows_fd, &key) < 0)
                        break;
        p->globals->nr_shadows = 0;
        for (int i = 1; i >= 0; i--) {
                r = raw_tp_attach(shadow_tps[i], p->shadow_progs[i]);
                if (r < 0) {
                        log_debug_errno(r, "Stall probe: no shadow waits: raw tracepoint %s: %m",
                                        shadow_tps[i]);
                        bpf_detach_shadows(p);
                        return r;
                }
                p->shadow_links[i] = r;
        }
        p->shadows = true;
        p->shadow_epoch++;
        return 0;
}

/* O_DIRECT writes: the raw tracepoint iomap:iomap_dio_rw_begin (6.2+), else, in the fentry mode,
 * their bios as they end (fentry iomap_dio_bio_end_io). Returns what the mode reason says of
 * them. */
static const char *bpf_attach_direct(StallBpf *p, int direct_bio_prog) {
        int r;

        r = raw_tp_attach("iomap_dio_rw_begin", p->direct_prog);
        p->direct_link = r;
        p->direct = r >= 0;
        if (p->direct)
                return "O_DIRECT writes counted (tracepoint iomap:iomap_dio_rw_begin)";
        log_debug_errno(r, "Stall probe: no raw tracepoint iomap_dio_rw_begin: %m");
        if (direct_bio_prog < 0)
                return "O_DIRECT writes not counted (no tracepoint iomap:iomap_dio_rw_begin)";
        r = raw_tp_attach(NULL, direct_bio_prog);
        p->direct_link = r;
        p->direct = r >= 0;
        if (p->direct)
                return "O_DIRECT writes counted by their bios (no tracepoint iomap:iomap_dio_rw_begin; "
                       "fentry iomap_dio_bio_end_io)";
        log_debug_errno(r, "Stall probe: O_DIRECT writes not counted: fentry iomap_dio_bio_end_io: %m");
        return "O_DIRECT writes not counted (no tracepoint iomap:iomap_dio_rw_begin; fentry "
               "iomap_dio_bio_end_io refused)";
}

static int bpf_start(StallBpf *p, const char *tracefs, char **ret_reason) {
        _cleanup_free_ char *folio = NULL, *fentry_error = NULL;
        bool classify, fentry = false;
        int r;

        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
                r = -errno;
                *ret_reason = strdup_printf("no kernel BTF (/sys/kernel/btf/vmlinux: %s)", strerror(-r));
                return r;
        }
        folio = strdup_printf("%s/events/writeback/folio_wait_writeback", tracefs);
        if (!folio)
                return -ENOMEM;
        if (access(folio, F_OK) < 0) {
                *ret_reason = strdup_printf("no tracepoint writeback:folio_wait_writeback in %s/events (a "
                                            "kernel before 5.16)",
                                            tracefs);
                return -ENOENT;
        }

        /* Return addresses are named when first seen by the symbolize program (a syscall program
         * calling bpf_snprintf("%pB")), else, when running it is refused, from /proc/kallsyms. */
        p->symbolizer = !env_true("STABLEPAGES_STALLS_FORCE_KALLSYMS");
        classify = p->symbolizer || kallsyms_readable();

        /* fentry/fexit where the kernel has BPF trampolines; else, or when they fail, the raw
         * tracepoints. */
        if (env_true("STABLEPAGES_STALLS_FORCE_TRACEPOINTS"))
                fentry_error = strdup("skipped: STABLEPAGES_STALLS_FORCE_TRACEPOINTS is set (test only)");
        else if (bpf_tracing_refused())
                fentry_error = strdup("the kernel refuses BPF tracing programs (EPERM)");
        else if (start_mode(p, true, classify, &fentry_error) >= 0)
                fentry = true;
        if (!fentry) {
                log_debug("Stall probe: fentry/fexit unavailable: %s", fentry_error ?: "out of memory");
                r = start_mode(p, false, classify, ret_reason);
                if (r < 0)
                        return r;
        }
        if (fentry)
                STALL_BPF_TAKE(p, p->fentry);
        else
                STALL_BPF_TAKE(p, p->tp);
        p->shadow_links[0] = p->shadow_links[1] = -1;
        p->shadows_available = bpf_attach_shadows(p) >= 0;
        const char *shadows = p->shadows_available ? "shadow waits measurable"
                                                   : "no shadow waits (no tracepoints "
                                                     "writeback:writeback_dirty_folio and "
                                                     "writeback:sb_clear_inode_writeback)";
        const char *direct = bpf_attach_direct(p, fentry ? p->fentry->progs.direct_bio_end.prog_fd : -1);

        r = libbpf_num_possible_cpus();
        if (r <= 0) {
                *ret_reason = strdup_printf("cannot count the possible CPUs");
                return r < 0 ? r : -EIO;
        }
        p->ncpus = r;
        p->shadow_base = calloc((size_t) p->ncpus * STALL_BPF_SHADOW_COUNTERS, sizeof(uint64_t));
        if (!p->shadow_base)
                return -ENOMEM;
        p->classified = classify;
        if (!classify)
                log_warning(
                        "Cannot name kernel addresses (/proc/kallsyms hides them: kernel.kptr_restrict): "
                        "fsync waits will be counted as stable-pages waits.");
        if (fentry)
                p->reason = strdup_printf("BPF fentry/fexit folio_wait_bit + folio_wait_stable + "
                                          "__filemap_fdatawait_range with the BTF tracepoint "
                                          "writeback:folio_wait_writeback, %s; %s; %s",
                                          classify ? "waits classified by caller"
                                                   : "unclassified: /proc/kallsyms hides addresses",
                                          shadows, direct);
        else
                p->reason = strdup_printf(
                        "BPF raw tracepoints writeback:folio_wait_writeback + sched_switch, %s; %s; %s; "
                        "fentry/fexit: %s",
                        classify ? "waits classified by caller"
                                 : "unclassified: /proc/kallsyms hides addresses",
                        shadows, direct, fentry_error ?: "out of memory");
        return p->reason ? 0 : -ENOMEM;
}

/* Names the return addresses ips ("function+0xoffset/0xsize [module]", "" when unknown): with
 * the symbolize program, else (or when running it is refused) from /proc/kallsyms, read once for
 * all of them. Returns 0 or -errno. */
static int bpf_name_addresses(StallBpf *p, const uint64_t *ips, size_t n,
                              char (*names)[STALL_BPF_SYMBOL_LEN]) {
        for (size_t i = 0; p->symbolizer && i < n; i++) {
                LIBBPF_OPTS(bpf_test_run_opts, opts);

                p->globals->sym_ip = ips[i];
                p->globals->sym_len = 0;
                if (bpf_prog_test_run_opts(p->symbolize_fd, &opts) < 0) {
                        log_debug_errno(errno, "Cannot run the symbolize program, naming addresses from "
                                               "/proc/kallsyms: %m");
                        p->symbolizer = false;
                        break;
                }
                names[i][0] = '\0';
                if (p->globals->sym_len > 0) {
                        memcpy(names[i], p->globals->sym_name, STALL_BPF_SYMBOL_LEN);
                        names[i][STALL_BPF_SYMBOL_LEN - 1] = '\0';
                }
        }
        if (p->symbolizer)
                return 0;
        return stall_kallsyms_lookup("/proc/kallsyms", ips, n, names);
}

/* The kinds of the return addresses ips: from the callers map, else named, classified and added
 * to it (so that the program classifies the next wait through them by itself). */
static void bpf_caller_kinds(StallBpf *p, const uint64_t *ips, size_t n, unsigned *ret_kinds) {
        int fd = p->callers_fd;
        char names[STALL_BPF_STACK_DEPTH][STALL_BPF_SYMBOL_LEN];
        uint64_t unknown[STALL_BPF_STACK_DEPTH];
        size_t idx[STALL_BPF_STACK_DEPTH], n_unknown = 0;

        for (size_t i = 0; i < n && i < STALL_BPF_STACK_DEPTH; i++) {
                uint32_t kind;
                if (bpf_map_lookup_elem(fd, &ips[i], &kind) == 0)
                        ret_kinds[i] = kind;
                else {
                        ret_kinds[i] = STALL_KIND_STABLE;
                        idx[n_unknown] = i;
                        unknown[n_unknown++] = ips[i];
                }
        }
        if (n_unknown == 0 || bpf_name_addresses(p, unknown, n_unknown, names) < 0)
                return;
        for (size_t j = 0; j < n_unknown; j++) {
                uint32_t kind = stall_classify_caller(names[j]);
                log_debug("Stall probe: %#" PRIx64 " is %s: %s.", unknown[j],
                          names[j][0] ? names[j] : "unknown",
                          kind == STALL_KIND_SKIP    ? "a wait function"
                          : kind == STALL_KIND_SYNC  ? "data integrity"
                          : kind == STALL_KIND_OTHER ? "other"
                                                     : "stable pages");
                ret_kinds[idx[j]] = kind;
                (void) bpf_map_update_elem(fd, &unknown[j], &kind, BPF_ANY); /* full: named again later */
        }
}

/* The kind of a wait recorded as STALL_KIND_PENDING under stack, as the program would have
 * classified it had it known every address; remembered per stack. */
static unsigned bpf_pending_kind(StallBpf *p, uint32_t stack) {
        struct stall_bpf_stack st = {};
        unsigned kind = STALL_KIND_STABLE;
        bool in_wait = false;

        for (size_t i = 0; i < p->n_stack_kinds; i++)
                if (p->stack_kinds[i].stack == stack)
                        return p->stack_kinds[i].kind;
        if (bpf_map_lookup_elem(p->pending_stacks_fd, &stack, &st) < 0)
                return STALL_KIND_STABLE; /* its frames were not kept (the map was full) */
        size_t n = 0;
        unsigned kinds[STALL_BPF_STACK_DEPTH];
        while (n < STALL_BPF_STACK_DEPTH && st.ips[n] != 0)
                n++;
        bpf_caller_kinds(p, (const uint64_t *) st.ips, n, kinds);
        for (size_t f = 0; f < n; f++) {
                if (kinds[f] == STALL_KIND_SKIP)
                        in_wait = true;
                else if (in_wait) {
                        kind = kinds[f];
                        break;
                }
        }
        StallStackKind *l = reallocarray(p->stack_kinds, p->n_stack_kinds + 1, sizeof(*l));
        if (l) {
                p->stack_kinds = l;
                l[p->n_stack_kinds++] = (StallStackKind){ .stack = stack, .kind = kind };
        }
        return kind;
}

StallBpf *stall_bpf_free(StallBpf *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; (p->fentry || p->tp) && i < 3; i++) {
                int fd = i < 2 ? p->shadow_links[i] : p->direct_link;
                if (fd >= 0)
                        (void) close(fd);
        }
        stalls_fentry_bpf__destroy(p->fentry);
        stalls_tp_bpf__destroy(p->tp);
        free(p->stack_kinds);
        free(p->shadow_base);
        free(p->reason);
        return mfree(p);
}

static StallStats *stats_find_or_add(const StallBpf *p, StallStats **list, size_t *n, size_t *allocated,
                                     const char *bdi) {
        StallStats *s;

        for (size_t i = 0; i < *n; i++)
                if (strneq((*list)[i].bdi, bdi, STALL_BPF_BDI_LEN))
                        return &(*list)[i];
        if (*n >= *allocated) {
                size_t a = MAX(*allocated * 2, (size_t) 8);
                StallStats *l = reallocarray(*list, a, sizeof(*l));
                if (!l)
                        return NULL;
                *list = l;
                *allocated = a;
        }
        s = &(*list)[(*n)++];
        *s = (StallStats){ .has_durations = true,
                           .classified = p->classified,
                           .has_shadows = p->shadows,
                           .shadow_epoch = p->shadow_epoch,
                           .has_direct = p->direct };
        memcpy(s->bdi, bdi, sizeof(s->bdi));
        s->bdi[sizeof(s->bdi) - 1] = '\0';
        (void) stall_parse_bdi_name(s->bdi, &s->devnum);
        return s;
}

/* The histogram of one key: the per-CPU values hv summed into *ret. */
static void hist_sum(const StallBpf *p, const struct stall_bpf_hist *hv, struct stall_bpf_hist *ret) {
        *ret = (struct stall_bpf_hist){};
        for (int c = 0; c < p->ncpus; c++) {
                ret->count += hv[c].count;
                ret->sum_us += hv[c].sum_us;
                ret->max_us = MAX(ret->max_us, hv[c].max_us);
                for (size_t i = 0; i < STALL_HIST_BUCKETS; i++)
                        ret->slots[i] += hv[c].slots[i];
        }
}

/* Adds the histogram h of waits of kind (no longer STALL_KIND_PENDING) to the figures s. */
static void stats_add_hist(StallStats *s, unsigned kind, const struct stall_bpf_hist *h) {
        switch (kind) {
        case STALL_KIND_SYNC:
                s->sync_count += h->count;
                s->sync_sum_usec += h->sum_us;
                break;
        case STALL_KIND_OTHER:
                s->other_count += h->count;
                s->other_sum_usec += h->sum_us;
                break;
        case STALL_KIND_SHADOW: /* count: those a slot of shadow_cpu did not count; slots: the timed */
                s->shadow_count += h->count;
                s->shadow_sum_usec += h->sum_us;
                s->shadow_max_usec = MAX(s->shadow_max_usec, (uint64_t) h->max_us);
                for (size_t i = 0; i < STALL_HIST_BUCKETS; i++) {
                        s->shadow_timed += h->slots[i];
                        s->shadow_hist[i] += h->slots[i];
                }
                break;
        case STALL_KIND_DIRECT:
                s->direct_count += h->count;
                break;
        default:
                s->count += h->count;
                s->sum_usec += h->sum_us;
                s->max_usec = MAX(s->max_usec, (uint64_t) h->max_us);
                for (size_t i = 0; i < STALL_HIST_BUCKETS; i++)
                        s->hist[i] += h->slots[i];
        }
}

/* The figures of each bdi in the hists map, appended to *list (*n of *allocated). Returns 0 or
 * -ENOMEM. */
static int list_hists(StallBpf *p, StallStats **list, size_t *n, size_t *allocated) {
        _cleanup_free_ struct stall_bpf_hist *hv = NULL;
        struct stall_bpf_key bk, *prev_bk = NULL;
        int hfd = p->hists_fd;

        hv = calloc(p->ncpus, sizeof(*hv));
        if (!hv)
                return -ENOMEM;

        while (bpf_map_get_next_key(hfd, prev_bk, &bk) == 0) {
                struct stall_bpf_key key = bk;
                struct stall_bpf_hist h;
                StallStats *s;

                prev_bk = &bk;
                if (bpf_map_lookup_elem(hfd, &key, hv) < 0)
                        continue; /* deleted meanwhile */
                hist_sum(p, hv, &h);
                key.bdi[sizeof(key.bdi) - 1] = '\0';
                s = stats_find_or_add(p, list, n, allocated, key.bdi);
                if (!s)
                        return -ENOMEM;
                if (key.kind == STALL_KIND_PENDING)
                        key.kind = bpf_pending_kind(p, key.stack);
                stats_add_hist(s, key.kind, &h);
        }
        return 0;
}

/* Each CPU's counts of shadow waits (shadow_cpu); NULL with errno set when they cannot be read. */
static struct stall_bpf_shadow_cpu *shadow_cpu_read(const StallBpf *p) {
        _cleanup_free_ struct stall_bpf_shadow_cpu *cpus = calloc(p->ncpus, sizeof(*cpus));
        uint32_t zero = 0;

        if (!cpus)
                return NULL;
        if (bpf_map_lookup_elem(p->shadow_cpu_fd, &zero, cpus) < 0)
                return NULL;
        return TAKE_PTR(cpus);
}

/* The name of the disk that holds a slot of shadow_cpu, NUL-terminated into name; false when the
 * slot is free. */
static bool shadow_counter_name(const struct stall_bpf_shadow_counter *c,
                                char name[static STALL_BPF_BDI_LEN]) {
        memcpy(name, c->name, STALL_BPF_BDI_LEN);
        name[STALL_BPF_BDI_LEN - 1] = '\0';
        return name[0] != '\0';
}

/* Adds the shadow waits counted in shadow_cpu since their disk's last reset to the figures of
 * their bdi in *list (*n of *allocated). Returns 0 or -errno. */
static int list_shadow_counts(StallBpf *p, StallStats **list, size_t *n, size_t *allocated) {
        _cleanup_free_ struct stall_bpf_shadow_cpu *cpus = shadow_cpu_read(p);

        if (!cpus)
                return -errno;
        for (int c = 0; c < p->ncpus; c++)
                for (size_t i = 0; i < STALL_BPF_SHADOW_COUNTERS; i++) {
                        const struct stall_bpf_shadow_counter *sc = &cpus[c].counters[i];
                        uint64_t base = p->shadow_base[(size_t) c * STALL_BPF_SHADOW_COUNTERS + i];
                        char name[STALL_BPF_BDI_LEN];
                        StallStats *s;

                        if (!shadow_counter_name(sc, name) || sc->count <= base)
                                continue;
                        s = stats_find_or_add(p, list, n, allocated, name);
                        if (!s)
                                return -ENOMEM;
                        s->shadow_count += sc->count - base;
                }
        return 0;
}

/* Adds the commands of the comms map to the figures of their bdi in list (n entries). */
static void list_comms(StallBpf *p, StallStats *list, size_t n) {
        struct stall_bpf_comm_key ck, *prev_ck = NULL;
        int cfd = p->comms_fd;

        while (bpf_map_get_next_key(cfd, prev_ck, &ck) == 0) {
                struct stall_bpf_comm_key key = ck;
                uint64_t total = 0;
                unsigned kind;

                prev_ck = &ck;
                kind = key.kind == STALL_KIND_PENDING ? bpf_pending_kind(p, key.stack) : key.kind;
                if (kind != STALL_KIND_STABLE)
                        continue; /* commands are listed for the stable-pages waits only */
                if (bpf_map_lookup_elem(cfd, &key, &total) < 0)
                        continue;
                key.comm[sizeof(key.comm) - 1] = '\0';
                key.bdi[sizeof(key.bdi) - 1] = '\0';
                for (size_t i = 0; i < n; i++)
                        if (strneq(list[i].bdi, key.bdi, sizeof(key.bdi))) {
                                stall_stats_add_comm(&list[i], key.comm, total);
                                break;
                        }
        }
}

int stall_bpf_list(StallBpf *p, StallStats **ret, size_t *ret_n) {
        _cleanup_free_ StallStats *list = NULL;
        size_t n = 0, allocated = 0, kept = 0;
        int r;

        r = list_hists(p, &list, &n, &allocated);
        if (r < 0)
                return r;
        r = list_shadow_counts(p, &list, &n, &allocated);
        if (r < 0)
                return r;
        list_comms(p, list, n);

        /* Drop bdis that were reset to nothing (entries exist, counts zero). */
        for (size_t i = 0; i < n; i++)
                if (list[i].count + list[i].sync_count + list[i].other_count + list[i].shadow_count +
                            list[i].direct_count >
                    0)
                        list[kept++] = list[i];

        *ret = TAKE_PTR(list);
        *ret_n = kept;
        return 0;
}

/* Deletes every key of fd whose first STALL_BPF_BDI_LEN bytes equal bdi (all keys when bdi is
 * NULL). */
static int bpf_map_delete_bdi(int fd, size_t key_size, const char *bdi) {
        _cleanup_free_ char *keys = NULL;
        size_t n = 0, allocated = 0;
        char key[sizeof(struct stall_bpf_comm_key)], *prev = NULL;
        char next[sizeof(struct stall_bpf_comm_key)];

        if (key_size > sizeof(key))
                return -EINVAL;
        while (bpf_map_get_next_key(fd, prev, next) == 0) {
                memcpy(key, next, key_size);
                prev = key;
                if (bdi && !strneq(key, bdi, STALL_BPF_BDI_LEN))
                        continue;
                if (n >= allocated) {
                        size_t a = MAX(allocated * 2, (size_t) 16);
                        char *k = reallocarray(keys, a, key_size);
                        if (!k)
                                return -ENOMEM;
                        keys = k;
                        allocated = a;
                }
                memcpy(keys + n * key_size, key, key_size);
                n++;
        }
        for (size_t i = 0; i < n; i++)
                (void) bpf_map_delete_elem(fd, keys + i * key_size);
        return 0;
}

/* Takes the counts of the slots of shadow_cpu held by bdi (all when NULL) as their new zero: the
 * program adds to them without a lock, so they are not written from here. */
static int shadow_counts_reset(StallBpf *p, const char *bdi) {
        _cleanup_free_ struct stall_bpf_shadow_cpu *cpus = shadow_cpu_read(p);

        if (!cpus)
                return -errno;
        for (int c = 0; c < p->ncpus; c++)
                for (size_t i = 0; i < STALL_BPF_SHADOW_COUNTERS; i++) {
                        char name[STALL_BPF_BDI_LEN];

                        if (shadow_counter_name(&cpus[c].counters[i], name) &&
                            (!bdi || strneq(name, bdi, sizeof(name))))
                                p->shadow_base[(size_t) c * STALL_BPF_SHADOW_COUNTERS + i] =
                                        cpus[c].counters[i].count;
                }
        return 0;
}

int stall_bpf_reset(StallBpf *p, const char *bdi) {
        int r;

        r = shadow_counts_reset(p, bdi);
        if (r < 0)
                return r;
        r = bpf_map_delete_bdi(p->hists_fd, sizeof(struct stall_bpf_key), bdi);
        if (r < 0)
                return r;
        return bpf_map_delete_bdi(p->comms_fd, sizeof(struct stall_bpf_comm_key), bdi);
}

int stall_bpf_new(const char *tracefs_root, StallBpf **ret, char **ret_reason) {
        _cleanup_(stall_bpf_freep) StallBpf *p = calloc(1, sizeof(StallBpf));
        int r;

        if (!p)
                return -ENOMEM;
        r = bpf_start(p, tracefs_root, ret_reason);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

bool stall_bpf_classified(const StallBpf *p) {
        return p->classified;
}

const char *stall_bpf_description(const StallBpf *p) {
        return p->reason;
}

uint64_t stall_bpf_lost(const StallBpf *p) {
        return p->globals->lost;
}

uint64_t stall_bpf_lost_comms(const StallBpf *p) {
        return p->globals->lost_comms;
}

bool stall_bpf_shadows(const StallBpf *p) {
        return p->shadows;
}

int stall_bpf_set_shadows(StallBpf *p, bool on) {
        if (!p->shadows_available)
                return -EOPNOTSUPP;
        if (on == p->shadows)
                return 0;
        if (!on) {
                bpf_detach_shadows(p);
                return 0;
        }
        return bpf_attach_shadows(p);
}

bool stall_bpf_shadows_available(const StallBpf *p) {
        return p->shadows_available;
}

uint32_t stall_bpf_shadow_epoch(const StallBpf *p) {
        return p->shadow_epoch;
}

bool stall_bpf_direct(const StallBpf *p) {
        return p->direct;
}

uint64_t stall_bpf_unmatched(const StallBpf *p) {
        return p->globals->unmatched;
}

uint64_t stall_bpf_frame_reads(const StallBpf *p) {
        return p->globals->frame_reads;
}

uint64_t stall_bpf_frame_mismatches(const StallBpf *p) {
        return p->globals->frame_mismatches;
}
