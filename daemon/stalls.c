/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stall observatory: pure histogram helpers, the StallProbe front, and its BPF backend
 * (built when HAVE_BPF is 1; the tracefs fallback lives in stalls-tracefs.c). */
#include <ctype.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include "log.h"
#include "stalls.h"
#include "util.h"

#ifndef HAVE_BPF
#define HAVE_BPF 0
#endif

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

#if HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "stalls.skel.h"
#endif

/* ---- pure helpers (the statistics are in stalls-stats.c) ---- */

int stall_parse_bdi_name(const char *bdi, dev_t *ret) {
        const char *p = bdi;
        dev_t d;
        int r;

        if (isempty(bdi))
                return -EINVAL;
        /* parse_devnum accepts trailing whitespace and signs from sscanf; be strict here. */
        for (; *p; p++)
                if (!isdigit((unsigned char) *p) && *p != ':')
                        return -EINVAL;
        r = parse_devnum(bdi, &d);
        if (r < 0)
                return -EINVAL;
        *ret = d;
        return 0;
}

typedef enum RuleMatch { MATCH_EXACT, MATCH_PREFIX, MATCH_SUBSTRING } RuleMatch;

typedef struct CallerRule {
        const char *name;
        RuleMatch match;
        unsigned kind;
} CallerRule;

/* Functions that call folio_wait_writeback() for reasons other than stable pages. Names from
 * 5.10-6.18; a caller missing here counts as a stable-pages wait. */
static const CallerRule caller_rules[] = {
        /* the wait functions themselves: look at their caller */
        { "folio_wait_writeback", MATCH_EXACT, STALL_KIND_SKIP },
        { "folio_wait_writeback_killable", MATCH_EXACT, STALL_KIND_SKIP },
        { "folio_wait_stable", MATCH_EXACT, STALL_KIND_SKIP },
        { "wait_on_page_writeback", MATCH_EXACT, STALL_KIND_SKIP },
        { "wait_for_stable_page", MATCH_EXACT, STALL_KIND_SKIP },
        /* the raw tracepoint's own frames between the program and the traced function; with
         * more than one probe on the tracepoint, __traceiter_* calls each of them */
        { "__bpf_trace_", MATCH_PREFIX, STALL_KIND_SKIP },
        { "__traceiter_", MATCH_PREFIX, STALL_KIND_SKIP },
        { "bpf_trace_run2", MATCH_EXACT, STALL_KIND_SKIP },
        /* data integrity: fsync, fdatasync, sync_file_range(WAIT_*), msync, sync, O_SYNC; the
         * WB_SYNC_ALL writeback loops wait for a page's earlier writeback before writing it
         * again (generic ones and the filesystems' own, e.g. ext4's mpage_prepare_extent_to_map,
         * btrfs' extent_write_cache_pages) */
        { "fdatawait", MATCH_SUBSTRING, STALL_KIND_SYNC },
        { "writeback_iter", MATCH_EXACT, STALL_KIND_SYNC },
        { "write_cache_pages", MATCH_SUBSTRING, STALL_KIND_SYNC },
        { "writepages", MATCH_SUBSTRING, STALL_KIND_SYNC },
        { "mpage_prepare_extent_to_map", MATCH_EXACT, STALL_KIND_SYNC },
        { "wait_on_page_writeback_range", MATCH_EXACT, STALL_KIND_SYNC },
        { "gfs2_write_jdata_batch", MATCH_EXACT, STALL_KIND_SYNC },
        /* truncation, invalidation, reclaim, migration, splitting, memory failure */
        { "truncate_inode_", MATCH_PREFIX, STALL_KIND_OTHER },
        { "truncate_cleanup_folio", MATCH_EXACT, STALL_KIND_OTHER },
        { "invalidate_inode_pages2", MATCH_PREFIX, STALL_KIND_OTHER },
        { "invalidate_mapping_pages", MATCH_EXACT, STALL_KIND_OTHER },
        { "mapping_evict_folio", MATCH_EXACT, STALL_KIND_OTHER },
        { "mapping_try_invalidate", MATCH_EXACT, STALL_KIND_OTHER },
        { "folio_unmap_invalidate", MATCH_EXACT, STALL_KIND_OTHER },
        { "filemap_release_folio", MATCH_EXACT, STALL_KIND_OTHER },
        { "shrink_folio_list", MATCH_EXACT, STALL_KIND_OTHER },
        { "shrink_page_list", MATCH_EXACT, STALL_KIND_OTHER },
        { "migrate_folio_unmap", MATCH_EXACT, STALL_KIND_OTHER },
        { "migrate_pages_batch", MATCH_EXACT, STALL_KIND_OTHER },
        { "migrate_pages", MATCH_EXACT, STALL_KIND_OTHER },
        { "__migrate_folio", MATCH_EXACT, STALL_KIND_OTHER },
        { "move_to_new_folio", MATCH_EXACT, STALL_KIND_OTHER },
        { "unmap_and_move", MATCH_EXACT, STALL_KIND_OTHER },
        { "__unmap_and_move", MATCH_EXACT, STALL_KIND_OTHER },
        { "collapse_file", MATCH_EXACT, STALL_KIND_OTHER },
        { "memory_failure", MATCH_EXACT, STALL_KIND_OTHER },
        { "me_pagecache_", MATCH_PREFIX, STALL_KIND_OTHER },
        { "__folio_split", MATCH_EXACT, STALL_KIND_OTHER },
        { "folio_split", MATCH_EXACT, STALL_KIND_OTHER },
        { "split_huge_page_to_list", MATCH_PREFIX, STALL_KIND_OTHER },
};

unsigned stall_classify_caller(const char *symbol) {
        char name[128];
        size_t n;

        if (isempty(symbol))
                return STALL_KIND_STABLE;
        n = MIN(strcspn(symbol, ". \t[+"), sizeof(name) - 1);
        memcpy(name, symbol, n);
        name[n] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(caller_rules); i++) {
                const CallerRule *rule = &caller_rules[i];
                bool m;

                switch (rule->match) {
                case MATCH_EXACT:
                        m = streq(name, rule->name);
                        break;
                case MATCH_PREFIX:
                        m = startswith(name, rule->name);
                        break;
                default:
                        m = strstr(name, rule->name) != NULL;
                }
                if (m)
                        return rule->kind;
        }
        return STALL_KIND_STABLE;
}

int stall_kallsyms_lookup(const char *path, const uint64_t *ips, size_t n,
                          char (*ret_names)[STALL_BPF_SYMBOL_LEN]) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ uint64_t *best = calloc(n + 1, sizeof(uint64_t));
        bool nonzero = false;
        char line[512];

        if (!best)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        for (size_t i = 0; i < n; i++)
                ret_names[i][0] = '\0';

        /* The symbol holding a return address is the last one starting before it (the call may
         * be the last instruction of a function: look one byte before, as the kernel does). */
        while (fgets(line, sizeof(line), f)) {
                unsigned long long addr;
                char type, name[256], module[128] = "";

                if (sscanf(line, "%llx %c %255s %127s", &addr, &type, name, module) < 3)
                        continue;
                if (addr == 0)
                        continue;
                nonzero = true;
                for (size_t i = 0; i < n; i++)
                        if (addr <= ips[i] - 1 && addr >= best[i]) {
                                best[i] = addr;
                                int k = snprintf(ret_names[i], STALL_BPF_SYMBOL_LEN, "%.96s+0x%llx", name,
                                                 (unsigned long long) (ips[i] - addr));
                                if (module[0] && k > 0 && k < STALL_BPF_SYMBOL_LEN)
                                        snprintf(ret_names[i] + k, STALL_BPF_SYMBOL_LEN - k, " %.20s",
                                                 module);
                        }
        }
        if (ferror(f))
                return -EIO;
        return nonzero ? 0 : -EPERM;
}

static bool is_space(char c) {
        return c == ' ' || c == '\t';
}

int stall_parse_trace_line(const char *line, char comm[static STALL_BPF_COMM_LEN],
                           char bdi[static STALL_BPF_BDI_LEN], uint64_t *ret_lost, const char **ret_symbol) {
        static const char *const events[] = { ": folio_wait_writeback: bdi ",
                                              ": wait_on_page_writeback: bdi " };
        const char *ev = NULL, *b, *e, *head, *cpu = NULL, *dash;
        unsigned long long lost;
        size_t evlen = 0, n;
        int off = 0;

        if (sscanf(line, " CPU:%*u [LOST %llu EVENTS]%n", &lost, &off) == 1 && off > 0) {
                if (ret_lost)
                        *ret_lost = lost;
                return 2;
        }
        if (startswith(line, " => ")) {
                if (ret_symbol)
                        *ret_symbol = line + 4;
                return 3;
        }

        for (size_t i = 0; i < ELEMENTSOF(events) && !ev; i++) {
                ev = strstr(line, events[i]);
                evlen = strlen(events[i]);
        }
        if (!ev)
                return 0;

        /* bdi: from after "bdi " to the last ": ino=" (the name itself holds a ':'). */
        b = ev + evlen;
        e = NULL;
        for (const char *p = strstr(b, ": ino="); p; p = strstr(p + 1, ": ino="))
                e = p;
        if (!e || e == b || (size_t) (e - b) >= STALL_BPF_BDI_LEN)
                return 0;

        /* header: "<comm>-<pid> [(<tgid>)] [<cpu>] <flags> <ts>" */
        for (const char *p = line; p < ev; p++) {
                const char *q;

                if (*p != '[' || p == line || !is_space(p[-1]))
                        continue;
                for (q = p + 1; q < ev && isdigit((unsigned char) *q); q++)
                        ;
                if (q > p + 1 && q < ev && *q == ']') {
                        cpu = p;
                        break;
                }
        }
        if (!cpu)
                return 0;
        head = line;
        while (is_space(*head))
                head++;
        e = cpu;
        while (e > head && is_space(e[-1]))
                e--;
        if (e > head && e[-1] == ')') { /* "(tgid)" with record-tgid */
                while (e > head && e[-1] != '(')
                        e--;
                if (e > head)
                        e--;
                while (e > head && is_space(e[-1]))
                        e--;
        }
        dash = NULL;
        for (const char *p = head; p < e; p++)
                if (*p == '-')
                        dash = p;
        if (!dash)
                return 0;
        for (const char *p = dash + 1; p < e; p++)
                if (!isdigit((unsigned char) *p))
                        return 0;

        n = MIN((size_t) (dash - head), (size_t) STALL_BPF_COMM_LEN - 1);
        memset(comm, 0, STALL_BPF_COMM_LEN);
        memcpy(comm, head, n);

        b = ev + evlen;
        for (e = NULL, ev = strstr(b, ": ino="); ev; ev = strstr(ev + 1, ": ino="))
                e = ev;
        memset(bdi, 0, STALL_BPF_BDI_LEN);
        memcpy(bdi, b, (size_t) (e - b));
        return 1;
}

static const char *const stall_probe_mode_table[_STALL_PROBE_MODE_MAX] = {
        [STALL_PROBE_UNAVAILABLE] = "unavailable",
        [STALL_PROBE_BPF] = "bpf",
        [STALL_PROBE_TRACEFS] = "tracefs",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(stall_probe_mode, StallProbeMode);

static int stats_compare(const void *a, const void *b) {
        const StallStats *x = a, *y = b;

        if (x->devnum != y->devnum)
                return x->devnum < y->devnum ? -1 : 1;
        return strncmp(x->bdi, y->bdi, sizeof(x->bdi));
}

static bool env_true(const char *name) {
        const char *e = getenv(name);

        return e && parse_boolean(e) > 0;
}

/* ---- the probe ---- */

typedef struct StallStackKind {
        uint32_t stack;
        unsigned kind;
} StallStackKind;

struct StallProbe {
        StallProbeMode mode;
        bool classified;
        char *reason;
        StallTracefs *tracefs;
#if HAVE_BPF
        struct stalls_bpf *skel;
        int ncpus;
        bool symbolizer;             /* the symbolize program names addresses, not kallsyms */
        StallStackKind *stack_kinds; /* the kinds of pending_stacks' entries, once resolved */
        size_t n_stack_kinds;
#endif
};

#if HAVE_BPF
static char libbpf_last_error[256];

static void set_last_error(const char *prefix, const char *b, const char *e) {
        size_t p = strlen(prefix), n = MIN((size_t) (e - b), sizeof(libbpf_last_error) - 1 - p);

        memcpy(libbpf_last_error, prefix, p);
        memcpy(libbpf_last_error + p, b, n);
        libbpf_last_error[p + n] = '\0';
}

/* Routes libbpf's messages to the debug log, line by line, and remembers the most telling
 * warning for the mode reason: the verifier's last line when a program was rejected. */
static int libbpf_print(enum libbpf_print_level level, const char *format, va_list ap) _printf_(2, 0);
static int libbpf_print(enum libbpf_print_level level, const char *format, va_list ap) {
        _cleanup_free_ char *buf = NULL;
        const char *end_log;
        char *line, *save = NULL;

        if (vasprintf(&buf, format, ap) < 0)
                return 0;
        strstrip_trailing(buf);

        end_log = strstr(buf, "-- END PROG LOAD LOG --");
        if (level == LIBBPF_WARN && end_log) {
                const char *e = end_log, *b;

                /* the last line that is not the statistics */
                for (;;) {
                        while (e > buf && (e[-1] == '\n' || e[-1] == ' '))
                                e--;
                        for (b = e; b > buf && b[-1] != '\n'; b--)
                                ;
                        if (b == buf || !(startswith(b, "processed ") || startswith(b, "verification time")))
                                break;
                        e = b;
                }
                if (e > b)
                        set_last_error("verifier: ", b, e);
        } else if (level == LIBBPF_WARN && buf[0] != '\0' && !strstr(buf, "PROG LOAD LOG") &&
                   !startswith(libbpf_last_error, "verifier: "))
                set_last_error("", buf, buf + strlen(buf));

        for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                log_debug("libbpf: %s", line);
        return 0;
}

/* The running kernel as KERNEL_VERSION(), 0 when it cannot be told. */
static unsigned running_kernel(void) {
        struct utsname u;
        unsigned v = 0;

        if (uname(&u) < 0 || parse_kernel_version(u.release, &v) < 0)
                return 0;
        return v;
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

/* Opens the skeleton with the programs this kernel needs; symbolize only when asked. */
static struct stalls_bpf *bpf_open(bool has_folio, unsigned kernel, bool symbolize, bool classify) {
        struct stalls_bpf *skel = stalls_bpf__open();
        bool four_args = kernel >= KERNEL_VERSION(5, 18, 0); /* sched_switch got prev_state */

        if (!skel)
                return NULL;
        bpf_program__set_autoload(skel->progs.folio_wait_writeback, has_folio);
        bpf_program__set_autoload(skel->progs.wait_on_page_writeback, !has_folio);
        bpf_program__set_autoload(skel->progs.sched_switch, four_args);
        bpf_program__set_autoload(skel->progs.sched_switch_3args, !four_args);
        bpf_program__set_autoload(skel->progs.symbolize, symbolize);
        skel->rodata->classify_callers = classify;
        return skel;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct stalls_bpf *, stalls_bpf__destroy);

/* Opens (bpf_open()) and loads the skeleton. Returns 0 and *ret, or -errno; *ret_opened says
 * whether the object was opened, that is whether loading failed. */
static int bpf_load(bool has_folio, unsigned kernel, bool symbolize, bool classify, struct stalls_bpf **ret,
                    bool *ret_opened) {
        _cleanup_(stalls_bpf__destroyp) struct stalls_bpf *skel =
                bpf_open(has_folio, kernel, symbolize, classify);
        int r;

        *ret_opened = skel;
        if (!skel)
                return -errno;
        r = stalls_bpf__load(skel);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(skel);
        return 0;
}

static int bpf_start(StallProbe *p, const char *tracefs, char **ret_error) {
        _cleanup_free_ char *folio = NULL, *page = NULL;
        _cleanup_(stalls_bpf__destroyp) struct stalls_bpf *skel = NULL;
        unsigned kernel = running_kernel();
        bool has_folio, has_page, classify, opened;
        int r;

        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
                r = -errno;
                *ret_error = strdup_printf("no kernel BTF (/sys/kernel/btf/vmlinux: %s)", strerror(-r));
                return r;
        }

        folio = strdup_printf("%s/events/writeback/folio_wait_writeback", tracefs);
        page = strdup_printf("%s/events/writeback/wait_on_page_writeback", tracefs);
        if (!folio || !page)
                return -ENOMEM;
        has_folio = access(folio, F_OK) == 0;
        has_page = access(page, F_OK) == 0;
        if (!has_folio && !has_page) {
                *ret_error = strdup_printf("no tracepoint writeback:folio_wait_writeback or "
                                           "writeback:wait_on_page_writeback in %s/events",
                                           tracefs);
                return -ENOENT;
        }

        libbpf_set_print(libbpf_print);
        libbpf_last_error[0] = '\0';

        /* Return addresses are named when first seen: by the symbolize program (a syscall
         * program calling bpf_snprintf("%pB"), 5.14+), else from /proc/kallsyms. */
        p->symbolizer = kernel >= KERNEL_VERSION(5, 14, 0) && !env_true("STABLEPAGES_STALLS_FORCE_KALLSYMS");
        classify = p->symbolizer || kallsyms_readable();
        r = bpf_load(has_folio, kernel, p->symbolizer, classify, &skel, &opened);
        if (r < 0 && opened && p->symbolizer) {
                log_debug_errno(
                        r, "Cannot load the symbolize program, naming addresses from /proc/kallsyms: %m");
                p->symbolizer = false;
                classify = kallsyms_readable();
                libbpf_last_error[0] = '\0';
                r = bpf_load(has_folio, kernel, false, classify, &skel, &opened);
        }
        if (r < 0 && !opened) {
                *ret_error = strdup_printf("opening the BPF object: %s", strerror(-r));
                return r;
        }
        if (r < 0) {
                *ret_error = strdup_printf("loading the BPF programs: %s%s%s", strerror(-r),
                                           libbpf_last_error[0] ? ": " : "", libbpf_last_error);
                return r;
        }
        r = stalls_bpf__attach(skel);
        if (r < 0) {
                *ret_error = strdup_printf("attaching to the tracepoints: %s%s%s", strerror(-r),
                                           libbpf_last_error[0] ? ": " : "", libbpf_last_error);
                return r;
        }

        r = libbpf_num_possible_cpus();
        if (r <= 0) {
                *ret_error = strdup_printf("cannot count the possible CPUs");
                return r < 0 ? r : -EIO;
        }
        p->ncpus = r;
        p->skel = TAKE_PTR(skel);
        p->classified = classify;
        if (!classify)
                log_warning(
                        "Cannot name kernel addresses (/proc/kallsyms hides them: kernel.kptr_restrict): "
                        "fsync waits will be counted as stable-pages waits.");
        p->reason = strdup_printf("BPF raw tracepoints writeback:%s + sched_switch, %s",
                                  has_folio ? "folio_wait_writeback" : "wait_on_page_writeback",
                                  classify ? "waits classified by caller"
                                           : "unclassified: /proc/kallsyms hides addresses");
        return p->reason ? 0 : -ENOMEM;
}

/* Names the return addresses ips ("function+0xoffset/0xsize [module]", "" when unknown): with
 * the symbolize program, else (or when running it is refused) from /proc/kallsyms, read once for
 * all of them. Returns 0 or -errno. */
static int bpf_name_addresses(StallProbe *p, const uint64_t *ips, size_t n,
                              char (*names)[STALL_BPF_SYMBOL_LEN]) {
        for (size_t i = 0; p->symbolizer && i < n; i++) {
                LIBBPF_OPTS(bpf_test_run_opts, opts);

                p->skel->bss->sym_ip = ips[i];
                p->skel->bss->sym_len = 0;
                if (bpf_prog_test_run_opts(bpf_program__fd(p->skel->progs.symbolize), &opts) < 0) {
                        log_debug_errno(errno, "Cannot run the symbolize program, naming addresses from "
                                               "/proc/kallsyms: %m");
                        p->symbolizer = false;
                        break;
                }
                names[i][0] = '\0';
                if (p->skel->bss->sym_len > 0) {
                        memcpy(names[i], p->skel->bss->sym_name, STALL_BPF_SYMBOL_LEN);
                        names[i][STALL_BPF_SYMBOL_LEN - 1] = '\0';
                }
        }
        if (p->symbolizer)
                return 0;
        return stall_kallsyms_lookup("/proc/kallsyms", ips, n, names);
}

/* The kinds of the return addresses ips: from the callers map, else named, classified and added
 * to it (so that the program classifies the next wait through them by itself). */
static void bpf_caller_kinds(StallProbe *p, const uint64_t *ips, size_t n, unsigned *ret_kinds) {
        int fd = bpf_map__fd(p->skel->maps.callers);
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
static unsigned bpf_pending_kind(StallProbe *p, uint32_t stack) {
        struct stall_bpf_stack st = {};
        unsigned kind = STALL_KIND_STABLE;
        bool in_wait = false;

        for (size_t i = 0; i < p->n_stack_kinds; i++)
                if (p->stack_kinds[i].stack == stack)
                        return p->stack_kinds[i].kind;
        if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.pending_stacks), &stack, &st) < 0)
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

static void bpf_stop(StallProbe *p) {
        if (p->skel)
                stalls_bpf__destroy(p->skel);
        p->skel = NULL;
        p->stack_kinds = mfree(p->stack_kinds);
        p->n_stack_kinds = 0;
}

static StallStats *stats_find_or_add(StallStats **list, size_t *n, size_t *allocated, const char *bdi,
                                     bool classified) {
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
        *s = (StallStats){ .has_durations = true, .classified = classified };
        memcpy(s->bdi, bdi, sizeof(s->bdi));
        s->bdi[sizeof(s->bdi) - 1] = '\0';
        (void) stall_parse_bdi_name(s->bdi, &s->devnum);
        return s;
}

static int bpf_list(StallProbe *p, StallStats **ret, size_t *ret_n) {
        _cleanup_free_ struct stall_bpf_hist *hv = NULL;
        _cleanup_free_ StallStats *list = NULL;
        struct stall_bpf_key bk, *prev_bk = NULL;
        struct stall_bpf_comm_key ck, *prev_ck = NULL;
        size_t n = 0, allocated = 0, kept = 0;
        int hfd = bpf_map__fd(p->skel->maps.hists), cfd = bpf_map__fd(p->skel->maps.comms);

        hv = calloc(p->ncpus, sizeof(*hv));
        if (!hv)
                return -ENOMEM;

        while (bpf_map_get_next_key(hfd, prev_bk, &bk) == 0) {
                struct stall_bpf_key key = bk;
                struct stall_bpf_hist h = {};
                StallStats *s;

                prev_bk = &bk;
                if (bpf_map_lookup_elem(hfd, &key, hv) < 0)
                        continue; /* deleted meanwhile */
                for (int c = 0; c < p->ncpus; c++) {
                        h.count += hv[c].count;
                        h.sum_us += hv[c].sum_us;
                        h.max_us = MAX(h.max_us, hv[c].max_us);
                        for (size_t i = 0; i < STALL_HIST_BUCKETS; i++)
                                h.slots[i] += hv[c].slots[i];
                }
                key.bdi[sizeof(key.bdi) - 1] = '\0';
                s = stats_find_or_add(&list, &n, &allocated, key.bdi, p->classified);
                if (!s)
                        return -ENOMEM;
                if (key.kind == STALL_KIND_PENDING)
                        key.kind = bpf_pending_kind(p, key.stack);
                switch (key.kind) {
                case STALL_KIND_SYNC:
                        s->sync_count += h.count;
                        s->sync_sum_usec += h.sum_us;
                        break;
                case STALL_KIND_OTHER:
                        s->other_count += h.count;
                        s->other_sum_usec += h.sum_us;
                        break;
                default:
                        s->count += h.count;
                        s->sum_usec += h.sum_us;
                        s->max_usec = MAX(s->max_usec, (uint64_t) h.max_us);
                        for (size_t i = 0; i < STALL_HIST_BUCKETS; i++)
                                s->hist[i] += h.slots[i];
                }
        }

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

        /* Drop bdis that were reset to nothing (entries exist, counts zero). */
        for (size_t i = 0; i < n; i++)
                if (list[i].count + list[i].sync_count + list[i].other_count > 0)
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

static int bpf_reset(StallProbe *p, const char *bdi) {
        int r;

        r = bpf_map_delete_bdi(bpf_map__fd(p->skel->maps.hists), sizeof(struct stall_bpf_key), bdi);
        if (r < 0)
                return r;
        return bpf_map_delete_bdi(bpf_map__fd(p->skel->maps.comms), sizeof(struct stall_bpf_comm_key), bdi);
}
#endif /* HAVE_BPF */

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

#if HAVE_BPF
        if (env_true("STABLEPAGES_STALLS_FORCE_TRACEFS"))
                bpf_error = strdup("skipped: STABLEPAGES_STALLS_FORCE_TRACEFS is set (test only)");
        else {
                r = bpf_start(p, root, &bpf_error);
                if (r == -ENOMEM)
                        goto oom;
                if (r >= 0) {
                        p->mode = STALL_PROBE_BPF;
                        goto done;
                }
                if (!bpf_error)
                        bpf_error = strdup(strerror(-r));
        }
#else
        bpf_error = strdup("not built with BPF support (-Dbpf=disabled or no clang/bpftool/libbpf)");
#endif
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
#if HAVE_BPF
        bpf_stop(p);
#endif
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
#if HAVE_BPF
        case STALL_PROBE_BPF:
                return p->skel->bss->lost;
#endif
        case STALL_PROBE_TRACEFS:
                (void) stall_tracefs_poll(p->tracefs);
                return stall_tracefs_lost(p->tracefs);
        default:
                return 0;
        }
}

uint64_t stall_probe_lost_comms(StallProbe *p) {
#if HAVE_BPF
        if (p->mode == STALL_PROBE_BPF)
                return p->skel->bss->lost_comms;
#endif
        return 0;
}

uint64_t stall_probe_unmatched(StallProbe *p) {
#if HAVE_BPF
        if (p->mode == STALL_PROBE_BPF)
                return p->skel->bss->unmatched;
#endif
        return 0;
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
#if HAVE_BPF
        case STALL_PROBE_BPF:
                r = bpf_list(p, &list, &n);
                break;
#endif
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
#if HAVE_BPF
        case STALL_PROBE_BPF:
                return bpf_reset(p, devnum ? bdi : NULL);
#endif
        case STALL_PROBE_TRACEFS:
                (void) stall_tracefs_poll(p->tracefs);
                stall_tracefs_reset(p->tracefs, devnum ? bdi : NULL);
                return 0;
        default:
                return -EOPNOTSUPP;
        }
}
