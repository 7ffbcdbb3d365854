/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* engine_rescan_disks(), what the daemon runs for a "change" uevent: an event on a disk
 * below a stack re-derives the stack above it (holders/, a dio loop device whose backing
 * file lives there), re-reads nothing else, and concludes exactly what a full scan does. */
#include <sys/sysmacros.h>

#include "engine.h"
#include "fake-sysfs.h"

static char *root;

static void put(const char *disk, const char *attr, const char *value) {
        char rel[256];
        snprintf(rel, sizeof rel, "block/%s/%s", disk, attr);
        tree_put(root, rel, value);
}

/* A disk with devnum maj:min, stable_writes flag, empty slaves/ and holders/. */
static void make_disk(const char *name, unsigned maj, unsigned min, const char *flag) {
        char dev[32], rel[256];

        snprintf(dev, sizeof dev, "%u:%u\n", maj, min);
        put(name, "dev", dev);
        put(name, "diskseq", "7\n");
        put(name, "queue/stable_writes", flag);
        snprintf(rel, sizeof rel, "block/%s/holders", name);
        tree_mkdir(root, rel);
        snprintf(rel, sizeof rel, "block/%s/slaves", name);
        tree_mkdir(root, rel);
}

/* upper stacks on lower: upper/slaves/lower and lower/holders/upper. */
static void stack(const char *upper, const char *lower) {
        char rel[256], target[256];

        snprintf(rel, sizeof rel, "block/%s/slaves/%s", upper, lower);
        snprintf(target, sizeof target, "../../%s", lower);
        tree_symlink(root, rel, target);
        snprintf(rel, sizeof rel, "block/%s/holders/%s", lower, upper);
        snprintf(target, sizeof target, "../../%s", upper);
        tree_symlink(root, rel, target);
}

/* Every backing file lives on dm-0. */
static int resolve_on_dm0(const char *backing_file, void *userdata, dev_t *ret) {
        *ret = makedev(254, 0);
        return 0;
}

static int engine_new(Engine *e) {
        _cleanup_free_ char *udev = tree_path(root, "udev"), *conf = tree_path(root, "etc/stablepages.conf"),
                            *dropins = tree_path(root, "etc/conf.d"), *run = tree_path(root, "run");
        EngineOptions o = {
                .sysfs_root = root,
                .udev_data_dir = udev,
                .config_file = conf,
                .dropin_dir = dropins,
                .runtime_dir = run,
                .state_dir = run,
                .kernel_release = "6.18.0",
                .resolve_backing = resolve_on_dm0,
        };
        int r = engine_init(e, &o);
        if (r >= 0)
                r = engine_load_config(e);
        if (r >= 0)
                r = engine_scan(e);
        return r;
}

static char *dump(const Engine *e) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        CHECK(f);
        if (!f)
                exit(1);
        engine_dump_json(e, NULL, f, true);
        fclose(f);
        return buf;
}

static const EngineDevice *find(Engine *e, const char *name) {
        const EngineDevice *d = engine_find(e, name);
        CHECK(d);
        if (!d)
                exit(1);
        return d;
}

static bool redone(Engine *e, const bool *set, const char *name) {
        return set[find(e, name)->facts - e->table.devices];
}

int main(void) {
        _cleanup_(engine_done) Engine e = {}, full = {};
        _cleanup_free_ bool *set = NULL;
        _cleanup_free_ char *a = NULL, *b = NULL;
        char name[32];

        root = tree_new();
        tree_put(root, "etc/stablepages.conf", "[Manager]\nPolicy=latency\n");
        /* sda, sdb: plain disks under md0 (raid1), dm-0 on md0, loop0 (dio=1) with its backing
         * file on dm-0; sdc and 40 loop devices beside them. */
        make_disk("sda", 8, 0, "0\n");
        put("sda", "device/driver/.keep", "");
        make_disk("sdb", 8, 16, "0\n");
        make_disk("sdc", 8, 32, "0\n");
        make_disk("md0", 9, 0, "0\n");
        put("md0", "md/level", "raid1\n");
        make_disk("dm-0", 254, 0, "0\n");
        put("dm-0", "dm/name", "vg-lv\n");
        put("dm-0", "dm/uuid", "LVM-abc\n");
        /* its table, as the udev rule records it (without it a dm device is "unknown") */
        tree_put(root, "udev/b254:0", "E:STABLEPAGES_DM_TABLE=1\nE:STABLEPAGES_DM_TARGETS=linear\n");
        stack("md0", "sda");
        stack("md0", "sdb");
        stack("dm-0", "md0");
        make_disk("loop0", 7, 0, "0\n");
        put("loop0", "loop/backing_file", "/srv/image\n");
        put("loop0", "loop/dio", "1\n");
        for (unsigned i = 1; i <= 40; i++) {
                snprintf(name, sizeof name, "loop%u", i);
                make_disk(name, 7, i, "0\n");
                put(name, "loop/dio", "0\n");
        }

        CHECK_INT(engine_new(&e), 0);
        CHECK_INT(find(&e, "dm-0")->class.need, NEED_RECOMMENDED);
        CHECK_INT(find(&e, "loop0")->class.need, NEED_RECOMMENDED);
        CHECK_INT(find(&e, "sda")->class.need, NEED_NONE);

        /* sda turns out to be a PI disk whose kernel generates the checksum (a uevent "change"
         * on sda); sdc changes too, but without an event. */
        put("sda", "integrity/format", "T10-DIF-TYPE1-CRC\n");
        put("sda", "integrity/write_generate", "1\n");
        put("sda", "queue/stable_writes", "1\n");
        put("sdc", "queue/stable_writes", "1\n");

        CHECK_INT(engine_rescan_disks(&e, (char *[]){ "sda", NULL }, &set), 0);
        /* Re-derived: sda and everything stacked on it, nothing else. */
        CHECK(redone(&e, set, "sda"));
        CHECK(redone(&e, set, "md0"));
        CHECK(redone(&e, set, "dm-0"));
        CHECK(redone(&e, set, "loop0"));
        CHECK(!redone(&e, set, "sdb"));
        CHECK(!redone(&e, set, "sdc"));
        CHECK(!redone(&e, set, "loop7"));
        CHECK_INT(find(&e, "sdc")->facts->stable_writes, 0); /* not re-read */
        CHECK_INT(find(&e, "sda")->class.need, NEED_REQUIRED);
        CHECK_INT(find(&e, "md0")->class.need, NEED_REQUIRED);
        CHECK_INT(find(&e, "dm-0")->class.need, NEED_REQUIRED);
        CHECK(strstr(find(&e, "dm-0")->class.reasons[0], "stacked on md0, which is required"));
        CHECK_INT(find(&e, "loop0")->class.need, NEED_REQUIRED);
        CHECK(strstr(find(&e, "loop0")->class.reasons[0], "its backing file lives on dm-0"));
        CHECK_INT(find(&e, "loop0")->decision.desired, 1);
        CHECK_INT(find(&e, "dm-0")->decision.desired, 1);

        /* The same as a full scan of the same tree. */
        put("sdc", "queue/stable_writes", "0\n");
        CHECK_INT(engine_new(&full), 0);
        a = dump(&e);
        b = dump(&full);
        CHECK_STR(a, b);

        /* An event on a disk in the middle of the stack: up to loop0, down to sda and sdb. */
        put("md0", "md/level", "raid0\n");
        set = mfree(set);
        CHECK_INT(engine_rescan_disks(&e, (char *[]){ "md0", NULL }, &set), 0);
        CHECK(redone(&e, set, "sda") && redone(&e, set, "sdb") && redone(&e, set, "md0"));
        CHECK(redone(&e, set, "dm-0") && redone(&e, set, "loop0"));
        CHECK(!redone(&e, set, "sdc"));
        engine_done(&full);
        CHECK_INT(engine_new(&full), 0);
        a = mfree(a);
        b = mfree(b);
        a = dump(&e);
        b = dump(&full);
        CHECK_STR(a, b);

        /* A stack built on sdc names a disk the table does not have: a full scan is needed. */
        make_disk("dm-1", 254, 1, "0\n");
        put("dm-1", "dm/name", "new\n");
        stack("dm-1", "sdc");
        CHECK_INT(engine_rescan_disks(&e, (char *[]){ "sdc", NULL }, NULL), -ESTALE);
        engine_done(&e);
        CHECK_INT(engine_new(&e), 0);
        /* A disk that is gone, or not known at all: the same. */
        tree_rm(root, "block/loop40");
        CHECK_INT(engine_rescan_disks(&e, (char *[]){ "loop40", NULL }, NULL), -ESTALE);
        CHECK_INT(engine_rescan_disks(&e, (char *[]){ "nvme0n1", NULL }, NULL), -ESTALE);

        tree_free(root);
        return tests_finish();
}
