/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/mirror.c, and its figures in the learned record: a check whose mismatch count grew
 * after pages were written under writeback with stable writes off makes the verdict (once),
 * with the figures in its sentence; a count that grew with no such page blames something else
 * and says what O_DIRECT writes were seen; each check starts the next period. The figures go
 * round the learned file, a mirror-only record ("none") included, and an earlier version's
 * eight-field line still loads. */

#include "fake-sysfs.h"
#include "learned.h"
#include "log.h"
#include "mirror.h"

static char *dir;

static void test_check(void) {
        MirrorFigures f = { .shadow_pages = 37 };
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
        bool verdict;

        CHECK(mirror_level_is_mirror("raid1") && mirror_level_is_mirror("raid10"));
        CHECK(!mirror_level_is_mirror("raid5") && !mirror_level_is_mirror(NULL));

        /* No check before: the baseline is 0. */
        CHECK_INT(mirror_check_ended(&f, "md0", 256, 1000, &a, &verdict), 0);
        CHECK(verdict && f.diverged);
        CHECK_CONTAINS(a, "md check of md0 found mismatch_cnt 256 (previous check: 0) after 37 pages were "
                          "modified under writeback while stable writes were off: the legs diverged");
        CHECK_INT(f.mismatch_cnt, 256);
        CHECK_INT(f.check_usec, 1000);
        CHECK_INT(f.shadow_pages, 0);

        /* The next check: no new page, the count the same; the verdict stays, made once. */
        CHECK_INT(mirror_check_ended(&f, "md0", 256, 2000, &b, &verdict), 0);
        CHECK(!verdict && f.diverged);
        CHECK_CONTAINS(b, "mismatch_cnt 256 (previous check: 256), 0 pages");

        /* Grown with no page written under writeback, but O_DIRECT writes: not ours to prevent. */
        MirrorFigures g = { .direct_writes = 5, .check_usec = 1, .mismatch_cnt = 0 };
        CHECK_INT(mirror_check_ended(&g, "md1", 128, 3000, &c, &verdict), 0);
        CHECK(!verdict && !g.diverged);
        CHECK_CONTAINS(c, "with no page modified under writeback while stable writes were off: not a "
                          "divergence stable writes prevent; 5 O_DIRECT writes on md1");
        CHECK_INT(g.direct_writes, 0);
}

static void test_record(void) {
        _cleanup_(learned_records_done) LearnedRecords in = {}, out = {};
        LearnedRecord m = { .key = (char *) "md:1234",
                            .disk = (char *) "md0",
                            .learned = LEARNED_NONE,
                            .reason = (char *) "",
                            .has_mirror = true,
                            .mirror = { .shadow_pages = 9,
                                        .direct_writes = 2,
                                        .mismatch_cnt = 256,
                                        .check_usec = 77,
                                        .diverged = true } };
        _cleanup_free_ char *path = path_join(dir, "learned"), *text = NULL;

        CHECK_INT(learned_set(&in, &m), 0);
        CHECK_INT(learned_save(dir, &in), 0);
        CHECK_INT(read_full_file(path, 65536, &text, NULL), 0);
        CHECK_CONTAINS(text, "md:1234\tmd0\tnone\t0\t0\t0\t0\t\tmirror\t9\t2\t256\t77\t1\n");
        CHECK_INT(learned_load(dir, "B1", &out), 0);
        const LearnedRecord *r = learned_find(&out, "md:1234");
        CHECK(r && r->has_mirror && r->learned == LEARNED_NONE);
        if (r) {
                CHECK_INT(r->mirror.shadow_pages, 9);
                CHECK_INT(r->mirror.direct_writes, 2);
                CHECK_INT(r->mirror.mismatch_cnt, 256);
                CHECK_INT(r->mirror.check_usec, 77);
                CHECK(r->mirror.diverged);
        }

        /* An earlier version's line; damaged mirror fields; "none" without a mirror. */
        const char *lines = "md:a\tmd1\ton\t5\t6\t7\t8\told line\n"
                            "md:b\tmd2\ton\t5\t6\t7\t8\treason\tmirror\t1\t2\t3\t4\t2\n"
                            "md:c\tmd3\ton\t5\t6\t7\t8\treason\tnotmirror\t1\t2\t3\t4\t1\n"
                            "md:d\tmd4\tnone\t5\t6\t7\t8\treason\n";
        _cleanup_(learned_records_done) LearnedRecords old = {};
        CHECK_INT(write_file_atomic(path, lines, strlen(lines), 0644), 0);
        CHECK_INT(learned_load(dir, "B1", &old), 0);
        CHECK_INT(old.n, 1);
        r = learned_find(&old, "md:a");
        CHECK(r && !r->has_mirror && r->learned == LEARNED_ON);
}

int main(void) {
        dir = tree_new();
        test_check();
        test_record();
        tree_free(dir);
        return tests_finish();
}
