/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/flag.c, the one writer of queue/stable_writes, on a fake sysfs root: it writes
 * only the disk decided for (diskseq, or MAJ:MIN without one), never 0 on a required or unknown
 * disk without force (also when the need derived again says so), records the flag it found and
 * the change in the disk's history, and gives a sentence naming the disk for every refusal and
 * failure: something else than a file in place of the attribute (a directory, a FIFO, a
 * symlink, a device node), no permission, write errors injected with tests/unit/fault.c. */

#include <sys/sysmacros.h>

#include "fake-sysfs.h"
#include "fault.h"
#include "flag.h"
#include "history.h"
#include "sysfs.h"

static char *root, *run;

/* A disk NAME with diskseq SEQ, MAJ:MIN 7:N and its flag. */
static void put_disk(const char *name, const char *seq, const char *dev, const char *flag) {
        char path[256];

        snprintf(path, sizeof path, "block/%s/diskseq", name);
        if (seq)
                tree_put(root, path, seq);
        snprintf(path, sizeof path, "block/%s/dev", name);
        tree_put(root, path, dev);
        snprintf(path, sizeof path, "block/%s/queue/stable_writes", name);
        if (flag)
                tree_put(root, path, flag);
}

static char *flag_of(const char *name) {
        char path[256], *s = NULL;

        snprintf(path, sizeof path, "block/%s/queue/stable_writes", name);
        return sysfs_read_string(root, path, &s) < 0 ? NULL : s;
}

static FlagWrite req(const char *disk, uint64_t seq, Need need, int value) {
        return (FlagWrite){ .disk = disk, .diskseq = seq, .need = need, .value = value, .writer = "test" };
}

static int write_as(const FlagWrite *w, char **ret_reason) {
        return flag_write(root, run, w, NULL, ret_reason);
}

static void test_writes_and_records(void) {
        _cleanup_free_ char *reason = NULL, *s = NULL;
        _cleanup_(history_done) FlagHistory h = {};
        FlagWrite w = req("loop1", 41, NEED_NONE, 0);
        int now = -1;

        put_disk("loop1", "41\n", "7:1\n", "1\n");
        CHECK_INT(flag_write(root, run, &w, &now, &reason), 0);
        CHECK_INT(now, 0);
        CHECK(reason == NULL);
        s = flag_of("loop1");
        CHECK_STR(s, "0");
        /* The flag it found is the first sight; then the change with its writer. */
        CHECK_INT(history_load(run, "loop1", 41, &h), 0);
        CHECK_INT(h.first, 1);
        CHECK(!h.first_at_add);
        CHECK_INT(h.devnum, makedev(7, 1));
        CHECK_INT(h.n_changes, 1);
        if (h.n_changes == 1) {
                CHECK_INT(h.changes[0].value, 0);
                CHECK_STR(h.changes[0].writer, "test");
        }
        /* As it is: nothing written, nothing recorded. */
        CHECK_INT(flag_write(root, run, &w, &now, NULL), 0);
        history_done(&h);
        CHECK_INT(history_load(run, "loop1", 41, &h), 0);
        CHECK_INT(h.n_changes, 1);
}

static void test_identity(void) {
        _cleanup_free_ char *reason = NULL, *s = NULL;
        FlagWrite w = req("loop2", 7, NEED_NONE, 1);

        /* Another disk took the name: another diskseq. */
        put_disk("loop2", "8\n", "7:2\n", "0\n");
        CHECK_INT(write_as(&w, &reason), -ESTALE);
        CHECK_CONTAINS(reason, "loop2: another disk has the name now (diskseq 8, decided for diskseq 7)");
        s = flag_of("loop2");
        CHECK_STR(s, "0");

        /* A kernel without diskseq: the device number tells. */
        reason = mfree(reason);
        tree_rm(root, "block/loop2/diskseq");
        w = req("loop2", 0, NEED_NONE, 1);
        w.devnum = makedev(7, 3);
        CHECK_INT(write_as(&w, &reason), -ESTALE);
        CHECK_CONTAINS(reason, "another disk has the name now (device 7:2, decided for 7:3)");
        w.devnum = makedev(7, 2);
        CHECK_INT(write_as(&w, NULL), 0);
        /* ... but no history: a name is all such a disk has. */
        CHECK(!tree_exists(run, "history/loop2"));

        /* A diskseq asked for, none readable: not the disk decided for. */
        reason = mfree(reason);
        w = req("loop2", 9, NEED_NONE, 0);
        CHECK_INT(write_as(&w, &reason), -ESTALE);
        CHECK_CONTAINS(reason, "cannot read its diskseq");

        /* Gone: its directory emptied (del_gendisk), or no directory at all. */
        reason = mfree(reason);
        tree_mkdir(root, "block/gone/queue");
        w = req("gone", 3, NEED_NONE, 0);
        CHECK_INT(write_as(&w, &reason), -ENODEV);
        CHECK_CONTAINS(reason, "gone: the disk was removed");

        /* A hidden disk (an NVMe multipath path) has no device number, but a diskseq. */
        reason = mfree(reason);
        tree_put(root, "block/nvme0c0n1/diskseq", "6\n");
        tree_put(root, "block/nvme0c0n1/queue/stable_writes", "0\n");
        w = req("nvme0c0n1", 6, NEED_NONE, 1);
        CHECK_INT(write_as(&w, &reason), 0);
        s = mfree(s);
        s = flag_of("nvme0c0n1");
        CHECK_STR(s, "1");
        reason = mfree(reason);
        w = req("nosuchdisk", 3, NEED_NONE, 0);
        CHECK_INT(write_as(&w, &reason), -ENODEV);
        CHECK_CONTAINS(reason, "nosuchdisk: no such disk");

        /* Its flag gone: a disk being removed (callers write only a flag they have read). */
        reason = mfree(reason);
        put_disk("ram0", "5\n", "1:0\n", NULL);
        w = req("ram0", 5, NEED_NONE, 1);
        CHECK_INT(write_as(&w, &reason), -ENODEV);
        CHECK_CONTAINS(reason,
                       "ram0: the disk was removed while being applied (its queue/stable_writes is gone)");

        CHECK_INT(write_as(&(FlagWrite){ .disk = "../etc", .value = 1 }, NULL), -EINVAL);
        CHECK_INT(write_as(&(FlagWrite){ .disk = "loop2", .value = 2 }, NULL), -EINVAL);
}

typedef struct NeedNow {
        Need need;
        int error;
        unsigned calls;
} NeedNow;

static int need_now(const char *disk, uint64_t diskseq, Need *ret_need, char **ret_reason, void *userdata) {
        NeedNow *n = userdata;

        n->calls++;
        if (n->error < 0) {
                *ret_reason = strdup("it changed meanwhile");
                return n->error;
        }
        *ret_need = n->need;
        return 0;
}

static void test_interlock(void) {
        static const Need protected[] = { NEED_REQUIRED, NEED_UNKNOWN };
        NeedNow now = { .need = NEED_REQUIRED };

        put_disk("zram0", "11\n", "251:0\n", "1\n");
        for (size_t i = 0; i < ELEMENTSOF(protected); i++) {
                _cleanup_free_ char *reason = NULL, *s = NULL;
                FlagWrite w = req("zram0", 11, protected[i], 0);

                CHECK_INT(write_as(&w, &reason), -EPERM);
                CHECK_CONTAINS(reason, "zram0: refusing to turn stable writes off: its need is");
                CHECK_CONTAINS(reason, need_to_string(protected[i]));
                s = flag_of("zram0");
                CHECK_STR(s, "1");
        }

        /* Decided with none, but required when derived again: refused. */
        _cleanup_free_ char *reason = NULL, *s = NULL;
        FlagWrite w = req("zram0", 11, NEED_NONE, 0);
        w.need_of = need_now;
        w.userdata = &now;
        CHECK_INT(write_as(&w, &reason), -EPERM);
        CHECK_INT(now.calls, 1);
        CHECK_CONTAINS(reason, "its need is required");

        /* A need that cannot be derived again is no licence either. */
        reason = mfree(reason);
        now = (NeedNow){ .error = -ESTALE };
        CHECK_INT(write_as(&w, &reason), -ESTALE);
        CHECK_CONTAINS(reason, "zram0: not turning stable writes off: its need cannot be derived again (it "
                               "changed meanwhile)");
        s = flag_of("zram0");
        CHECK_STR(s, "1");

        /* An on is never refused, and never asks. */
        now = (NeedNow){ .need = NEED_REQUIRED };
        put_disk("zram1", "12\n", "251:1\n", "0\n");
        FlagWrite on = req("zram1", 12, NEED_REQUIRED, 1);
        on.need_of = need_now;
        on.userdata = &now;
        CHECK_INT(write_as(&on, NULL), 0);
        CHECK_INT(now.calls, 0);

        /* Forced: written. */
        w = req("zram0", 11, NEED_REQUIRED, 0);
        w.force = true;
        CHECK_INT(write_as(&w, NULL), 0);
        s = mfree(s);
        s = flag_of("zram0");
        CHECK_STR(s, "0");
}

static void test_test_hook(void) {
        _cleanup_free_ char *reason = NULL, *s = NULL;
        FlagWrite w = req("loop3", 21, NEED_NONE, 1);

        put_disk("loop3", "21\n", "7:3\n", "0\n");
        setenv("STABLEPAGES_TEST_FLAG_WRITE", "refuse", 1);
        CHECK_INT(write_as(&w, &reason), -EROFS);
        unsetenv("STABLEPAGES_TEST_FLAG_WRITE");
        CHECK_CONTAINS(reason, "loop3: not writing 1 to queue/stable_writes: refused by the test hook");
        s = flag_of("loop3");
        CHECK_STR(s, "0");
}

static void test_not_a_file(void) {
        _cleanup_free_ char *reason = NULL, *s = NULL;
        FlagWrite w = req("d", 31, NEED_NONE, 0);

        /* A directory in place of the attribute. */
        put_disk("d", "31\n", "7:31\n", NULL);
        tree_mkdir(root, "block/d/queue/stable_writes");
        CHECK(write_as(&w, &reason) < 0);
        CHECK_CONTAINS(reason, "d: ");

        /* A symlink in place of the attribute is never followed: the write cannot be redirected. */
        reason = mfree(reason);
        put_disk("l", "32\n", "7:32\n", NULL);
        tree_put(root, "victim", "1\n");
        tree_symlink(root, "block/l/queue/stable_writes", "../../../victim");
        w = req("l", 32, NEED_NONE, 0);
        CHECK_INT(write_as(&w, &reason), -ELOOP);
        CHECK_CONTAINS(reason, "l: cannot write 0 to queue/stable_writes");
        CHECK_INT(sysfs_read_string(root, "victim", &s), 0);
        CHECK_STR(s, "1");
}

static int write_fifo(void *userdata) {
        FlagWrite w = req("f", 33, NEED_NONE, 0);
        return write_as(&w, NULL);
}

static int write_readonly(void *userdata) {
        FlagWrite w = req("ro", 34, NEED_NONE, 0);
        return flag_write(root, NULL, &w, NULL, NULL);
}

static void test_blocking_and_permissions(void) {
        /* A FIFO in place of the attribute (no reader): the read finds no 0 or 1 and nothing
         * is written; nothing blocks. */
        put_disk("f", "33\n", "7:33\n", NULL);
        tree_mkfifo(root, "block/f/queue/stable_writes");
        int r = run_in_child(write_fifo, NULL, false);
        CHECK(r < 0 && r != -ETIME);

        /* An attribute the caller may not write (0444, checked as nobody: root ignores modes). */
        put_disk("ro", "34\n", "7:34\n", "1\n");
        tree_chmod(root, "block/ro/queue/stable_writes", 0444);
        CHECK_INT(run_in_child(write_readonly, NULL, true), -EACCES);
}

static void test_write_errors(void) {
        static const int errors[] = { EIO, EINVAL, EBUSY, EPERM, EROFS };

        put_disk("inj", "35\n", "7:35\n", "1\n");
        for (size_t i = 0; i < ELEMENTSOF(errors); i++) {
                _cleanup_free_ char *reason = NULL, *s = NULL;
                FlagWrite w = req("inj", 35, NEED_NONE, 0);

                fault_arm_write("/block/inj/queue/stable_writes", errors[i]);
                CHECK_INT(write_as(&w, &reason), -errors[i]);
                CHECK_INT(fault_hits(), 1);
                fault_disarm();
                CHECK_CONTAINS(reason, "inj: cannot write 0 to queue/stable_writes: ");
                CHECK_CONTAINS(reason, strerror(errors[i]));
                s = flag_of("inj");
                CHECK_STR(s, "1");
        }

        /* A switch that ignores the write: it reads back otherwise. */
        _cleanup_free_ char *reason = NULL;
        FlagWrite w = req("inj", 35, NEED_NONE, 0);
        fault_arm_write_swallow("/block/inj/queue/stable_writes");
        CHECK_INT(write_as(&w, &reason), -EIO);
        fault_disarm();
        CHECK_CONTAINS(reason, "inj: wrote 0 to queue/stable_writes but it reads 1");
}

static void test_device_nodes(void) {
        /* Device nodes in place of the attribute give real write errors: /dev/full (ENOSPC) and a
         * character device no driver claims (ENXIO). Needs CAP_MKNOD. */
        _cleanup_free_ char *full = tree_path(root, "block/full/queue/stable_writes");
        _cleanup_free_ char *nodrv = tree_path(root, "block/nodrv/queue/stable_writes");

        put_disk("full", "36\n", "7:36\n", NULL);
        put_disk("nodrv", "37\n", "7:37\n", NULL);
        tree_mkdir(root, "block/full/queue");
        tree_mkdir(root, "block/nodrv/queue");
        if (mknod(full, S_IFCHR | 0644, makedev(1, 7)) < 0 ||
            mknod(nodrv, S_IFCHR | 0644, makedev(4095, 4095)) < 0) {
                fprintf(stderr, "skipping device node checks: mknod: %m\n");
                return;
        }
        /* /dev/full reads zeros: the flag reads as not 0 or 1, so nothing is written. */
        FlagWrite w = req("full", 36, NEED_NONE, 1);
        CHECK(write_as(&w, NULL) < 0);
        w = req("nodrv", 37, NEED_NONE, 1);
        CHECK_INT(write_as(&w, NULL), -ENXIO);
}

int main(void) {
        root = tree_new();
        run = tree_new();
        test_writes_and_records();
        test_identity();
        test_interlock();
        test_test_hook();
        test_not_a_file();
        test_blocking_and_permissions();
        test_write_errors();
        test_device_nodes();
        tree_free(run);
        tree_free(root);
        return tests_finish();
}
