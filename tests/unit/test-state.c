/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/state.c, the files that must survive kill -9: what is saved loads back the same
 * (also for a mount target of PATH_MAX bytes full of characters that are escaped), a
 * damaged file loses only its damaged lines, the temporary file of an interrupted atomic
 * write is never read, and a write that fails half-way (ENOSPC injected into the
 * temporary file with tests/unit/fault.c) leaves the previous file whole. */

#include <limits.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "fake-sysfs.h"
#include "fault.h"
#include "log.h"
#include "overrides.h"
#include "state.h"
#include "util.h"

static char *dir;

static void test_mount_records_round_trip(void) {
        _cleanup_(mount_records_done) MountRecords in = {}, out = {};
        char target[PATH_MAX];

        /* "/" then spaces and tabs: 4095 bytes, 16 KiB escaped. */
        target[0] = '/';
        for (size_t i = 1; i < sizeof target - 1; i++)
                target[i] = i % 3 ? ' ' : '\t';
        target[sizeof target - 1] = '\0';
        MountRecord recs[] = {
                { .id = 36,
                  .devnum = makedev(7, 0),
                  .source_devnum = makedev(7, 0),
                  .effective = true,
                  .origin = EFFECTIVE_OBSERVED,
                  .since_usec = 1733000000000000,
                  .unique_id = 123,
                  .mntns = 4026531841,
                  .fstype = (char *) "ext4",
                  .target = target },
                { .id = 37,
                  .devnum = makedev(0, 45),
                  .origin = EFFECTIVE_FILESYSTEM,
                  .fstype = (char *) "fuse.my fs\\x",
                  .target = (char *) "/srv/a\\b c\nd" },
        };
        for (size_t i = 0; i < ELEMENTSOF(recs); i++)
                CHECK_INT(mount_records_add(&in, &recs[i]), 0);
        CHECK_INT(state_save_mount_records(dir, &in), 0);
        CHECK_INT(state_load_mount_records(dir, &out), 0);
        CHECK_INT(out.n, in.n);
        for (size_t i = 0; i < in.n && i < out.n; i++) {
                CHECK_INT(out.items[i].id, in.items[i].id);
                CHECK_INT(out.items[i].devnum, in.items[i].devnum);
                CHECK_INT(out.items[i].effective, in.items[i].effective);
                CHECK_INT(out.items[i].origin, in.items[i].origin);
                CHECK_INT(out.items[i].since_usec, in.items[i].since_usec);
                CHECK_INT(out.items[i].unique_id, in.items[i].unique_id);
                CHECK_STR(out.items[i].fstype, in.items[i].fstype);
                CHECK(streq(out.items[i].target, in.items[i].target));
                CHECK_INT(strlen(out.items[i].target), strlen(in.items[i].target));
        }
}

static void test_damaged_files(void) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides o = {};
        _cleanup_(mount_records_done) MountRecords m = {};

        /* A torn write cannot happen (rename), but a damaged file must still load. Lines without
         * "diskseq=" are those of an earlier version: unbound, found by no diskseq. */
        tree_put(dir, "overrides",
                 "# comment\ndiskseq=12 loop0 on\ndiskseq=13 sda off force\nloop1 sideways\n"
                 "diskseq=14 ../x on\ndiskseq=0 zram1 on\ndiskseq=x zram2 on\ndiskseq=15zram3 on\n"
                 "diskseq=-16 zram4 on\nzram0 auto force\ndiskseq=17 loop0 o");
        CHECK_INT(state_load_overrides(dir, &o), 0);
        CHECK_INT(o.n, 3);
        CHECK(runtime_overrides_find(&o, 12) && runtime_overrides_find(&o, 12)->setting == SETTING_ON);
        CHECK_STR(runtime_overrides_find(&o, 12)->disk, "loop0");
        CHECK(runtime_overrides_find(&o, 13) && runtime_overrides_find(&o, 13)->force);
        CHECK(!runtime_overrides_find(&o, 0));
        bool legacy = false;
        for (size_t i = 0; i < o.n; i++)
                legacy = legacy || (o.items[i].diskseq == 0 && streq(o.items[i].disk, "zram0") &&
                                    o.items[i].setting == SETTING_AUTO && o.items[i].force);
        CHECK(legacy);

        tree_put(dir, "mounts",
                 "36 7:0 7:0 1 observed 1 2 3 ext4 /mnt/a\\040b\n37 7:0 7:0 1 observed 1 2\n"
                 "38 7:0 7:0 2 observed 1 2 3 ext4 /x\n39 7:0 7:0 0 assumed 1 2 3 xfs /bad\\9\n"
                 "40 7:0 7:0 0 assumed 1 2 3 xfs /ok");
        CHECK_INT(state_load_mount_records(dir, &m), 0);
        CHECK_INT(m.n, 2);
        if (m.n == 2) {
                CHECK_STR(m.items[0].target, "/mnt/a b");
                CHECK_STR(m.items[1].target, "/ok");
        }

        /* Missing files are empty sets. */
        runtime_overrides_done(&o);
        tree_rm(dir, "overrides");
        CHECK_INT(state_load_overrides(dir, &o), 0);
        CHECK_INT(o.n, 0);
}

static void test_overrides_atomic(void) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides o = {}, back = {};
        _cleanup_free_ char *tmp = strdup_printf("overrides.tmp.%d", 99999);

        CHECK_INT(runtime_overrides_set(&o, 3, "loop3", SETTING_OFF, false), 0);
        CHECK_INT(runtime_overrides_set(&o, 9, "sdb", SETTING_AUTO, true), 0);
        CHECK_INT(runtime_overrides_set(&o, 0, "sdc", SETTING_ON, false), 0); /* unbound: kept as it is */
        CHECK_INT(runtime_overrides_set(&o, 4, "../etc", SETTING_ON, false), -EINVAL);
        CHECK_INT(state_save_overrides(dir, &o), 0);
        /* What a write killed before its rename leaves behind is not read. */
        tree_put(dir, tmp, "loop3 o");
        CHECK_INT(state_load_overrides(dir, &back), 0);
        CHECK_INT(back.n, 3);
        CHECK(runtime_overrides_find(&back, 3) && runtime_overrides_find(&back, 3)->setting == SETTING_OFF);
        CHECK(runtime_overrides_find(&back, 9) && runtime_overrides_find(&back, 9)->force);
        CHECK_STR(runtime_overrides_find(&back, 9)->disk, "sdb");
        /* One entry per disk: a new word replaces the old one, auto without force removes it. */
        CHECK_INT(runtime_overrides_set(&back, 3, "loop3", SETTING_ON, true), 0);
        CHECK_INT(back.n, 3);
        CHECK(runtime_overrides_find(&back, 3)->force);
        CHECK_INT(runtime_overrides_remove(&back, 3, "loop3"), 1);
        CHECK_INT(runtime_overrides_remove(&back, 3, "loop3"), 0);
        CHECK_INT(runtime_overrides_set(&back, 9, "sdb", SETTING_AUTO, false), 0);
        CHECK_INT(back.n, 1);
        CHECK_INT(runtime_overrides_remove(&back, 0, "sdc"), 1);
}

/* An override belongs to its disk: when the disk goes, it goes, even when another disk takes
 * the name; an entry of an earlier version is bound to the disk of its name, once. */
static void test_overrides_follow_disk(void) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides o = {};
        _cleanup_strv_free_ char **changes = NULL;
        DeviceFacts disks[] = {
                { .name = (char *) "zram0", .diskseq = 20 }, /* a new zram0 */
                { .name = (char *) "loop1", .diskseq = 31 },
                { .name = (char *) "sdc", .diskseq = 0 }, /* diskseq unreadable */
                { .name = (char *) "vdb", .diskseq = 40 },
        };
        DeviceTable t = { .devices = disks, .n = ELEMENTSOF(disks) };

        CHECK_INT(runtime_overrides_set(&o, 10, "zram0", SETTING_OFF, true), 0);
        CHECK_INT(runtime_overrides_set(&o, 31, "loop1", SETTING_ON, false), 0);
        CHECK_INT(runtime_overrides_set(&o, 7, "sdc", SETTING_ON, false), 0);
        CHECK_INT(runtime_overrides_set(&o, 8, "sdq", SETTING_ON, false), 0);
        CHECK_INT(runtime_overrides_set(&o, 0, "loop1", SETTING_OFF, false), 0);
        CHECK_INT(runtime_overrides_set(&o, 0, "vdb", SETTING_OFF, true), 0);
        CHECK_INT(runtime_overrides_set(&o, 0, "nvme0n1", SETTING_ON, false), 0);
        CHECK_INT(runtime_overrides_set(&o, 0, "sdc", SETTING_ON, false), 0);

        /* Before: the new zram0 (diskseq 20) gets nothing of the old one's (10) off --force. */
        CHECK(!runtime_overrides_find(&o, 20));

        CHECK_INT(runtime_overrides_update(&o, &t, &changes), 1);
        CHECK_INT(o.n, 3);
        CHECK(!runtime_overrides_find(&o, 10) && !runtime_overrides_find(&o, 20));
        CHECK(runtime_overrides_find(&o, 31) && runtime_overrides_find(&o, 31)->setting == SETTING_ON);
        CHECK(runtime_overrides_find(&o, 7));
        CHECK(runtime_overrides_find(&o, 40) && runtime_overrides_find(&o, 40)->force);
        CHECK_INT(strv_length(changes), 6);
        if (strv_length(changes) == 6) {
                CHECK_STR(changes[0], "zram0: runtime override off (force) dropped: the disk it was set on "
                                      "(diskseq 10) is gone; zram0 is another disk now (diskseq 20)");
                CHECK_CONTAINS(changes[1],
                               "sdq: runtime override on dropped: the disk it was set on (diskseq "
                               "8) is gone");
                CHECK_CONTAINS(changes[2], "loop1: runtime override off, written by an earlier version and "
                                           "keyed by the kernel name only, dropped: that disk has a newer "
                                           "override");
                CHECK_CONTAINS(changes[3],
                               "vdb: runtime override off (force), written by an earlier version "
                               "and keyed by the kernel name only, is now bound to the disk of "
                               "that name (diskseq 40)");
                CHECK_CONTAINS(changes[4],
                               "nvme0n1: runtime override on, written by an earlier version and "
                               "keyed by the kernel name only, dropped: no disk has that name now");
                CHECK_CONTAINS(changes[5], "dropped: the kernel gives that disk no diskseq to bind it to");
        }

        /* Nothing changed: nothing to say. */
        strv_free(changes);
        changes = NULL;
        CHECK_INT(runtime_overrides_update(&o, &t, &changes), 0);
        CHECK(!changes);
}

static void test_failed_write_keeps_old_file(void) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides a = {}, b = {}, back = {};
        _cleanup_free_ char *tmp_suffix = strdup_printf("/overrides.tmp.%d", (int) getpid());
        _cleanup_free_ char *tmp_path = strdup_printf("%s%s", dir, tmp_suffix);

        CHECK_INT(runtime_overrides_set(&a, 1, "loop1", SETTING_ON, false), 0);
        CHECK_INT(state_save_overrides(dir, &a), 0);
        for (int i = 0; i < 50; i++) {
                _cleanup_free_ char *name = strdup_printf("loop%d", 100 + i);
                CHECK_INT(runtime_overrides_set(&b, 100 + i, name, SETTING_OFF, true), 0);
        }
        /* The new content is written to a temporary file, which fails: the old file stays
         * as it was, and the temporary file is removed. A write in place would not touch
         * the temporary file, succeed, and fail this check. */
        fault_arm_write(tmp_suffix, ENOSPC);
        CHECK_INT(state_save_overrides(dir, &b), -ENOSPC);
        CHECK_INT(fault_hits(), 1);
        fault_disarm();
        CHECK(access(tmp_path, F_OK) < 0 && errno == ENOENT);
        CHECK_INT(state_load_overrides(dir, &back), 0);
        CHECK_INT(back.n, 1);
        CHECK(runtime_overrides_find(&back, 1) != NULL);
}

/* The temp file of a writer that died is removed at start; one of a live writer (this
 * process, or the udev applier running now) and other files are left alone. */
static void test_stale_temp_files(void) {
        _cleanup_free_ char *sub = strdup_printf("%s/stale", dir), *dead = NULL, *live = NULL;
        pid_t pid = fork();

        if (pid == 0)
                _exit(0);
        CHECK(pid > 0);
        CHECK(waitpid(pid, NULL, 0) == pid);
        dead = strdup_printf("stale/overrides.tmp.%d", (int) pid);
        live = strdup_printf("stale/overrides.tmp.%d", (int) getpid());
        tree_put(dir, dead, "loop3 o");
        tree_put(dir, live, "loop3 o");
        tree_put(dir, "stale/overrides", "loop3 o");
        tree_put(dir, "stale/x.tmp.12ab", "");
        CHECK_INT(unlink_stale_temp_files(sub), 1);
        CHECK(tree_exists(dir, live) && tree_exists(dir, "stale/overrides") &&
              tree_exists(dir, "stale/x.tmp.12ab"));
        CHECK(!tree_exists(dir, dead));
        CHECK_INT(unlink_stale_temp_files(sub), 0);
        CHECK_INT(unlink_stale_temp_files("/nonexistent/stablepages"), 0);
}

int main(void) {
        log_set_max_level(LOG_ERR);
        dir = tree_new();
        test_mount_records_round_trip();
        test_damaged_files();
        test_overrides_atomic();
        test_overrides_follow_disk();
        test_failed_write_keeps_old_file();
        test_stale_temp_files();
        tree_free(dir);
        return tests_finish();
}
