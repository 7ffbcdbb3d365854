/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/learned.c: what Policy=balanced learned survives a reboot: saved records load back
 * the same, a reason with tabs and line breaks stays one field, damaged lines are skipped
 * and the rest kept. The key names the disk, never its kernel name: WWN, serial, dm or md
 * UUID, loop backing file (identity.h, keys written by earlier versions unchanged), else the
 * diskseq in this boot only; records keyed by a kernel name or of another boot are not
 * applied, and the next save drops them. And the engine reads the learned state (what the
 * one-shot udev applier does at boot): a recommended disk with a learned off is decided off by
 * Policy=balanced, source "stalls", and not by the other policies or for a required disk;
 * another disk that takes the name (replugged, the next boot) gets none of it. */

#include <sys/sysmacros.h>

#include "engine.h"
#include "fake-sysfs.h"
#include "learned.h"
#include "log.h"

static char *dir;

static void test_round_trip(void) {
        _cleanup_(learned_records_done) LearnedRecords in = {}, out = {};
        LearnedRecord a = { .key = (char *) "wwn:0x5000c500a1b2c3d4",
                            .disk = (char *) "sda",
                            .learned = LEARNED_OFF,
                            .since_usec = 1764730000123456,
                            .p99_usec = 131071,
                            .count = 38,
                            .budget_usec = 10000,
                            .reason = (char *) "p99 wait\t131 ms\nover" };
        LearnedRecord b = { .key = (char *) "boot:B1:diskseq:7",
                            .disk = (char *) "loop7",
                            .learned = LEARNED_ON,
                            .since_usec = 1,
                            .reason = (char *) "" };

        CHECK_INT(learned_set(&in, &a), 0);
        CHECK_INT(learned_set(&in, &b), 0);
        b.learned = LEARNED_OFF; /* replaces, does not add */
        CHECK_INT(learned_set(&in, &b), 0);
        CHECK_INT(in.n, 2);
        CHECK_INT(learned_save(dir, &in), 0);
        CHECK_INT(learned_load(dir, "B1", &out), 0);
        CHECK_INT(out.n, 2);
        const LearnedRecord *r = learned_find(&out, "wwn:0x5000c500a1b2c3d4");
        CHECK(r);
        if (r) {
                CHECK_STR(r->disk, "sda");
                CHECK_INT(r->learned, LEARNED_OFF);
                CHECK_INT(r->since_usec, 1764730000123456);
                CHECK_INT(r->p99_usec, 131071);
                CHECK_INT(r->count, 38);
                CHECK_INT(r->budget_usec, 10000);
                CHECK_STR(r->reason, "p99 wait 131 ms over");
        }
        r = learned_find(&out, "boot:B1:diskseq:7");
        CHECK(r && r->learned == LEARNED_OFF && streq(r->reason, ""));
        CHECK(!learned_find(&out, "boot:B1:diskseq:8"));
}

static void test_damaged(void) {
        _cleanup_(learned_records_done) LearnedRecords out = {};
        _cleanup_free_ char *path = path_join(dir, "learned");
        const char *text = "# comment\n"
                           "serial:a\ta\toff\t5\t6\t7\t8\tgood one\n"
                           "serial:b\tb\tmaybe\t5\t6\t7\t8\tbad state\n"
                           "serial:c\tc\toff\tx\t6\t7\t8\tbad number\n"
                           "serial:d\t../x\toff\t5\t6\t7\t8\tbad disk name\n"
                           "too few fields\n"
                           "serial:e\te\ton\t1\t2\t3\t4\tlast, no newline";

        CHECK_INT(write_file_atomic(path, text, strlen(text), 0644), 0);
        CHECK_INT(learned_load(dir, "B1", &out), 0);
        CHECK_INT(out.n, 2);
        CHECK(learned_find(&out, "serial:a") && learned_find(&out, "serial:e"));

        _cleanup_(learned_records_done) LearnedRecords none = {};
        _cleanup_free_ char *missing = path_join(dir, "nothing-here");
        CHECK_INT(learned_load(missing, "B1", &none), 0);
        CHECK_INT(none.n, 0);
}

/* Checks learned_key() of table[0] among the n disks of table: want, or "-" when it has none. */
static void check_key(DeviceFacts *table, size_t n, const char *boot_id, const char *want) {
        DeviceTable t = { .devices = table, .n = n };
        _cleanup_free_ char *key = NULL;
        int r = learned_key(&table[0], &t, boot_id, &key);

        CHECK(r == 0 || r == -ENXIO);
        CHECK_STR(r == -ENXIO ? "-" : key, want);
}

static void test_key(void) {
        char *wwn[] = { (char *) "ID_SERIAL=disk_1", (char *) "ID_WWN=0x50", NULL };
        char *ext[] = { (char *) "ID_WWN=0x50", (char *) "ID_WWN_WITH_EXTENSION=0x50ab", NULL };
        char *serial[] = { (char *) "ID_SERIAL=disk_1", NULL };
        char *slot[] = { (char *) "ID_PATH=pci-0000:00:05.0", NULL };
        char *dm[] = { (char *) "DM_UUID=CRYPT-LUKS2-0a1b-home", (char *) "ID_PATH=pci-0000:00:05.0", NULL };
        DeviceFacts f[] = {
                { .name = (char *) "sdb", .devnum = makedev(8, 16), .diskseq = 5, .properties = wwn },
                { .name = (char *) "sdc", .devnum = makedev(8, 32), .diskseq = 6 }
        };
        DeviceFacts loop[] = { { .name = (char *) "loop7",
                                 .devnum = makedev(7, 7),
                                 .diskseq = 30,
                                 .kind = DEVICE_KIND_LOOP,
                                 .loop_backing_file = (char *) "/srv/images/a b.img" } };
        DeviceFacts crypt[] = { { .name = (char *) "dm-3",
                                  .devnum = makedev(253, 3),
                                  .diskseq = 31,
                                  .kind = DEVICE_KIND_DM,
                                  .properties = dm } };

        /* The keys earlier versions wrote for these disks are found as they are. */
        check_key(f, 1, "B1", "wwn:0x50");
        f[0].properties = serial;
        check_key(f, 1, "B1", "serial:disk_1");
        check_key(loop, 1, "B1", "loop:/srv/images/a b.img");
        /* And the identities of identity.h they did not use. */
        f[0].properties = ext;
        check_key(f, 1, "B1", "wwn:0x50ab");
        check_key(crypt, 1, "B1", "dm:CRYPT-LUKS2-0a1b-home");
        /* No identity: this boot's diskseq, never the kernel name. */
        loop[0].loop_backing_file = NULL;
        check_key(loop, 1, "B1", "boot:B1:diskseq:30");

        /* Two disks named sdb without an identity, one after the other: not one key. */
        f[0].properties = NULL;
        check_key(f, 1, "B1", "boot:B1:diskseq:5");
        f[0].diskseq = 9;
        check_key(f, 1, "B1", "boot:B1:diskseq:9");
        /* The slot is not the disk: another disk plugged there is not this one. */
        f[0].properties = slot;
        check_key(f, 1, "B1", "boot:B1:diskseq:9");
        /* A serial another present disk reports too (a USB bridge's): not this disk's. */
        f[0].properties = f[1].properties = serial;
        check_key(f, 2, "B1", "boot:B1:diskseq:9");
        /* No boot id, or no diskseq (before Linux 5.15): no key at all. */
        f[0].properties = NULL;
        check_key(f, 1, "", "-");
        f[0].diskseq = 0;
        check_key(f, 1, "B1", "-");
        CHECK(learned_key_is_boot_local("boot:B1:diskseq:9") && !learned_key_is_boot_local("serial:disk_1"));
}

/* Runs learned_load() with the log in a file; returns what it logged. */
static char *load_logged(const char *boot_id, LearnedRecords *ret) {
        _cleanup_free_ char *log_path = tree_path(dir, "log"), *text = NULL;
        int saved = dup(STDERR_FILENO), fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        CHECK(saved >= 0 && fd >= 0);
        log_set_target(LOG_TARGET_STDERR);
        fflush(stderr);
        CHECK(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
        CHECK_INT(learned_load(dir, boot_id, ret), 0);
        fflush(stderr);
        CHECK(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
        close(saved);
        close(fd);
        CHECK_INT(read_full_file(log_path, 65536, &text, NULL), 0);
        fputs(text ?: "", stderr);
        return TAKE_PTR(text);
}

/* Records keyed by a kernel name (earlier versions) or of another boot are not applied, the
 * first with one notice naming them, and the next save drops both. */
static void test_load_drops(void) {
        _cleanup_(learned_records_done) LearnedRecords out = {}, again = {};
        _cleanup_free_ char *path = path_join(dir, "learned"), *saved = NULL, *logged = NULL, *quiet = NULL;
        const char *text = "name:sdb\tsdb\toff\t5\t6\t7\t8\tlearned on whichever disk was sdb\n"
                           "boot:B0:diskseq:5\tsdc\toff\t5\t6\t7\t8\tthe boot before\n"
                           "boot:B1:diskseq:6\tsdd\toff\t5\t6\t7\t8\tthis boot\n"
                           "boot:B1x:diskseq:6\tsdd\toff\t5\t6\t7\t8\tanother boot id\n"
                           "name:loop7\tloop7\ton\t5\t6\t7\t8\tx\n"
                           "wwn:0x50\tsde\toff\t5\t6\t7\t8\ta disk\n";

        CHECK_INT(write_file_atomic(path, text, strlen(text), 0644), 0);
        logged = load_logged("B1", &out);
        CHECK_INT(out.n, 2);
        CHECK(learned_find(&out, "boot:B1:diskseq:6") && learned_find(&out, "wwn:0x50"));
        CHECK(!learned_find(&out, "name:sdb") && !learned_find(&out, "boot:B0:diskseq:5"));
        CHECK_CONTAINS(logged, "/learned: ignoring what was learned for name:sdb, name:loop7: a kernel "
                               "name is not a disk's identity");
        CHECK(logged && !strstr(logged, "B0")); /* another boot's: expected, not worth a line */

        CHECK_INT(learned_save(dir, &out), 0);
        CHECK_INT(read_full_file(path, 65536, &saved, NULL), 0);
        CHECK(saved && !strstr(saved, "name:") && !strstr(saved, "B0") && !strstr(saved, "B1x"));
        quiet = load_logged("B1", &again);
        CHECK_INT(again.n, 2);
        CHECK_STR(quiet, "");
        /* Without a boot id, nothing of any boot applies. */
        learned_records_done(&again);
        CHECK_INT(learned_load(dir, "", &again), 0);
        CHECK_INT(again.n, 1);
}

/* A fake loop disk (need none) and zram disk (need required) under root. */
static void make_sysfs(const char *root) {
        tree_put(root, "block/loop3/dev", "7:3\n");
        tree_put(root, "block/loop3/diskseq", "21\n");
        tree_put(root, "block/loop3/loop/backing_file", "/srv/a.img\n");
        tree_put(root, "block/loop3/queue/stable_writes", "1\n");
        tree_put(root, "block/zram0/dev", "252:0\n");
        tree_put(root, "block/zram0/diskseq", "20\n");
        tree_put(root, "block/zram0/queue/stable_writes", "1\n");
}

static int no_backing(const char *file, void *userdata, dev_t *ret) {
        return -ENOENT;
}

/* Runs the engine of the one-shot applier or the daemon on root, in boot boot_id. */
static void scan(Engine *e, const char *root, const char *boot_id) {
        _cleanup_free_ char *conf = tree_path(root, "etc/stablepages.conf"),
                            *dropins = tree_path(root, "etc/stablepages.conf.d"),
                            *run = tree_path(root, "run"), *state = tree_path(root, "state"),
                            *udev = tree_path(root, "udev");
        EngineOptions o = { .sysfs_root = root,
                            .config_file = conf,
                            .dropin_dir = dropins,
                            .runtime_dir = run,
                            .state_dir = state,
                            .udev_data_dir = udev,
                            .kernel_release = "6.12.0",
                            .boot_id = boot_id,
                            .resolve_backing = no_backing };

        engine_done(e);
        CHECK_INT(engine_init(e, &o), 0);
        CHECK_INT(engine_load_config(e), 0);
        CHECK_INT(engine_load_learned(e), 0);
        CHECK_INT(engine_scan(e), 0);
}

/* The engine's view of sdb in boot boot_id. */
static EngineDevice *scan_sdb(Engine *e, const char *root, const char *boot_id) {
        scan(e, root, boot_id);
        return engine_find(e, "sdb");
}

static void test_engine_reads_learned(void) {
        char *root = tree_new();
        _cleanup_free_ char *state = tree_path(root, "state");
        _cleanup_(learned_records_done) LearnedRecords l = {};
        const char *policies[] = { "balanced", "latency", "integrity" };

        make_sysfs(root);
        LearnedRecord rec = { .key = (char *) "loop:/srv/a.img",
                              .disk = (char *) "loop3",
                              .learned = LEARNED_OFF,
                              .since_usec = 1764730000000000,
                              .reason = (char *) "p99 wait 128.0 ms, over" };
        CHECK_INT(learned_set(&l, &rec), 0);
        rec.key = (char *) "boot:B1:diskseq:20";
        rec.disk = (char *) "zram0";
        CHECK_INT(learned_set(&l, &rec), 0);
        CHECK_INT(learned_save(state, &l), 0);

        for (size_t i = 0; i < ELEMENTSOF(policies); i++) {
                _cleanup_(engine_done) Engine e = {};
                _cleanup_free_ char *text =
                        strdup_printf("[Manager]\nPolicy=%s\n[Device loop3]\nNeed=recommended\n"
                                      "[Device zram0]\nNeed=recommended\n",
                                      policies[i]);

                fprintf(stderr, "Policy=%s\n", policies[i]);
                tree_put(root, "etc/stablepages.conf", text);
                scan(&e, root, "B1");
                EngineDevice *loop = engine_find(&e, "loop3"), *zram = engine_find(&e, "zram0");
                CHECK(loop && zram);
                if (!loop || !zram)
                        continue;
                CHECK_INT(loop->class.need, NEED_RECOMMENDED);
                CHECK_INT(loop->learned, LEARNED_OFF);
                CHECK_STR(loop->learned_reason, "p99 wait 128.0 ms, over");
                CHECK_STR(loop->learned_key, "loop:/srv/a.img");
                CHECK_STR(zram->learned_key, "boot:B1:diskseq:20");
                CHECK_INT(zram->learned, LEARNED_OFF); /* learned, and still not applied: required */
                CHECK_INT(zram->class.need, NEED_REQUIRED);
                CHECK_CONTAINS(zram->need_problem,
                               "stablepages.conf:6: Need=recommended cannot lower the detected "
                               "need required of zram0");
                CHECK_INT(zram->decision.desired, 1);
                if (i == 0) {
                        CHECK_INT(loop->decision.desired, 0);
                        CHECK_INT(loop->decision.source, SOURCE_STALLS);
                        CHECK_CONTAINS(loop->decision.reason, "UTC: p99 wait 128.0 ms, over");
                } else
                        CHECK_INT(loop->decision.source, SOURCE_POLICY);
        }
        tree_free(root);
}

/* What Policy=balanced learns as the daemon does (manager-stalls.c): a record under the disk's
 * key, saved to the state dir. */
static void learn_off(Engine *e, EngineDevice *d) {
        CHECK_INT(engine_learned_key(e, d), 0);
        LearnedRecord rec = { .key = d->learned_key,
                              .disk = d->facts->name,
                              .learned = LEARNED_OFF,
                              .since_usec = 1764730000000000,
                              .reason = (char *) "p99 wait 128.0 ms, over" };

        if (!rec.key)
                return;
        CHECK_INT(learned_set(&e->learned, &rec), 0);
        CHECK_INT(learned_save(e->state_dir, &e->learned), 0);
}

/* Whether d is sdb and decided by what was learned (off) rather than by the policy (on). */
static bool decided_by_learned(const EngineDevice *d) {
        CHECK(d);
        if (!d)
                return false;
        if (d->learned == LEARNED_NONE)
                CHECK(d->decision.desired == 1 && d->decision.source == SOURCE_POLICY);
        else
                CHECK(d->learned == LEARNED_OFF && d->decision.desired == 0 &&
                      d->decision.source == SOURCE_STALLS);
        return d->learned != LEARNED_NONE;
}

/* A verdict learned on one disk never reaches another disk that takes its kernel name. */
static void test_engine_name_reused(void) {
        char *root = tree_new();
        _cleanup_(engine_done) Engine e = {};
        EngineDevice *d;

        tree_put(root, "etc/stablepages.conf",
                 "[Manager]\nPolicy=balanced\n[Device sd*]\nNeed=recommended\n");
        tree_put(root, "block/sdb/dev", "8:16\n");
        tree_put(root, "block/sdb/diskseq", "5\n");
        tree_put(root, "block/sdb/queue/stable_writes", "0\n");

        /* A disk without an identity learns off: kept for this boot, for this disk. */
        d = scan_sdb(&e, root, "B1");
        CHECK(d && !decided_by_learned(d));
        CHECK(d && !d->learned_key); /* no record could be its: not worked out */
        if (d)
                learn_off(&e, d);
        d = scan_sdb(&e, root, "B1"); /* the daemon restarted, or the applier runs */
        CHECK(decided_by_learned(d));
        if (d)
                CHECK_CONTAINS(d->decision.reason, "p99 wait 128.0 ms, over");

        /* Another disk gets the name sdb in this boot (unplugged, another plugged): its own. */
        tree_put(root, "block/sdb/diskseq", "9\n");
        CHECK(!decided_by_learned(scan_sdb(&e, root, "B1")));
        /* The next boot, with the same diskseq: not this disk either. */
        tree_put(root, "block/sdb/diskseq", "5\n");
        CHECK(!decided_by_learned(scan_sdb(&e, root, "B2")));

        /* Written by an earlier version under the kernel name: never applied. */
        tree_put(root, "state/learned", "name:sdb\tsdb\toff\t1764730000000000\t6\t7\t8\tsome sdb\n");
        CHECK(!decided_by_learned(scan_sdb(&e, root, "B1")));

        /* A disk with a serial keeps it across boots; a clone of its serial plugged in (USB
         * bridges that report one serial for every disk) makes it no identity of either. */
        tree_put(root, "state/learned", "");
        tree_put(root, "udev/b8:16", "E:ID_SERIAL=USB_Bridge_000000\n");
        d = scan_sdb(&e, root, "B1");
        CHECK(d && !decided_by_learned(d));
        if (d) {
                learn_off(&e, d);
                CHECK_STR(d->learned_key, "serial:USB_Bridge_000000");
        }
        CHECK(decided_by_learned(scan_sdb(&e, root, "B2")));
        tree_put(root, "block/sdc/dev", "8:32\n");
        tree_put(root, "block/sdc/diskseq", "6\n");
        tree_put(root, "block/sdc/queue/stable_writes", "0\n");
        tree_put(root, "udev/b8:32", "E:ID_SERIAL=USB_Bridge_000000\n");
        CHECK(!decided_by_learned(scan_sdb(&e, root, "B2")));
        tree_free(root);
}

/* Need= parses recommended and required only; anything else is an error at its line. */
static void test_need_parse(void) {
        const char *text = "[Device loop*]\nNeed=recommended\n[Device sd*]\nNeed=none\nNeed=maybe\n"
                           "[Device zram*]\nNeed=required\nNeed=\n";
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {};

        CHECK_INT(config_init_defaults(&c), 0);
        CHECK_INT(config_parse_buffer(&c, "t.conf", text, strlen(text), &diags), 0);
        CHECK_INT(c.n_rules, 3);
        CHECK_INT(diags.n, 2);
        CHECK_INT(config_diags_errors(&diags), 2);
        if (diags.n == 2) {
                CHECK_INT(diags.items[0].line, 4);
                CHECK_CONTAINS(diags.items[0].message,
                               "invalid Need= value \"none\": expected recommended or "
                               "required (Need= can only raise the detected need)");
                CHECK_INT(diags.items[1].line, 5);
        }
        if (c.n_rules == 3) {
                CHECK_INT(c.rules[0].need, NEED_RECOMMENDED);
                CHECK_INT(c.rules[0].need_line, 2);
                CHECK_INT(c.rules[1].need, -1);
                CHECK_INT(c.rules[2].need, -1); /* empty resets */
        }
        char *props[] = { NULL };
        DeviceIdentity id = { .name = "loop1", .properties = props };
        const DeviceRule *rule = NULL;
        CHECK_INT(config_device_need(&c, &id, &rule), NEED_RECOMMENDED);
        CHECK(rule == &c.rules[0]);
        id.name = "zram0";
        CHECK_INT(config_device_need(&c, &id, &rule), -1);
        CHECK(!rule);
}

int main(void) {
        dir = tree_new();
        test_round_trip();
        test_damaged();
        test_key();
        test_load_drops();
        test_need_parse();
        test_engine_reads_learned();
        test_engine_name_reused();
        tree_free(dir);
        return tests_finish();
}
