/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure parsers of the stall observatory (stalls.h): bdi names, the callers of a wait, names
 * of kernel addresses from kallsyms, tracefs trace_pipe lines, the probe modes' names. Shared by
 * the probe's backends and, through the core library, by everything that reads its figures. */
#include <ctype.h>

#include "stalls.h"
#include "util.h"

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
        /* fentry mode: the BPF trampoline between the program and the traced function */
        { "bpf_trampoline_", MATCH_PREFIX, STALL_KIND_SKIP },
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

/* The wait event in line and its bdi name: from after "bdi " to the last ": ino=" (the name
 * itself may hold a ':'). Returns where the event's name starts (": folio_wait_writeback:
 * ..."), or NULL when line holds no such event or its bdi name is empty or too long. */
static const char *trace_find_event(const char *line, const char **ret_bdi, size_t *ret_bdi_len) {
        static const char *const events[] = { ": folio_wait_writeback: bdi ",
                                              ": wait_on_page_writeback: bdi " };

        for (size_t i = 0; i < ELEMENTSOF(events); i++) {
                const char *ev = strstr(line, events[i]), *bdi, *end = NULL;

                if (!ev)
                        continue;
                bdi = ev + strlen(events[i]);
                for (const char *p = strstr(bdi, ": ino="); p; p = strstr(p + 1, ": ino="))
                        end = p;
                if (!end || end == bdi || (size_t) (end - bdi) >= STALL_BPF_BDI_LEN)
                        return NULL;
                *ret_bdi = bdi;
                *ret_bdi_len = (size_t) (end - bdi);
                return ev;
        }
        return NULL;
}

/* The "[<cpu>]" of the event's header, before ev: a '[' after a blank, digits and ']'. NULL
 * when there is none. */
static const char *trace_find_cpu(const char *line, const char *ev) {
        for (const char *p = line + 1; p < ev; p++) {
                const char *q = p + 1;

                if (*p != '[' || !is_space(p[-1]))
                        continue;
                while (q < ev && isdigit((unsigned char) *q))
                        q++;
                if (q > p + 1 && q < ev && *q == ']')
                        return p;
        }
        return NULL;
}

/* The command of the header "<comm>-<pid> [(<tgid>)] " that ends before cpu (the comm may hold
 * blanks and dashes: the pid follows the last dash). Returns false when the header does not
 * end in "-<pid>". */
static bool trace_find_comm(const char *line, const char *cpu, const char **ret_comm, size_t *ret_len) {
        const char *head = line, *end = cpu, *dash = NULL;

        while (is_space(*head))
                head++;
        while (end > head && is_space(end[-1]))
                end--;
        if (end > head && end[-1] == ')') { /* "(tgid)" with record-tgid */
                while (end > head && end[-1] != '(')
                        end--;
                if (end > head)
                        end--;
                while (end > head && is_space(end[-1]))
                        end--;
        }
        for (const char *p = head; p < end; p++)
                if (*p == '-')
                        dash = p;
        if (!dash)
                return false;
        for (const char *p = dash + 1; p < end; p++)
                if (!isdigit((unsigned char) *p))
                        return false;
        *ret_comm = head;
        *ret_len = (size_t) (dash - head);
        return true;
}

StallTraceLine stall_parse_trace_line(const char *line, char comm[static STALL_BPF_COMM_LEN],
                                      char bdi[static STALL_BPF_BDI_LEN], uint64_t *ret_lost,
                                      const char **ret_symbol) {
        const char *ev, *cpu, *bdi_name, *comm_name;
        size_t bdi_len, comm_len;
        unsigned long long lost;
        int off = 0;

        if (sscanf(line, " CPU:%*u [LOST %llu EVENTS]%n", &lost, &off) == 1 && off > 0) {
                if (ret_lost)
                        *ret_lost = lost;
                return STALL_TRACE_LOST;
        }
        if (startswith(line, " => ")) {
                if (ret_symbol)
                        *ret_symbol = line + 4;
                return STALL_TRACE_FRAME;
        }

        ev = trace_find_event(line, &bdi_name, &bdi_len);
        cpu = ev ? trace_find_cpu(line, ev) : NULL;
        if (!cpu || !trace_find_comm(line, cpu, &comm_name, &comm_len))
                return STALL_TRACE_OTHER;

        memset(comm, 0, STALL_BPF_COMM_LEN);
        memcpy(comm, comm_name, MIN(comm_len, (size_t) STALL_BPF_COMM_LEN - 1));
        memset(bdi, 0, STALL_BPF_BDI_LEN);
        memcpy(bdi, bdi_name, bdi_len);
        return STALL_TRACE_EVENT;
}

static const char *const stall_probe_mode_table[_STALL_PROBE_MODE_MAX] = {
        [STALL_PROBE_UNAVAILABLE] = "unavailable",
        [STALL_PROBE_BPF] = "bpf",
        [STALL_PROBE_TRACEFS] = "tracefs",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(stall_probe_mode, StallProbeMode);
