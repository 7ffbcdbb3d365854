/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The risk side of running a mirror (md raid1, raid10) without stable writes. Each leg's write
 * reads the page at its own moment, so a page modified while under writeback can reach the legs
 * with different contents until it is written again; md's check counts such sectors in
 * mismatch_cnt. Per disk, kept across reboots with the learned record (learned.h): the shadow
 * waits counted since the last check (pages modified under writeback while stable writes were
 * off: the pages that could have diverged), the O_DIRECT writes seen (which diverge legs whatever
 * the flag says), the last check's mismatch_cnt and the verdict. Pure: figures in, verdict out. */

#include <stdbool.h>
#include <stdint.h>

typedef struct MirrorFigures {
        uint64_t shadow_pages;  /* shadow waits since the last check */
        uint64_t direct_writes; /* O_DIRECT writes since the last check */
        uint64_t mismatch_cnt;  /* md/mismatch_cnt after the last check (512-byte sectors) */
        uint64_t check_usec;    /* when the last check ended (CLOCK_REALTIME), 0: none seen */
        bool diverged;          /* a check found mismatches that grew while stable writes were off */
} MirrorFigures;

/* Whether an md level is a mirror this module reads ("raid1", "raid10"). */
bool mirror_level_is_mirror(const char *md_level);

/* A check of the mirror name ended at now_usec with mismatch sectors: compares them with the
 * previous check's (none: 0), sets f->diverged when they grew while pages were modified under
 * writeback with stable writes off (f->shadow_pages > 0), and starts the next period (the
 * counts since the check go back to 0). *ret_reason is one sentence with the figures;
 * *ret_verdict is true when this check made the verdict. Returns 0 or -ENOMEM. */
int mirror_check_ended(MirrorFigures *f, const char *name, uint64_t mismatch, uint64_t now_usec,
                       char **ret_reason, bool *ret_verdict);

/* What the O_DIRECT writes of f mean for the mirror name, or NULL when there were none: a risk
 * stable writes cannot remove. Returns a new string (NULL also on ENOMEM). */
char *mirror_direct_risk(const MirrorFigures *f, const char *name);
