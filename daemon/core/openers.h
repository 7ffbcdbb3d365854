/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The processes that hold a disk (or one of its partitions) open for writing, from /proc: who
 * writes through the disk's own page cache (buffered) and who bypasses it (O_DIRECT). What is
 * seen depends on who looks: another process's descriptors need ptrace access to it (the same
 * user and no capability it lacks, or CAP_SYS_PTRACE), which the sandboxed daemon mostly lacks;
 * those are counted, not guessed. Mappings of the device without an open descriptor are not
 * seen. The root of /proc is a parameter for tests. */

#include <stdbool.h>
#include <sys/types.h>

typedef struct Opener {
        pid_t pid;
        char comm[17];
        dev_t devnum; /* the disk's or a partition's, as opened */
        bool direct;  /* opened with O_DIRECT: bypasses the page cache */
} Opener;

typedef struct Openers {
        Opener *items;
        size_t n;
        unsigned uninspectable; /* processes whose descriptors could not be read */
} Openers;

void openers_done(Openers *o);

/* The processes under proc_root ("/proc" when NULL) with one of the n block devices devnums open
 * for writing, once per process and device. Returns 0 or -errno (proc_root cannot be listed). */
int openers_scan(const char *proc_root, const dev_t *devnums, size_t n, Openers *ret);

/* "processes with /dev/DISK open for writing: PID 12 (dd), PID 14 (qemu, O_DIRECT); 3 could
 * not be inspected (…)", or what nobody seen says. NULL on -ENOMEM. */
char *openers_describe(const Openers *o, const char *disk);
