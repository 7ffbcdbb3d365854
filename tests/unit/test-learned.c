/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/learned.c: what Policy=balanced learned survives a reboot: saved records load back
 * the same, a reason with tabs and line breaks stays one field, damaged lines are skipped
 * and the rest kept, the key prefers WWN then serial then the kernel name. And the engine
 * reads the learned state (what the one-shot udev applier does at boot): a recommended disk
 * with a learned off is decided off by Policy=balanced, source "stalls", and not by the other
 * policies or for a required disk. */

#include <sys/sysmacros.h>

#include "engine.h"
#include "fake-sysfs.h"
#include "learned.h"

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
        LearnedRecord b = { .key = (char *) "name:loop7",
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
        CHECK_INT(learned_load(dir, &out), 0);
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
        r = learned_find(&out, "name:loop7");
        CHECK(r && r->learned == LEARNED_OFF && streq(r->reason, ""));
        CHECK(!learned_find(&out, "name:loop8"));
}

static void test_damaged(void) {
        _cleanup_(learned_records_done) LearnedRecords out = {};
        _cleanup_free_ char *path = path_join(dir, "learned");
        const char *text = "# comment\n"
                           "name:a\ta\toff\t5\t6\t7\t8\tgood one\n"
                           "name:b\tb\tmaybe\t5\t6\t7\t8\tbad state\n"
                           "name:c\tc\toff\tx\t6\t7\t8\tbad number\n"
                           "name:d\t../x\toff\t5\t6\t7\t8\tbad disk name\n"
                           "too few fields\n"
                           "name:e\te\ton\t1\t2\t3\t4\tlast, no newline";

        CHECK_INT(write_file_atomic(path, text, strlen(text), 0644), 0);
        CHECK_INT(learned_load(dir, &out), 0);
        CHECK_INT(out.n, 2);
        CHECK(learned_find(&out, "name:a") && learned_find(&out, "name:e"));

        _cleanup_(learned_records_done) LearnedRecords none = {};
        _cleanup_free_ char *missing = path_join(dir, "nothing-here");
        CHECK_INT(learned_load(missing, &none), 0);
        CHECK_INT(none.n, 0);
}

static void test_key(void) {
        char *wwn[] = { (char *) "ID_SERIAL=disk_1", (char *) "ID_WWN=0x50", NULL };
        char *serial[] = { (char *) "ID_SERIAL=disk_1", NULL };
        DeviceFacts f = { .name = (char *) "sdb", .properties = wwn };
        _cleanup_free_ char *k1 = learned_key(&f);
        f.properties = serial;
        _cleanup_free_ char *k2 = learned_key(&f);
        f.properties = NULL;
        _cleanup_free_ char *k3 = learned_key(&f);
        DeviceFacts loop = { .name = (char *) "loop7",
                             .kind = DEVICE_KIND_LOOP,
                             .loop_backing_file = (char *) "/srv/images/a b.img" };
        _cleanup_free_ char *k4 = learned_key(&loop);
        loop.loop_backing_file = NULL;
        _cleanup_free_ char *k5 = learned_key(&loop);

        CHECK_STR(k1, "wwn:0x50");
        CHECK_STR(k2, "serial:disk_1");
        CHECK_STR(k3, "name:sdb");
        CHECK_STR(k4, "loop:/srv/images/a b.img");
        CHECK_STR(k5, "name:loop7");
}

/* A fake loop disk (need none) and zram disk (need required) under root. */
static void make_sysfs(const char *root) {
        tree_put(root, "block/loop3/dev", "7:3\n");
        tree_put(root, "block/loop3/queue/stable_writes", "1\n");
        tree_put(root, "block/zram0/dev", "252:0\n");
        tree_put(root, "block/zram0/queue/stable_writes", "1\n");
}

static void test_engine_reads_learned(void) {
        char *root = tree_new();
        _cleanup_free_ char *conf = tree_path(root, "etc/stablepages.conf"),
                            *dropins = tree_path(root, "etc/stablepages.conf.d"),
                            *run = tree_path(root, "run"), *state = tree_path(root, "state"),
                            *udev = tree_path(root, "udev");
        _cleanup_(learned_records_done) LearnedRecords l = {};
        const char *policies[] = { "balanced", "latency", "integrity" };

        make_sysfs(root);
        LearnedRecord rec = { .key = (char *) "name:loop3",
                              .disk = (char *) "loop3",
                              .learned = LEARNED_OFF,
                              .since_usec = 1764730000000000,
                              .reason = (char *) "p99 wait 128.0 ms, over" };
        CHECK_INT(learned_set(&l, &rec), 0);
        rec.key = (char *) "name:zram0";
        rec.disk = (char *) "zram0";
        CHECK_INT(learned_set(&l, &rec), 0);
        CHECK_INT(learned_save(state, &l), 0);

        for (size_t i = 0; i < ELEMENTSOF(policies); i++) {
                _cleanup_(engine_done) Engine e = {};
                _cleanup_free_ char *text =
                        strdup_printf("[Manager]\nPolicy=%s\n[Device loop3]\nNeed=recommended\n"
                                      "[Device zram0]\nNeed=recommended\n",
                                      policies[i]);
                EngineOptions o = { .sysfs_root = root,
                                    .config_file = conf,
                                    .dropin_dir = dropins,
                                    .runtime_dir = run,
                                    .state_dir = state,
                                    .udev_data_dir = udev,
                                    .kernel_release = "6.12.0" };

                fprintf(stderr, "Policy=%s\n", policies[i]);
                tree_put(root, "etc/stablepages.conf", text);
                CHECK_INT(engine_init(&e, &o), 0);
                CHECK_INT(engine_load_config(&e), 0);
                CHECK_INT(engine_load_learned(&e), 0);
                CHECK_INT(engine_scan(&e), 0);
                EngineDevice *loop = engine_find(&e, "loop3"), *zram = engine_find(&e, "zram0");
                CHECK(loop && zram);
                if (!loop || !zram)
                        continue;
                CHECK_INT(loop->class.need, NEED_RECOMMENDED);
                CHECK_INT(loop->learned, LEARNED_OFF);
                CHECK_STR(loop->learned_reason, "p99 wait 128.0 ms, over");
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
        test_need_parse();
        test_engine_reads_learned();
        tree_free(dir);
        return tests_finish();
}
