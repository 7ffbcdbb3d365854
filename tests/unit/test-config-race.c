/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config_load() while the files change under it, made deterministic with the hooks of
 * tests/unit/fault.c: a drop-in that is listed and stat()ed, then removed or replaced
 * (by another file, a directory, a FIFO, a huge file) right before it is opened, or
 * replaced while it is being read. Each time the result is either a complete file or a
 * reported error for that file (which makes the daemon keep its last good configuration);
 * never a mix of two versions, never a hang. */

#include "config.h"
#include "fake-sysfs.h"
#include "fault.h"

static char *dir;

static void write_conf(const char *name, const char *text) {
        _cleanup_free_ char *rel = strdup_printf("conf.d/%s", name);
        tree_put(dir, rel, text);
}

/* Loads dir's configuration; returns the number of diagnostics, the first in *first. */
static size_t load(Config *c, char **first) {
        _cleanup_free_ char *main_file = tree_path(dir, "stablepages.conf"),
                            *dropins = tree_path(dir, "conf.d");
        _cleanup_(config_diags_done) ConfigDiags diags = {};

        CHECK_INT(config_load(main_file, dropins, c, &diags), 0);
        config_diags_print(&diags, stderr);
        if (first)
                *first = diags.n > 0 ? strdup_printf("%s:%u: %s", diags.items[0].file, diags.items[0].line,
                                                     diags.items[0].message)
                                     : NULL;
        CHECK(config_diags_errors(&diags) == diags.n); /* every problem here is an error */
        return diags.n;
}

static void act_unlink(const char *path, void *userdata) {
        CHECK(unlink(path) == 0);
}

static void act_rename_over(const char *path, void *userdata) {
        _cleanup_free_ char *tmp = strdup_printf("%s.new", path);
        tree_put("/", tmp, userdata);
        CHECK(rename(tmp, path) == 0);
}

static void act_directory(const char *path, void *userdata) {
        CHECK(unlink(path) == 0);
        CHECK(mkdir(path, 0755) == 0);
}

static void act_fifo(const char *path, void *userdata) {
        CHECK(unlink(path) == 0);
        CHECK(mkfifo(path, 0644) == 0);
}

static void act_huge(const char *path, void *userdata) {
        _cleanup_free_ char *tmp = strdup_printf("%s.new", path);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        CHECK(ftruncate(fd, 8 * 1024 * 1024) == 0); /* sparse: reads as NUL bytes */
        CHECK(rename(tmp, path) == 0);
}

typedef struct RaceCase {
        const char *name;
        bool mid_read; /* the action runs in the middle of reading, not before open */
        fault_action_t action;
        const char *new_text; /* for act_rename_over */
        PolicyMode policy;    /* the result */
        uint64_t rescan_usec;
        const char *error; /* the one diagnostic, or NULL for none */
} RaceCase;

#define OLD_TEXT "[Manager]\nPolicy=latency\nRescanSec=30\n"
#define NEW_TEXT "[Manager]\nPolicy=observe\nRescanSec=5\nStallBudgetMSec=7\n"

static const RaceCase race_cases[] = {
        /* Vanished after listing: reported, so that a reload keeps the last good one. */
        { "removed before open", false, act_unlink, NULL, POLICY_INTEGRITY, 10 * USEC_PER_SEC,
          "20-b.conf:0: cannot read: No such file or directory" },
        /* Renamed over (editors, stablepagesctl): the new file, whole. */
        { "replaced before open", false, act_rename_over, NEW_TEXT, POLICY_OBSERVE, 5 * USEC_PER_SEC, NULL },
        { "directory before open", false, act_directory, NULL, POLICY_INTEGRITY, 10 * USEC_PER_SEC,
          "20-b.conf:0: not a regular file" },
        { "FIFO before open", false, act_fifo, NULL, POLICY_INTEGRITY, 10 * USEC_PER_SEC,
          "20-b.conf:0: not a regular file" },
        { "huge before open", false, act_huge, NULL, POLICY_INTEGRITY, 10 * USEC_PER_SEC,
          "20-b.conf:0: file is too large (more than 1048576 bytes)" },
        /* Renamed over while being read: the old file, whole (one fd, one inode). */
        { "replaced mid-read", true, act_rename_over, NEW_TEXT, POLICY_LATENCY, 30 * USEC_PER_SEC, NULL },
        { "removed mid-read", true, act_unlink, NULL, POLICY_LATENCY, 30 * USEC_PER_SEC, NULL },
};

static int run_race(void *userdata) {
        const RaceCase *t = userdata;
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *first = NULL;
        size_t n;

        tree_rm(dir, "conf.d");
        tree_put(dir, "stablepages.conf", "[Manager]\nPolicy=balanced\nStallCalmSec=9\n");
        write_conf("10-a.conf", "[Manager]\nPolicy=integrity\nRescanSec=10\n");
        write_conf("20-b.conf", OLD_TEXT);
        write_conf("30-c.conf", "[Manager]\nApplyMounted=remount-idle\n");

        if (t->mid_read)
                fault_arm_read("/conf.d/20-b.conf", t->action, (void *) t->new_text);
        else
                fault_arm_open("/conf.d/20-b.conf", t->action, (void *) t->new_text);
        n = load(&c, &first);
        CHECK_INT(fault_hits(), 1);
        fault_disarm();

        if (t->error) {
                CHECK_INT(n, 1);
                CHECK_CONTAINS(first, t->error);
        } else
                CHECK_INT(n, 0);
        CHECK_INT(c.policy, t->policy);
        CHECK_INT(c.rescan_usec, t->rescan_usec);
        CHECK_INT(c.stall_budget_usec, (t->mid_read || !t->new_text ? 100 : 7) * USEC_PER_MSEC);
        /* The files around it are read as usual. */
        CHECK_INT(c.stall_calm_usec, 9 * USEC_PER_SEC);
        CHECK_INT(c.apply_mounted, APPLY_MOUNTED_REMOUNT_IDLE);
        return tests_failed > 0 ? -EBADMSG : 0;
}

int main(void) {
        dir = tree_new();
        for (size_t i = 0; i < ELEMENTSOF(race_cases); i++) {
                /* In a child with an alarm: a read that blocks fails the case. */
                int r = run_in_child(run_race, (void *) &race_cases[i], false);
                if (r != 0)
                        fprintf(stderr, "race case \"%s\" failed: %d\n", race_cases[i].name, r);
                CHECK_INT(r, 0);
        }
        tree_free(dir);
        return tests_finish();
}
