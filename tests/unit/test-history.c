/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/history.c: the per-disk history of queue/stable_writes. Its text round-trips;
 * the first sight is recorded once per diskseq (at the disk's add, or later) and a later
 * sight at the add upgrades a first sight nothing changed since; a history is never taken for
 * another disk of the name or for a disk without diskseq; changes keep their writers, at most
 * HISTORY_MAX_CHANGES of them; damaged files are no history. */

#include <sys/sysmacros.h>

#include "fake-sysfs.h"
#include "history.h"
#include "util.h"

static char *dir;

static void test_round_trip(void) {
        FlagChange changes[] = { { 1, 1700000000000001, (char *) "udev-applier" },
                                 { 0, 1700000000000002, (char *) "other" } };
        FlagHistory h = { .disk = (char *) "dm-3",
                          .diskseq = 42,
                          .devnum = makedev(253, 3),
                          .first = 0,
                          .first_at_add = true,
                          .first_usec = 1700000000000000,
                          .first_by = (char *) "udev-applier",
                          .changes = changes,
                          .n_changes = 2,
                          .dropped = 3 };
        _cleanup_free_ char *text = history_format(&h), *again = NULL;
        _cleanup_(history_done) FlagHistory back = {};

        CHECK_STR(text, "version=1\ndisk=dm-3\ndiskseq=42\ndevnum=253:3\nfirst=0 add 1700000000000000 "
                        "udev-applier\ndropped=3\nchange=1 1700000000000001 udev-applier\nchange=0 "
                        "1700000000000002 other\n");
        CHECK_INT(history_parse(text, &back), 0);
        again = history_format(&back);
        CHECK_STR(again, text);
        CHECK_INT(history_last(&back), 0);

        static const char *const bad[] = {
                "",
                "version=2\ndisk=a\ndiskseq=1\ndevnum=1:1\nfirst=0 add 1 x\n",
                "version=1\ndisk=a\ndiskseq=0\ndevnum=1:1\nfirst=0 add 1 x\n", /* no diskseq */
                "version=1\ndisk=../a\ndiskseq=1\ndevnum=1:1\nfirst=0 add 1 x\n",
                "version=1\ndisk=a\ndiskseq=1\ndevnum=1:1\n",                   /* no first sight */
                "version=1\ndisk=a\ndiskseq=1\ndevnum=1:1\nfirst=2 add 1 x\n",  /* not 0 or 1 */
                "version=1\ndisk=a\ndiskseq=1\ndevnum=1:1\nfirst=0 boot 1 x\n", /* add or later */
                "version=1\ndisk=a\ndiskseq=1\ndevnum=1:1\nfirst=0 add 1 x\nchange=1 x y\n",
                "version=1\ndisk=a\ndiskseq=1\ndevnum=1:1\nfirst=0 add 1 x\ngarbage\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                FlagHistory b = {};
                if (history_parse(bad[i], &b) != -EBADMSG)
                        fprintf(stderr, "bad case %zu parsed\n", i);
                CHECK_INT(history_parse(bad[i], &b), -EBADMSG);
        }
}

static void test_first_sight(void) {
        _cleanup_(history_done) FlagHistory h = {};

        CHECK_INT(history_load(dir, "loop5", 7, &h), -ENOENT);
        /* Seen later first (the daemon before udev's applier): then the add upgrades it, as
         * nothing changed the flag meanwhile. */
        CHECK_INT(history_note_first(dir, "loop5", 7, makedev(7, 5), 0, false, "stablepagesd"), 1);
        CHECK_INT(history_note_first(dir, "loop5", 7, makedev(7, 5), 1, false, "stablepagesd"), 0);
        CHECK_INT(history_load(dir, "loop5", 7, &h), 0);
        CHECK_INT(h.first, 0);
        CHECK(!h.first_at_add);
        CHECK_STR(h.first_by, "stablepagesd");
        history_done(&h);
        CHECK_INT(history_note_first(dir, "loop5", 7, makedev(7, 5), 0, true, "udev applier"), 1);
        CHECK_INT(history_load(dir, "loop5", 7, &h), 0);
        CHECK(h.first_at_add);
        history_done(&h);

        /* Once the flag changed, a sight "at the add" cannot be the kernel's own any more. */
        CHECK_INT(history_note_first(dir, "loop6", 8, makedev(7, 6), 0, false, "stablepagesd"), 1);
        CHECK_INT(history_note_change(dir, "loop6", 8, makedev(7, 6), 0, 1, "stablepagesd"), 0);
        CHECK_INT(history_note_first(dir, "loop6", 8, makedev(7, 6), 1, true, "udev-applier"), 0);
        CHECK_INT(history_load(dir, "loop6", 8, &h), 0);
        CHECK(!h.first_at_add);
        CHECK_INT(h.first, 0);
        CHECK_INT(history_last(&h), 1);
        history_done(&h);

        /* Another disk under the name: not its history; its own replaces it. */
        CHECK_INT(history_load(dir, "loop5", 9, &h), -ENOENT);
        CHECK_INT(history_note_first(dir, "loop5", 9, makedev(7, 5), 1, true, "udev-applier"), 1);
        CHECK_INT(history_load(dir, "loop5", 9, &h), 0);
        CHECK_INT(h.first, 1);
        history_done(&h);
        CHECK_INT(history_load(dir, "loop5", 7, &h), -ENOENT);

        /* No diskseq: no history, ever. */
        CHECK_INT(history_note_first(dir, "sda", 0, makedev(8, 0), 1, true, "x"), -EINVAL);
        CHECK_INT(history_note_change(dir, "sda", 0, makedev(8, 0), 1, 0, "x"), -EINVAL);
        CHECK_INT(history_load(dir, "sda", 0, &h), -ENOENT);
        CHECK_INT(history_note_first(dir, "../x", 3, 0, 1, true, "x"), -EINVAL);
}

static void test_changes(void) {
        _cleanup_(history_done) FlagHistory h = {};

        /* A change of a disk without a history: its history starts with the flag before, seen
         * now (not at its add). */
        CHECK_INT(history_note_change(dir, "zram0", 3, makedev(251, 0), 1, 0, "cycle of /srv"), 0);
        CHECK_INT(history_load(dir, "zram0", 3, &h), 0);
        CHECK_INT(h.first, 1);
        CHECK(!h.first_at_add);
        CHECK_INT(h.n_changes, 1);
        if (h.n_changes == 1)
                CHECK_STR(h.changes[0].writer, "cycle-of-/srv"); /* one word */
        history_done(&h);

        for (int i = 0; i < HISTORY_MAX_CHANGES + 5; i++)
                CHECK_INT(history_note_change(dir, "zram0", 3, makedev(251, 0), i % 2, (i + 1) % 2, "other"),
                          0);
        CHECK_INT(history_load(dir, "zram0", 3, &h), 0);
        CHECK_INT(h.n_changes, HISTORY_MAX_CHANGES);
        CHECK_INT(h.dropped, 6);
        CHECK_INT(history_last(&h), (HISTORY_MAX_CHANGES + 5) % 2);
        history_done(&h);

        /* Forgetting is for that disk only. */
        CHECK_INT(history_forget(dir, "zram0", 4), 0);
        CHECK_INT(history_load(dir, "zram0", 3, &h), 0);
        history_done(&h);
        CHECK_INT(history_forget(dir, "zram0", 3), 0);
        CHECK_INT(history_load(dir, "zram0", 3, &h), -ENOENT);
        CHECK_INT(history_forget(dir, "zram0", 3), 0);

        /* A damaged file is no history: recorded again at the next sight. */
        tree_put(dir, "history/loop9", "version=1\ndisk=loop9\ndiskseq=5\nfirst=7 add 1 x\n");
        CHECK_INT(history_load(dir, "loop9", 5, &h), -ENOENT);
        CHECK_INT(history_note_first(dir, "loop9", 5, makedev(7, 9), 0, true, "x"), 1);
        CHECK_INT(history_load(dir, "loop9", 5, &h), 0);
        /* A file named for another disk than it holds is not its history. */
        history_done(&h);
        tree_put(dir, "history/loop8", "version=1\ndisk=loop9\ndiskseq=5\ndevnum=7:9\nfirst=0 add 1 x\n");
        CHECK_INT(history_load(dir, "loop8", 5, &h), -ENOENT);
}

int main(void) {
        dir = tree_new();
        test_round_trip();
        test_first_sight();
        test_changes();
        tree_free(dir);
        return tests_finish();
}
