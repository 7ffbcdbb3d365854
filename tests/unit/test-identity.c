/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What overrides are bound to (daemon/core/identity.c, the matching of config.c, the engine): a
 * persistent override binds to the most stable identity a disk has and no other disk shares,
 * is written where a [Device] header can hold it (glob characters escaped, nothing the parser
 * would strip or refuse), in a drop-in named after it; reset finds the drop-ins that match a
 * disk whatever its name; a runtime override applies to the disk with its diskseq only,
 * never to the next disk of that name. */

#include <sys/sysmacros.h>

#include "engine.h"
#include "fake-sysfs.h"
#include "identity.h"
#include "log.h"
#include "util.h"

static char *dir;

static DeviceFacts disk(const char *name, unsigned minor, char **props) {
        return (DeviceFacts){ .name = (char *) name, .devnum = makedev(8, minor), .properties = props };
}

/* The identity picked for table[0] of t, as "KEY=value" or "-" when none. */
static char *pick(DeviceFacts *table, size_t n, StableIdPick how) {
        DeviceTable t = { .devices = table, .n = n };
        _cleanup_(stable_id_done) StableId id = {};
        _cleanup_free_ char *why = NULL;
        int r = stable_id_pick(&table[0], &t, how, &id, &why);
        if (r == -ENXIO) {
                CHECK(why != NULL);
                return strdup_printf("- (%s)", why);
        }
        CHECK_INT(r, 0);
        return r < 0 ? NULL : stable_id_match_text(&id);
}

static void test_pick_order(void) {
        char *all[] = { (char *) "ID_PATH=pci-0000:00:1f.2-ata-1", (char *) "ID_SERIAL=WDC_WD10_WX11",
                        (char *) "ID_WWN=0x50014ee2b1c0", (char *) "ID_WWN_WITH_EXTENSION=0x50014ee2b1c0ab",
                        NULL };
        DeviceFacts f[] = { disk("sdb", 16, all) };
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *g = NULL, *h = NULL,
                            *i = NULL;

        CHECK_STR(a = pick(f, 1, STABLE_ID_ANY), "ID_WWN_WITH_EXTENSION=0x50014ee2b1c0ab");
        all[3] = NULL;
        CHECK_STR(b = pick(f, 1, STABLE_ID_ANY), "ID_WWN=0x50014ee2b1c0");
        all[2] = NULL;
        CHECK_STR(c = pick(f, 1, STABLE_ID_ANY), "ID_SERIAL=WDC_WD10_WX11");
        all[1] = NULL;
        CHECK_STR(d = pick(f, 1, STABLE_ID_ANY), "ID_PATH=pci-0000:00:1f.2-ata-1");
        /* What names the disk itself (the key of a learned verdict): never the slot. */
        h = pick(f, 1, STABLE_ID_OF_DISK);
        CHECK_CONTAINS(h,
                       "- (no identity of the disk itself (none of ID_WWN, ID_SERIAL, DM_UUID, MD_UUID or a "
                       "loop backing file is usable: ID_PATH=pci-0000:00:1f.2-ata-1 names the slot, not the "
                       "disk))");
        all[1] = (char *) "ID_SERIAL=WDC_WD10_WX11";
        CHECK_STR(i = pick(f, 1, STABLE_ID_OF_DISK), "ID_SERIAL=WDC_WD10_WX11");
        all[1] = NULL;
        all[0] = NULL;
        e = pick(f, 1, STABLE_ID_ANY);
        CHECK_CONTAINS(e, "- (no stable identity to bind a persistent override to");
        CHECK_STR(g = pick(f, 1, STABLE_ID_BY_NAME), "sdb"); /* the kernel name, when asked for */
}

/* An identity another disk shares is skipped: two paths to one LUN, USB bridges that report
 * one serial for every disk, a member of an md array. */
static void test_pick_unique(void) {
        char *p1[] = { (char *) "ID_SERIAL=USB_Bridge_000000",
                       (char *) "ID_PATH=pci-0000:00:14.0-usb-0:1:1.0", NULL };
        char *p2[] = { (char *) "ID_SERIAL=USB_Bridge_000000",
                       (char *) "ID_PATH=pci-0000:00:14.0-usb-0:2:1.0", NULL };
        char *p3[] = { (char *) "ID_SERIAL=USB_Bridge_000000", NULL };
        char *member[] = { (char *) "MD_UUID=4c4e1c3a:aa", NULL };
        DeviceFacts f[] = { disk("sdb", 16, p1), disk("sdc", 32, p2) };
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        CHECK_STR(a = pick(f, 2, STABLE_ID_ANY), "ID_PATH=pci-0000:00:14.0-usb-0:1:1.0");
        f[0].properties = p3;
        b = pick(f, 2, STABLE_ID_ANY);
        CHECK_CONTAINS(b, "ID_SERIAL=USB_Bridge_000000 is shared by sdc");
        /* MD_UUID of a member disk names the array, not the disk. */
        f[0].properties = member;
        c = pick(f, 1, STABLE_ID_ANY);
        CHECK_CONTAINS(c, "- (no stable identity");
}

static void test_pick_loop_and_md(void) {
        char *md_props[] = { (char *) "MD_UUID=4c4e1c3a:8b2f", NULL };
        DeviceFacts f[] = {
                { .name = (char *) "loop3",
                  .devnum = makedev(7, 3),
                  .kind = DEVICE_KIND_LOOP,
                  .loop_backing_file = (char *) "/srv/img/a b[1]*.img" },
                { .name = (char *) "loop4",
                  .devnum = makedev(7, 4),
                  .kind = DEVICE_KIND_LOOP,
                  .loop_backing_file = (char *) "/srv/img/a b[1]x.img" },
                { .name = (char *) "md0",
                  .devnum = makedev(9, 0),
                  .kind = DEVICE_KIND_MD,
                  .properties = md_props },
        };
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        /* Glob characters are escaped: the match is the file, not a pattern that also
         * matches loop4's. */
        CHECK_STR(a = pick(f, 3, STABLE_ID_ANY), "LOOP_BACKING_FILE=/srv/img/a b\\[1\\]\\*.img");
        /* The same file attached twice: two disks, one file. */
        f[1].loop_backing_file = f[0].loop_backing_file;
        b = pick(f, 2, STABLE_ID_ANY);
        CHECK_CONTAINS(b, "LOOP_BACKING_FILE=/srv/img/a b[1]*.img is shared by loop4");
        CHECK_STR(c = pick(&f[2], 1, STABLE_ID_ANY), "MD_UUID=4c4e1c3a:8b2f");
}

/* What a [Device] header cannot hold is skipped: too long a line, control characters. */
static void test_pick_unwritable(void) {
        char longer[CONFIG_LINE_MAX + 100];
        memset(longer, 'x', sizeof longer - 1);
        longer[sizeof longer - 1] = '\0';
        _cleanup_free_ char *serial = strdup_printf("ID_SERIAL=%s", longer);
        char *props[] = { serial, (char *) "ID_WWN=0x5000\001c500",
                          (char *) "ID_PATH=virtio-pci-0000:00:05.0", NULL };
        DeviceFacts f[] = { disk("vdb", 16, props) };
        _cleanup_free_ char *a = NULL;

        CHECK_STR(a = pick(f, 1, STABLE_ID_ANY), "ID_PATH=virtio-pci-0000:00:05.0");
        props[2] = NULL;
        _cleanup_free_ char *b = pick(f, 1, STABLE_ID_ANY);
        CHECK_CONTAINS(b, "cannot be written in a [Device] section (line contains a control character");
        CHECK_CONTAINS(b, "cannot be written in a [Device] section (line is too long");
}

static void test_dropin_names(void) {
        char longer[400];
        StableId a = { .label = "serial", .key = "ID_SERIAL", .value = (char *) "WDC_WD10_WX11" };
        StableId b = { .label = "loop",
                       .key = MATCH_KEY_LOOP_BACKING_FILE,
                       .value = (char *) "/srv/a b%.img" };
        StableId n = { .label = "name", .value = (char *) "zram0" };
        _cleanup_free_ char *na = stable_id_dropin_name(&a), *nb = stable_id_dropin_name(&b),
                            *nn = stable_id_dropin_name(&n);

        CHECK_STR(na, "90-stablepagesctl-serial-WDC_WD10_WX11.conf");
        CHECK_STR(nb, "90-stablepagesctl-loop-%2Fsrv%2Fa%20b%25.img.conf");
        CHECK_STR(nn, "90-stablepagesctl-name-zram0.conf");
        CHECK(dropin_is_ours(na) && dropin_is_ours("/etc/x/90-stablepagesctl-sdb.conf"));
        CHECK(!dropin_is_ours("/etc/x/50-admin.conf") && !dropin_is_ours("90-stablepagesctl-.conf"));

        /* Long values: cut, and told apart by a hash of the whole. */
        memset(longer, '/', sizeof longer - 1);
        longer[sizeof longer - 1] = '\0';
        b.value = longer;
        _cleanup_free_ char *l1 = stable_id_dropin_name(&b);
        longer[sizeof longer - 2] = 'x';
        _cleanup_free_ char *l2 = stable_id_dropin_name(&b);
        CHECK(l1 && l2 && !streq(l1, l2));
        CHECK(l1 && strlen(l1) < 255 && dropin_is_ours(l1) && !strstr(l1, "%2~") && !strstr(l1, "%~"));

        _cleanup_free_ char *text = stable_id_dropin_text(&a, "sdb", SETTING_OFF, true);
        CHECK_STR(text, "# Written by stablepagesctl set sdb off --force; removed by stablepagesctl reset.\n"
                        "# Bound to the disk's identity, not to its kernel name.\n"
                        "[Device ID_SERIAL=WDC_WD10_WX11]\nStableWrites=off\nForce=yes\n");
}

/* reset finds the drop-ins of stablepagesctl that match the disk, whatever name they carry
 * (an earlier version named them after the kernel name), and nobody else's. */
static void test_dropins_matching(void) {
        char *a[] = { (char *) "ID_SERIAL=A", NULL };
        DeviceFacts sdc = disk("sdc", 32, a);
        DeviceIdentity id = device_identity_of(&sdc);
        _cleanup_strv_free_ char **paths = NULL, **none = NULL;
        _cleanup_free_ char *d = tree_path(dir, "conf.d"), *missing = tree_path(dir, "nothing");

        tree_put(dir, "conf.d/90-stablepagesctl-sdb.conf", "[Device ID_SERIAL=A]\nStableWrites=off\n");
        tree_put(dir, "conf.d/90-stablepagesctl-serial-B.conf", "[Device ID_SERIAL=B]\nStableWrites=on\n");
        tree_put(dir, "conf.d/90-stablepagesctl-name-sdc.conf", "[Device sdc]\nStableWrites=on\n");
        tree_put(dir, "conf.d/50-admin.conf", "[Device ID_SERIAL=A]\nStableWrites=on\n");
        CHECK_INT(dropins_matching(d, &id, &paths), 2);
        if (strv_length(paths) == 2) {
                CHECK_CONTAINS(paths[0], "/conf.d/90-stablepagesctl-name-sdc.conf");
                CHECK_CONTAINS(paths[1], "/conf.d/90-stablepagesctl-sdb.conf");
        }
        CHECK_INT(dropins_matching(missing, &id, &none), 0);
}

static void make_disks(const char *root) {
        tree_put(root, "sys/block/zram0/dev", "252:0\n");
        tree_put(root, "sys/block/zram0/diskseq", "20\n");
        tree_put(root, "sys/block/zram0/queue/stable_writes", "1\n");
        tree_put(root, "sys/block/loop3/dev", "7:3\n");
        tree_put(root, "sys/block/loop3/diskseq", "21\n");
        tree_put(root, "sys/block/loop3/queue/stable_writes", "1\n");
        tree_put(root, "sys/block/loop3/loop/backing_file", "/srv/b.img\n");
}

static int no_backing(const char *file, void *userdata, dev_t *ret) {
        return -ENOENT;
}

static EngineDevice *scan(Engine *e, const char *root, const char *name) {
        _cleanup_free_ char *sys = tree_path(root, "sys"), *conf = tree_path(root, "etc/stablepages.conf"),
                            *dropins = tree_path(root, "etc/stablepages.conf.d"),
                            *run = tree_path(root, "run"), *state = tree_path(root, "state");
        EngineOptions o = { .sysfs_root = sys,
                            .config_file = conf,
                            .dropin_dir = dropins,
                            .runtime_dir = run,
                            .state_dir = state,
                            .udev_data_dir = "",
                            .kernel_release = "6.12.0",
                            .resolve_backing = no_backing };

        engine_done(e);
        CHECK_INT(engine_init(e, &o), 0);
        CHECK_INT(engine_load_config(e), 0);
        CHECK_INT(engine_load_overrides(e), 0);
        CHECK_INT(engine_scan(e), 0);
        return engine_find(e, name);
}

/* The one-shot applier's engine: a runtime override applies to its disk only. */
static void test_engine_runtime_binding(void) {
        char *root = tree_new();
        _cleanup_(engine_done) Engine e = {};
        EngineDevice *d;

        make_disks(root);
        tree_put(root, "etc/stablepages.conf", "[Manager]\nPolicy=latency\n");

        /* Set on an earlier zram0 (diskseq 10): the new one is required, and stays on. */
        tree_put(root, "run/overrides", "diskseq=10 zram0 off force\n");
        d = scan(&e, root, "zram0");
        CHECK(d && d->decision.desired == 1 && d->setting_source == SOURCE_CONFIG && !d->override_scope);
        /* Written by an earlier version, keyed by name: never applied as it is. */
        tree_put(root, "run/overrides", "zram0 off force\n");
        d = scan(&e, root, "zram0");
        CHECK(d && d->decision.desired == 1 && !d->override_scope);
        /* Set on this zram0: forced off, and shown bound to its diskseq. */
        tree_put(root, "run/overrides", "diskseq=20 zram0 off force\n");
        d = scan(&e, root, "zram0");
        CHECK(d && d->decision.desired == 0 && d->decision.forced && d->setting_source == SOURCE_RUNTIME);
        if (d) {
                CHECK_STR(d->override_scope, "runtime");
                CHECK_STR(d->override_binding, "diskseq 20");
                CHECK_CONTAINS(d->override_source, "/run/overrides");
        }
        tree_free(root);
}

/* A persistent override bound to a loop's backing file follows the file, not the name. */
static void test_engine_persistent_binding(void) {
        char *root = tree_new();
        _cleanup_(engine_done) Engine e = {};
        OverrideEntry *entries = NULL;
        size_t n = 0;
        EngineDevice *d;

        make_disks(root);
        tree_put(root, "etc/stablepages.conf", "[Manager]\nPolicy=latency\n");
        tree_put(root, "etc/stablepages.conf.d/90-stablepagesctl-loop-%2Fsrv%2Fa.img.conf",
                 "[Device LOOP_BACKING_FILE=/srv/a.img]\nStableWrites=on\n");
        d = scan(&e, root, "loop3");
        CHECK(d && d->decision.desired == 0 && !d->override_scope);
        /* Nothing matches it now: listed as kept for an absent disk. */
        CHECK_INT(engine_list_overrides(&e, NULL, &entries, &n), 0);
        CHECK_INT(n, 1);
        if (n == 1) {
                CHECK(!entries[0].disk && entries[0].setting == SETTING_ON);
                CHECK_STR(entries[0].binding, "LOOP_BACKING_FILE=/srv/a.img");
                CHECK_CONTAINS(entries[0].source, "90-stablepagesctl-loop-%2Fsrv%2Fa.img.conf:1");
        }
        override_entries_free(entries, n);

        tree_put(root, "sys/block/loop3/loop/backing_file", "/srv/a.img\n");
        d = scan(&e, root, "loop3");
        CHECK(d && d->decision.desired == 1 && d->setting_source == SOURCE_CONFIG);
        if (d) {
                CHECK_STR(d->override_scope, "config");
                CHECK_STR(d->override_binding, "LOOP_BACKING_FILE=/srv/a.img");
        }
        CHECK_INT(engine_list_overrides(&e, NULL, &entries, &n), 0);
        CHECK_INT(n, 1);
        if (n == 1)
                CHECK_STR(entries[0].disk, "loop3");
        override_entries_free(entries, n);
        tree_free(root);
}

int main(void) {
        log_set_max_level(LOG_ERR);
        dir = tree_new();
        test_pick_order();
        test_pick_unique();
        test_pick_loop_and_md();
        test_pick_unwritable();
        test_dropin_names();
        test_dropins_matching();
        test_engine_runtime_binding();
        test_engine_persistent_binding();
        tree_free(dir);
        return tests_finish();
}
