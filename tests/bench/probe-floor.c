/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Benchmark helper (tests/bench/probe-overhead, modes floor-tp and floor-fentry): attaches BPF
 * programs that return at once ("r0 = 0; exit") where one of the stall probe's modes attaches
 * its own, writes the mode to the ready file and holds them until SIGTERM or SIGINT. What they
 * cost is what any probe with programs at those points pays before it does any work: the floor
 * under the probe's cost in that mode.
 *   floor-tp:     raw tracepoints sched_switch and folio_wait_writeback (stalls-tp.bpf.c);
 *   floor-fentry: fentry folio_wait_stable and __filemap_fdatawait_range, tp_btf
 *                 folio_wait_writeback, fexit folio_wait_bit (stalls-fentry.bpf.c);
 *   floor-shadow: raw tracepoints writeback_dirty_folio and sb_clear_inode_writeback, where
 *                 both modes measure shadow waits (stalls.bpf.h).
 * Usage: probe-floor tp|fentry|shadow READY-FILE. Exits 1 naming the program the kernel refused. */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct FloorProgram {
        const char *name;   /* the program's name (bpftool, the bench's BPF statistics) */
        const char *target; /* tracepoint or kernel function */
        enum bpf_prog_type type;
        enum bpf_attach_type attach;
} FloorProgram;

static const FloorProgram tp_programs[] = {
        { "floor_switch", "sched_switch", BPF_PROG_TYPE_RAW_TRACEPOINT },
        { "floor_wait_tp", "folio_wait_writeback", BPF_PROG_TYPE_RAW_TRACEPOINT },
};

static const FloorProgram shadow_programs[] = {
        { "floor_dirty", "writeback_dirty_folio", BPF_PROG_TYPE_RAW_TRACEPOINT },
        { "floor_clear", "sb_clear_inode_writeback", BPF_PROG_TYPE_RAW_TRACEPOINT },
};

static const FloorProgram fentry_programs[] = {
        { "floor_stable", "folio_wait_stable", BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY },
        { "floor_fdatawait", "__filemap_fdatawait_range", BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY },
        { "floor_wait_tp", "btf_trace_folio_wait_writeback", BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP },
        { "floor_wait_bit", "folio_wait_bit", BPF_PROG_TYPE_TRACING, BPF_TRACE_FEXIT },
};

/* The BTF id of p's target in the kernel's BTF: a function, or the typedef of a tracepoint. */
static int target_btf_id(struct btf *vmlinux, const FloorProgram *p) {
        return btf__find_by_name_kind(vmlinux, p->target,
                                      p->attach == BPF_TRACE_RAW_TP ? BTF_KIND_TYPEDEF : BTF_KIND_FUNC);
}

/* Loads and attaches p; returns the fd that holds it attached, or -errno (said on stderr). */
static int floor_attach(struct btf *vmlinux, const FloorProgram *p) {
        const struct bpf_insn insns[] = {
                { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
                { .code = BPF_JMP | BPF_EXIT },
        };
        LIBBPF_OPTS(bpf_prog_load_opts, opts);
        int prog_fd, fd;

        if (p->type == BPF_PROG_TYPE_TRACING) {
                int id = vmlinux ? target_btf_id(vmlinux, p) : -ENOENT;

                if (id < 0) {
                        fprintf(stderr, "probe-floor: %s: not in the kernel's BTF\n", p->target);
                        return -ENOENT;
                }
                opts.attach_btf_id = id;
                opts.expected_attach_type = p->attach;
        }
        prog_fd = bpf_prog_load(p->type, p->name, "GPL", insns, sizeof(insns) / sizeof(insns[0]), &opts);
        if (prog_fd < 0) {
                int r = -errno;

                fprintf(stderr, "probe-floor: loading %s for %s: %s\n", p->name, p->target, strerror(-r));
                return r;
        }
        if (p->type == BPF_PROG_TYPE_RAW_TRACEPOINT)
                fd = bpf_raw_tracepoint_open(p->target, prog_fd);
        else
                fd = bpf_link_create(prog_fd, 0, p->attach, NULL);
        if (fd < 0) {
                fd = -errno;
                fprintf(stderr, "probe-floor: attaching %s to %s: %s\n", p->name, p->target, strerror(-fd));
        }
        close(prog_fd); /* the link (or raw tracepoint fd) holds the program */
        return fd;
}

int main(int argc, char *argv[]) {
        const FloorProgram *programs;
        struct btf *vmlinux = NULL;
        size_t n_programs;
        sigset_t stop;
        FILE *ready;
        int sig;

        if (argc != 3 || (strcmp(argv[1], "tp") != 0 && strcmp(argv[1], "fentry") != 0 &&
                          strcmp(argv[1], "shadow") != 0)) {
                fprintf(stderr, "usage: %s tp|fentry|shadow READY-FILE\n", argv[0]);
                return 2;
        }
        if (strcmp(argv[1], "tp") == 0) {
                programs = tp_programs;
                n_programs = sizeof(tp_programs) / sizeof(tp_programs[0]);
        } else if (strcmp(argv[1], "shadow") == 0) {
                programs = shadow_programs;
                n_programs = sizeof(shadow_programs) / sizeof(shadow_programs[0]);
        } else {
                programs = fentry_programs;
                n_programs = sizeof(fentry_programs) / sizeof(fentry_programs[0]);
                vmlinux = btf__load_vmlinux_btf();
                if (!vmlinux) {
                        fprintf(stderr, "probe-floor: reading the kernel's BTF: %s\n", strerror(errno));
                        return 1;
                }
        }
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        sigprocmask(SIG_BLOCK, &stop, NULL);
        for (size_t i = 0; i < n_programs; i++)
                if (floor_attach(vmlinux, &programs[i]) < 0)
                        return 1; /* the fds close with the process */
        btf__free(vmlinux);

        ready = fopen(argv[2], "we");
        if (!ready || fprintf(ready, "floor-%s\n", argv[1]) < 0 || fclose(ready) != 0) {
                fprintf(stderr, "probe-floor: %s: %s\n", argv[2], strerror(errno));
                return 1;
        }
        sigwait(&stop, &sig);
        return 0;
}
