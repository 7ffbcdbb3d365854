/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Need, reasons and desired state under every policy mode, on sysfs trees captured from
 * real kernels (tests/fixtures/, see its README for the command behind each), and each
 * detector on facts written here, where no guest can produce them (MMC over SPI, iSCSI
 * offload HBAs, integrity "nop", unknown device-mapper targets…). */
#include <sys/sysmacros.h>

#include "engine.h"
#include "fake-sysfs.h"
#include "history.h"
#include "sysfs.h"
#include "tests.h"
#include "util.h"

#ifndef FIXTURES_DIR
#error "FIXTURES_DIR must point at tests/fixtures"
#endif

typedef struct Expect {
        const char *fixture;
        const char *device;
        Need need;
        const char *reason; /* a part of the first (deciding) reason */
        const char *also;   /* a part of another reason (the chain), or NULL */
        bool in_force;
        const char *desired; /* per mode observe, latency, balanced, integrity: '-' '0' '1' */
} Expect;

/* One row a line, wider than the style's columns: easier to read as a table. */
/* clang-format off */
static const Expect expects[] = {
        /* this machine (6.18) */
        { "host-loop", "vda", NEED_NONE, "plain virtio disk (driver virtio_blk)", NULL, false, "-000" },
        { "host-loop", "zram0", NEED_REQUIRED, "zram compresses the page", NULL, true, "-111" },
        { "host-loop", "loop0", NEED_NONE, "buffered I/O (dio=0) copies the page", NULL, false, "-000" },
        { "host-loop", "loop1", NEED_NONE, "dio=1 writes the page directly", NULL, false, "-000" },
        { "host-loop", "loop3", NEED_NONE, "loop device without a backing file", NULL, false, "-000" },
        { "host-zram", "zram0", NEED_REQUIRED, "zram compresses the page", NULL, true, "-111" },

        /* 6.1 (6.1.0-57 = 6.1.192): integrity registration sets stable_writes=1 */
        { "vm-6.1-pi-wg1", "sda", NEED_REQUIRED, "T10-DIF-TYPE1-CRC with write_generate=1", NULL, true, "-111" },
        { "vm-6.1-pi-wg0", "sda", NEED_RECOMMENDED, "T10-DIF-TYPE1-CRC with write_generate=0", NULL, true, "-011" },
        { "vm-6.1-dm-linear-pi", "dm-0", NEED_REQUIRED, "T10-DIF-TYPE1-CRC with write_generate=1", "stacked on sda, which is required", true, "-111" },
        { "vm-6.1-dm-linear-pi", "sda", NEED_REQUIRED, "T10-DIF-TYPE1-CRC with write_generate=1", NULL, true, "-111" },
        { "vm-6.1-md-raid1", "md0", NEED_RECOMMENDED, "md raid1 writes the same page to each mirror", NULL, false, "-011" },
        { "vm-6.1-md-raid5-sc0", "md0", NEED_NONE, "md raid5 with skip_copy=0 copies the page", NULL, false, "-000" },
        { "vm-6.1-md-raid5-sc1", "md0", NEED_REQUIRED, "md raid5 with skip_copy=1 computes parity", NULL, true, "-111" },
        { "vm-6.1-md-raid6-sc1", "md0", NEED_REQUIRED, "md raid6 with skip_copy=1 computes parity", NULL, true, "-111" },
        { "vm-6.1-md-raid6-sc1", "dm-0", NEED_REQUIRED, "stacked on md0, which is required: md raid6 with skip_copy=1", "device-mapper target linear (sp-linear-raid6) passes the page through", true, "-111" },
        { "vm-6.1-md-raid6-sc1", "loop0", NEED_NONE, "buffered I/O (dio=0)", NULL, false, "-000" },
        { "vm-6.1-dm-crypt", "dm-0", NEED_NONE, "dm-crypt (sp-crypt) encrypts the page into its own buffer", NULL, false, "-000" },
        { "vm-6.1-dm-crypt-integrity", "dm-0", NEED_NONE, "integrity profile DM-DIF-EXT-TAG computes nothing from the data", "dm-integrity (sp-ci_dif, journal mode) without internal hash stores the tags the layer above supplies", false, "-000" },
        { "vm-6.1-dm-crypt-integrity", "dm-1", NEED_NONE, "dm-crypt (sp-ci) encrypts the page into its own buffer before it is written, and computes its integrity tags (aead)", NULL, false, "-000" },
        { "vm-6.1-dm-integrity-journal", "dm-0", NEED_NONE, "dm-integrity (sp-integrity) in journal mode with internal hash crc32c copies the data", NULL, false, "-000" },
        { "vm-6.1-dm-integrity-bitmap", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) in bitmap mode with internal hash crc32c computes the tag", "this kernel declared stable writes for it", true, "-111" },
        { "vm-6.1-dm-integrity-nojournal", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) in direct mode with internal hash crc32c computes the tag", "this kernel declared stable writes for it", true, "-111" },
        { "vm-6.1-dm-integrity-dmsetup-bitmap", "dm-0", NEED_REQUIRED, "dm-integrity (sp-bare) in bitmap mode with internal hash crc32c", "this kernel declared stable writes for it", true, "-111" },
        { "vm-6.1-dm-lvm-raid1-integrity", "dm-1", NEED_REQUIRED, "dm-integrity (vg-lv_rimage_0) in bitmap mode with internal hash crc32c", NULL, true, "-111" },
        { "vm-6.1-dm-lvm-raid1-integrity", "dm-4", NEED_REQUIRED, "stacked on dm-1, which is required: dm-integrity (vg-lv_rimage_0) in bitmap mode", "dm-raid (vg-lv, raid1) writes the same page to each leg", true, "-111" },
        { "vm-6.1-dm-lvm-raid1-integrity", "dm-0", NEED_NONE, "device-mapper target linear (vg-lv_rimage_0_iorig) passes the page through", NULL, false, "-000" },
        { "vm-6.1-nvme-tcp-digest", "nvme0c0n1", NEED_REQUIRED, "NVMe/TCP with data digest", NULL, true, "-111" },
        { "vm-6.1-nvme-tcp-digest", "nvme0n1", NEED_REQUIRED, "served by path nvme0c0n1, which is required: NVMe/TCP with data digest", "NVMe multipath head", true, "-111" },
        { "vm-6.1-nvme-tcp", "nvme0c0n1", NEED_NONE, "NVMe/TCP without data digest", NULL, false, "-000" },
        { "vm-6.1-nvme-tcp", "nvme0n1", NEED_NONE, "NVMe multipath head", NULL, false, "-000" },
        /* the kernel does not propagate the need through a file: the engine must */
        { "vm-6.1-loop-dio-on-raid5", "loop3", NEED_REQUIRED, "its backing file lives on md0, which is required", "dio=1 writes the page directly", false, "-111" },
        { "vm-6.1-zram", "zram0", NEED_REQUIRED, "zram compresses the page", NULL, true, "-111" },

        /* 6.1.0-50 (6.1.176): dm-integrity never declares stable writes; the engine must */
        { "vm-6.1.0-50-dm-integrity-journal", "dm-0", NEED_NONE, "dm-integrity (sp-integrity) in journal mode with internal hash crc32c copies the data", NULL, false, "-000" },
        { "vm-6.1.0-50-dm-integrity-bitmap", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) in bitmap mode with internal hash crc32c computes the tag", "this kernel did not declare stable writes for it", false, "-111" },
        { "vm-6.1.0-50-dm-integrity-nojournal", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) in direct mode with internal hash crc32c computes the tag", "this kernel did not declare stable writes for it", false, "-111" },
        { "vm-6.1.0-50-dm-integrity-dmsetup-bitmap", "dm-0", NEED_REQUIRED, "dm-integrity (sp-bare) in bitmap mode with internal hash crc32c", "this kernel did not declare stable writes for it", false, "-111" },
        { "vm-6.1.0-50-dm-crypt-integrity", "dm-0", NEED_NONE, "integrity profile DM-DIF-EXT-TAG computes nothing from the data", "dm-integrity (sp-ci_dif, journal mode) without internal hash", false, "-000" },
        { "vm-6.1.0-50-dm-crypt-integrity", "dm-1", NEED_NONE, "dm-crypt (sp-ci) encrypts the page into its own buffer", NULL, false, "-000" },
        { "vm-6.1.0-50-dm-lvm-raid1-integrity", "dm-1", NEED_REQUIRED, "dm-integrity (vg-lv_rimage_0) in bitmap mode", "this kernel did not declare stable writes for it", false, "-111" },
        { "vm-6.1.0-50-dm-lvm-raid1-integrity", "dm-3", NEED_REQUIRED, "dm-integrity (vg-lv_rimage_1) in bitmap mode", NULL, false, "-111" },
        { "vm-6.1.0-50-dm-lvm-raid1-integrity", "dm-4", NEED_REQUIRED, "stacked on dm-1, which is required", "stacked on dm-3, which is required", false, "-111" },

        /* 6.12: a PI disk reads stable_writes=0 while its integrity profile enforces them */
        { "vm-6.12-pi-wg1", "sda", NEED_REQUIRED, "T10-DIF-TYPE1-CRC with write_generate=1", NULL, true, "-111" },
        { "vm-6.12-pi-wg0", "sda", NEED_RECOMMENDED, "T10-DIF-TYPE1-CRC with write_generate=0", NULL, true, "-111" },
        { "vm-6.12-dm-linear-pi", "dm-0", NEED_REQUIRED, "T10-DIF-TYPE1-CRC with write_generate=1", "stacked on sda, which is required", true, "-111" },
        { "vm-6.12-dm-linear-pi", "sda", NEED_REQUIRED, "T10-DIF-TYPE1-CRC with write_generate=1", NULL, true, "-111" },
        { "vm-6.12-md-raid1", "md0", NEED_RECOMMENDED, "md raid1 writes the same page to each mirror", NULL, false, "-011" },
        { "vm-6.12-md-raid5-sc0", "md0", NEED_NONE, "md raid5 with skip_copy=0 copies the page", NULL, false, "-000" },
        { "vm-6.12-md-raid5-sc1", "md0", NEED_REQUIRED, "md raid5 with skip_copy=1 computes parity", NULL, true, "-111" },
        { "vm-6.12-md-raid6-sc1", "md0", NEED_REQUIRED, "md raid6 with skip_copy=1 computes parity", NULL, true, "-111" },
        { "vm-6.12-md-raid6-sc1", "dm-0", NEED_REQUIRED, "stacked on md0, which is required: md raid6 with skip_copy=1", NULL, true, "-111" },
        { "vm-6.12-md-raid6-sc1", "loop0", NEED_NONE, "buffered I/O (dio=0)", NULL, false, "-000" },
        { "vm-6.12-dm-crypt", "dm-0", NEED_NONE, "dm-crypt (sp-crypt) encrypts the page into its own buffer", NULL, false, "-000" },
        { "vm-6.12-dm-crypt-integrity", "dm-0", NEED_NONE, "integrity profile nop computes nothing from the data", "dm-integrity (sp-ci_dif, journal mode) without internal hash", false, "-000" },
        { "vm-6.12-dm-crypt-integrity", "dm-1", NEED_NONE, "dm-crypt (sp-ci) encrypts the page into its own buffer", NULL, false, "-000" },
        { "vm-6.12-dm-integrity-journal", "dm-0", NEED_NONE, "dm-integrity (sp-integrity) in journal mode with internal hash crc32c copies the data", NULL, false, "-000" },
        { "vm-6.12-dm-integrity-bitmap", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) in bitmap mode with internal hash crc32c computes the tag", "this kernel declared stable writes for it", true, "-111" },
        { "vm-6.12-dm-integrity-nojournal", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) in direct mode with internal hash crc32c computes the tag", "this kernel declared stable writes for it", true, "-111" },
        { "vm-6.12-dm-integrity-dmsetup-bitmap", "dm-0", NEED_REQUIRED, "dm-integrity (sp-bare) in bitmap mode with internal hash crc32c", "this kernel declared stable writes for it", true, "-111" },
        { "vm-6.12-dm-lvm-raid1-integrity", "dm-3", NEED_REQUIRED, "dm-integrity (vg-lv_rimage_1) in bitmap mode with internal hash crc32c", NULL, true, "-111" },
        { "vm-6.12-dm-lvm-raid1-integrity", "dm-4", NEED_REQUIRED, "stacked on dm-1, which is required", "dm-raid (vg-lv, raid1)", true, "-111" },
        { "vm-6.12-nvme-tcp-digest", "nvme0c0n1", NEED_REQUIRED, "NVMe/TCP with data digest", NULL, true, "-111" },
        { "vm-6.12-nvme-tcp-digest", "nvme0n1", NEED_REQUIRED, "served by path nvme0c0n1, which is required: NVMe/TCP with data digest", NULL, true, "-111" },
        { "vm-6.12-nvme-tcp", "nvme0c0n1", NEED_NONE, "NVMe/TCP without data digest", NULL, false, "-000" },
        { "vm-6.12-nvme-tcp", "nvme0n1", NEED_NONE, "NVMe multipath head", NULL, false, "-000" },
        /* the kernel does not propagate the need through a file: the engine must */
        { "vm-6.12-loop-dio-on-raid5", "loop3", NEED_REQUIRED, "its backing file lives on md0, which is required", "dio=1 writes the page directly", false, "-111" },
        { "vm-6.12-zram", "zram0", NEED_REQUIRED, "zram compresses the page", NULL, true, "-111" },
};
/* clang-format on */

static int resolve_from_map(const char *backing_file, void *userdata, dev_t *ret) {
        const char *fixture = userdata;
        _cleanup_free_ char *p = strdup_printf("%s/%s/backing-devices", FIXTURES_DIR, fixture);
        _cleanup_fclose_ FILE *f = p ? fopen(p, "re") : NULL;
        char path[4096], devnum[64];

        if (!f)
                return -ENOENT;
        while (fscanf(f, "%4095s %63s", path, devnum) == 2)
                if (streq(path, backing_file))
                        return parse_devnum(devnum, ret);
        return -ENOENT;
}

/* The kernel's table of a dm device of the fixture: its lines of dm-tables ("MAJ:MIN"
 * then the `dmsetup table` line), what DM_TABLE_STATUS returned in the guest. */
static int read_dm_table_from_fixture(dev_t devnum, void *userdata, DmTable *ret) {
        const char *fixture = userdata;
        _cleanup_free_ char *p = strdup_printf("%s/%s/dm-tables", FIXTURES_DIR, fixture);
        _cleanup_fclose_ FILE *f = p ? fopen(p, "re") : NULL;
        _cleanup_strv_free_ char **lines = NULL;
        char line[4096], prefix[64];

        if (!f)
                return -ENOENT;
        snprintf(prefix, sizeof prefix, "%u:%u ", major(devnum), minor(devnum));
        while (fgets(line, sizeof line, f))
                if (startswith(line, prefix) && strv_extend(&lines, strstrip(line + strlen(prefix))) < 0)
                        return -ENOMEM;
        return dm_table_from_lines(lines, ret);
}

typedef enum DmFacts {
        DM_FACTS_KERNEL, /* the table from dm-tables (what the root applier reads) */
        DM_FACTS_UDEV,   /* only what the udev database says (what the sandboxed daemon reads) */
        DM_FACTS_NONE,   /* neither */
} DmFacts;

static bool fixture_has(const char *fixture, const char *file) {
        _cleanup_free_ char *p = strdup_printf("%s/%s/%s", FIXTURES_DIR, fixture, file);
        return p && access(p, F_OK) == 0;
}

/* The runtime directory of the engines below: each fixture's disks have a history that says
 * the flag as captured is what the kernel set at their add (the fixtures were captured right
 * after the devices were made), as the udev applier records it at boot. */
static char *runtime;

static void record_fixture_history(const char *root) {
        _cleanup_strv_free_ char **disks = NULL;

        tree_rm(runtime, "history");
        CHECK_INT(sysfs_list_dir(root, "block", &disks), 0);
        STRV_FOREACH (d, disks) {
                _cleanup_free_ char *seq_attr = strdup_printf("block/%s/diskseq", *d),
                                    *flag_attr = strdup_printf("block/%s/queue/stable_writes", *d);
                long long seq, flag;
                if (sysfs_read_int(root, seq_attr, &seq) >= 0 && sysfs_read_int(root, flag_attr, &flag) >= 0)
                        CHECK_INT(history_note_first(runtime, *d, (uint64_t) seq, 0, (int) flag, true,
                                                     "fixture"),
                                  1);
        }
}

static int load(Engine *e, const char *fixture, DmFacts facts) {
        _cleanup_free_ char *root = strdup_printf("%s/%s/sys", FIXTURES_DIR, fixture);
        _cleanup_free_ char *udev = strdup_printf("%s/%s/run/udev/data", FIXTURES_DIR, fixture);
        _cleanup_free_ char *krel_path = strdup_printf("%s/%s/kernel-release", FIXTURES_DIR, fixture);
        _cleanup_free_ char *krel = NULL;

        if (read_full_file(krel_path, 4096, &krel, NULL) < 0) {
                fprintf(stderr, "%s: cannot read kernel-release\n", fixture);
                return -ENOENT;
        }
        record_fixture_history(root);
        EngineOptions o = {
                .sysfs_root = root,
                .udev_data_dir = facts == DM_FACTS_NONE ? "" : udev,
                .config_file = "/nonexistent/stablepages.conf",
                .dropin_dir = "/nonexistent/stablepages.conf.d",
                .runtime_dir = runtime,
                .kernel_release = strstrip(krel),
                .resolve_backing = resolve_from_map,
                .resolve_userdata = (void *) fixture,
                .read_dm_table = facts == DM_FACTS_KERNEL ? read_dm_table_from_fixture : NULL,
                .read_dm_table_userdata = (void *) fixture,
        };
        return engine_init(e, &o);
}

static bool strv_equal(char *const *a, char *const *b) {
        for (; a && *a && b && *b; a++, b++)
                if (!streq(*a, *b))
                        return false;
        return !(a && *a) && !(b && *b);
}

/* The one-shot applier reads only the disk it applies and what its classification looks at
 * (device_table_scan_for): on every fixture, each disk must be classified exactly as in the
 * full scan. */
static void test_scan_for_matches_full_scan(const char *fixture) {
        _cleanup_(engine_done) Engine e = {};
        _cleanup_free_ char *root = strdup_printf("%s/%s/sys", FIXTURES_DIR, fixture);
        _cleanup_free_ char *udev = strdup_printf("%s/%s/run/udev/data", FIXTURES_DIR, fixture);

        if (load(&e, fixture, DM_FACTS_KERNEL) < 0 || engine_scan(&e) < 0) {
                tests_failed++;
                return;
        }
        DeviceScanOptions so = {
                .sysfs_root = root,
                .udev_data_dir = udev,
                .resolve_backing = resolve_from_map,
                .resolve_userdata = (void *) fixture,
                .read_dm_table = read_dm_table_from_fixture,
                .read_dm_table_userdata = (void *) fixture,
        };
        for (size_t i = 0; i < e.table.n; i++) {
                const EngineDevice *full = &e.devices[i];
                char *names[] = { full->facts->name, NULL };
                DeviceTable sub = {};
                _cleanup_free_ Classification *classes = NULL;

                CHECK_INT(device_table_scan_for(&so, names, &sub), 0);
                /* What the engine reads of each disk's history. */
                for (size_t j = 0; j < sub.n; j++) {
                        const DeviceFacts *x = device_table_find(&e.table, sub.devices[j].name);
                        CHECK(x);
                        if (x) {
                                sub.devices[j].declared_stable_writes = x->declared_stable_writes;
                                sub.devices[j].declared_at_add = x->declared_at_add;
                        }
                }
                classes = calloc(sub.n + 1, sizeof(Classification));
                CHECK(classes && sub.n >= 1 && sub.n <= e.table.n);
                if (classes && sub.n >= 1 && classify_table(&sub, e.kernel, classes) >= 0) {
                        CHECK_STR(sub.devices[0].name, full->facts->name);
                        CHECK_STR(need_to_string(classes[0].need), need_to_string(full->class.need));
                        CHECK_INT(classes[0].in_force, full->class.in_force);
                        if (!strv_equal(classes[0].reasons, full->class.reasons)) {
                                fprintf(stderr, "%s %s: reasons differ from the full scan\n", fixture,
                                        full->facts->name);
                                tests_failed++;
                        }
                } else
                        tests_failed++;
                for (size_t j = 0; classes && j < sub.n; j++)
                        classification_done(&classes[j]);
                device_table_done(&sub);
        }
}

/* The daemon re-derives only the disks of a uevent and their stacks (engine_rescan_disks):
 * after a uevent of any one disk, every disk must read as in a full scan. */
static void test_rescan_matches_full_scan(const char *fixture) {
        _cleanup_(engine_done) Engine full = {};

        if (load(&full, fixture, DM_FACTS_KERNEL) < 0 || engine_scan(&full) < 0) {
                tests_failed++;
                return;
        }
        for (size_t i = 0; i < full.table.n; i++) {
                _cleanup_(engine_done) Engine e = {};
                char *names[] = { full.devices[i].facts->name, NULL };

                if (load(&e, fixture, DM_FACTS_KERNEL) < 0 || engine_scan(&e) < 0) {
                        tests_failed++;
                        return;
                }
                CHECK_INT(engine_rescan_disks(&e, names, NULL), 0);
                CHECK_INT(e.table.n, full.table.n);
                for (size_t j = 0; j < e.table.n && j < full.table.n; j++) {
                        CHECK_STR(need_to_string(e.devices[j].class.need),
                                  need_to_string(full.devices[j].class.need));
                        if (!strv_equal(e.devices[j].class.reasons, full.devices[j].class.reasons)) {
                                fprintf(stderr, "%s: after a uevent of %s, the reasons of %s differ\n",
                                        fixture, names[0], e.devices[j].facts->name);
                                tests_failed++;
                        }
                }
        }
}

/* The sandboxed daemon cannot read dm tables and takes them from the udev database, where the
 * rule's "stablepagesd udev-facts" put them in the guest: it must conclude exactly what the
 * root applier concludes from the kernel's table. */
static void test_udev_facts_match_kernel(const char *fixture) {
        _cleanup_(engine_done) Engine k = {}, u = {};
        size_t n_dm = 0;

        if (load(&k, fixture, DM_FACTS_KERNEL) < 0 || engine_scan(&k) < 0 ||
            load(&u, fixture, DM_FACTS_UDEV) < 0 || engine_scan(&u) < 0 || k.table.n != u.table.n) {
                tests_failed++;
                return;
        }
        for (size_t i = 0; i < k.table.n; i++) {
                const EngineDevice *a = &k.devices[i], *b = &u.devices[i];
                CHECK_STR(a->facts->name, b->facts->name);
                if (a->facts->kind != DEVICE_KIND_DM)
                        continue;
                n_dm++;
                CHECK_STR(a->facts->dm_table_source, "kernel");
                CHECK_STR(b->facts->dm_table_source, "udev");
                CHECK_STR(need_to_string(a->class.need), need_to_string(b->class.need));
                if (!strv_equal(a->class.reasons, b->class.reasons)) {
                        fprintf(stderr, "%s %s: reasons from udev differ from the kernel's table\n", fixture,
                                a->facts->name);
                        tests_failed++;
                }
        }
        CHECK(n_dm > 0);
}

/* Without the table (no CAP_SYS_ADMIN, no udev data) no dm device is ever "none". */
static void test_missing_dm_facts(const char *fixture) {
        _cleanup_(engine_done) Engine e = {};

        if (load(&e, fixture, DM_FACTS_NONE) < 0 || engine_scan(&e) < 0) {
                tests_failed++;
                return;
        }
        for (size_t i = 0; i < e.table.n; i++) {
                const EngineDevice *d = &e.devices[i];
                if (d->facts->kind != DEVICE_KIND_DM)
                        continue;
                CHECK(!d->facts->dm_table_source);
                CHECK(need_is_protected(d->class.need));
                bool said = false;
                STRV_FOREACH (r, d->class.reasons)
                        said = said || strstr(*r, "device-mapper table of");
                if (!said)
                        fprintf(stderr, "%s %s: no reason says the table is missing\n", fixture,
                                d->facts->name);
                CHECK(said);
        }
}

/* Whether a classification of a device whose kernel flag is 1 is "none" without naming the
 * kernel behaviour that set the flag (and that the device does not need). */
static bool none_without_cause(int flag, const Classification *c) {
        if (flag != 1 || c->need != NEED_NONE)
                return false;
        if (isempty(c->flag_cause))
                return true;
        STRV_FOREACH (r, c->reasons)
                if (strstr(*r, c->flag_cause))
                        return false;
        return true;
}

/* Every device of every fixture whose flag reads 1 (the kernel's: fixtures are captured before
 * anyone writes a flag) is either protected or names why the kernel set a flag it does not
 * need. */
static void test_flag_never_dismissed(const char *fixture, size_t *n_flagged) {
        _cleanup_(engine_done) Engine e = {};

        if (load(&e, fixture, DM_FACTS_KERNEL) < 0 || engine_scan(&e) < 0) {
                tests_failed++;
                return;
        }
        for (size_t i = 0; i < e.table.n; i++) {
                const EngineDevice *d = &e.devices[i];
                if (d->facts->stable_writes == 1)
                        (*n_flagged)++;
                if (none_without_cause(d->facts->stable_writes, &d->class)) {
                        fprintf(stderr, "%s %s: flag 1 classified none without its kernel cause\n", fixture,
                                d->facts->name);
                        tests_failed++;
                }
        }
}

/* ---- detectors on facts written here ------------------------------------------------------ */

typedef struct Synthetic {
        const char *what;
        unsigned kernel;
        DeviceFacts devices[3];   /* devices[0] is the one checked; the others are below it */
        const char *dm_tables[3]; /* per device: `dmsetup table` lines, '\n' between, or NULL */
        Need need;
        const char *reason; /* a part of the first reason */
        const char *cause;  /* a part of flag_cause, or NULL when there must be none */
} Synthetic;

/* Attributes not given read 0, which no detector looks at for these kinds. */
#define K61 KERNEL_VERSION(6, 1, 176)
#define K612 KERNEL_VERSION(6, 12, 117)
/* A disk whose history says the kernel set declared (at its add, or seen later) and whose flag
 * reads flag now. */
#define DISK_HIST(n, k, flag, declared, at_add, ...)                                                        \
        {                                                                                                   \
                .name = (n), .kind = (k), .stable_writes = (flag), .declared_stable_writes = (declared),    \
                .declared_at_add = (at_add), __VA_ARGS__                                                    \
        }
#define DISK(n, k, flag, ...) DISK_HIST(n, k, flag, flag, true, __VA_ARGS__)
#define SLAVES(...)                                                                                         \
        .slaves = (char *[]) {                                                                              \
                __VA_ARGS__, NULL                                                                           \
        }
#define ZRAM DISK("zram0", DEVICE_KIND_ZRAM, 1, .devnum = 0xfb00)
#define LOOP DISK("loop0", DEVICE_KIND_LOOP, 0, .loop_backing_file = "/img", .loop_dio = 0)

/* clang-format off */
static const Synthetic synthetic[] = {
        /* device-mapper: the table decides, never the uuid */
        { "generic dm with a flag nothing explains", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_table_source = "kernel", SLAVES("loop0")), LOOP },
          { "0 8 linear 7:0 0" }, NEED_UNKNOWN, "no detector explains why (kind dm)", NULL },
        { "dm-linear, flag 0", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel", SLAVES("loop0")), LOOP },
          { "0 8 linear 7:0 0\n8 8 linear 7:0 8" }, NEED_NONE, "device-mapper target linear (dm-0) passes the page through", NULL },
        { "LVM uuid, table unknown, flag 1", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_uuid = "LVM-x", .dm_table_missing = "no facts") },
          { NULL }, NEED_UNKNOWN, "device-mapper table of dm-0 is not known: no facts", NULL },
        { "table unknown, flag 0 (an old kernel's bitmap-mode dm-integrity looks like this)", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_missing = "no facts") },
          { NULL }, NEED_UNKNOWN, "device-mapper table of dm-0 is not known", NULL },
        { "no table loaded", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "" }, NEED_NONE, "has no table loaded", NULL },
        { "integrity B, internal hash, 6.1.176 (flag 0)", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "udev", .dm_uuid = "LVM-y") },
          { "0 8 integrity 7:0 0 4 B 2 internal_hash:crc32c sectors_per_bit:8" }, NEED_REQUIRED,
          "in bitmap mode with internal hash crc32c computes the tag", NULL },
        { "integrity D, keyed internal hash, declared", KERNEL_VERSION(6, 1, 192),
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_table_source = "kernel") },
          { "0 8 integrity 7:0 0 32 D 1 internal_hash:hmac(sha256):00112233" }, NEED_REQUIRED,
          "in direct mode with internal hash hmac(sha256) computes the tag", "dm_integrity_io_hints()" },
        { "integrity I (inline, 6.11+)", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_table_source = "kernel") },
          { "0 8 integrity 7:0 0 4 I 1 internal_hash:crc32c" }, NEED_REQUIRED, "in inline mode", "dm_integrity_io_hints()" },
        { "integrity J, internal hash", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "0 8 integrity 7:0 0 4 J 1 internal_hash:crc32c" }, NEED_NONE, "in journal mode with internal hash crc32c copies the data", NULL },
        { "integrity R", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "0 8 integrity 7:0 0 4 R 1 internal_hash:crc32c" }, NEED_NONE, "recovery mode accepts no writes", NULL },
        { "integrity D without internal hash", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "0 8 integrity 7:0 0 4 D 0" }, NEED_NONE, "without internal hash stores the tags", NULL },
        { "integrity in an unknown mode", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "0 8 integrity 7:0 0 4 X 1 internal_hash:crc32c" }, NEED_UNKNOWN, "in mode 'X', which stablepages does not know", NULL },
        { "integrity with external tags, DM-DIF-EXT-TAG on 6.1 (flag 1 from registration)", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_table_source = "kernel", .integrity_format = "DM-DIF-EXT-TAG") },
          { "0 8 integrity 7:0 0 32 J 0" }, NEED_NONE, "integrity profile DM-DIF-EXT-TAG computes nothing from the data", "blk_integrity_register()" },
        { "crypt over zram (6.1 stacks the flag)", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_table_source = "kernel", SLAVES("zram0")), ZRAM },
          { "0 8 crypt aes-xts-plain64 0000 0 251:0 0" }, NEED_NONE, "dm-crypt (dm-0) encrypts the page into its own buffer", "dm_table_set_restrictions() stacks it from zram0" },
        { "linear over zram (6.12 stacks the flag)", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_table_source = "kernel", SLAVES("zram0")), ZRAM },
          { "0 8 linear 251:0 0" }, NEED_REQUIRED, "stacked on zram0, which is required", "blk_stack_limits() stacks it from zram0" },
        { "a table of crypt and linear shields nothing", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_table_source = "kernel", SLAVES("zram0")), ZRAM },
          { "0 8 crypt aes-xts-plain64 0000 0 251:0 0\n8 8 linear 251:0 8" }, NEED_REQUIRED, "stacked on zram0", "stacks it from zram0" },
        { "dm-raid raid1 (LVM raid)", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "0 8 raid raid1 3 0 region_size 1024 2 - 7:0 - 7:1" }, NEED_RECOMMENDED, "dm-raid (dm-0, raid1) writes the same page to each leg", NULL },
        { "dm-raid raid5 over a required leg copies the page", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_table_source = "kernel", SLAVES("zram0")), ZRAM },
          { "0 8 raid raid5_ls 3 128 region_size 1024 3 - 251:0 - 7:1 - 7:2" }, NEED_NONE, "copies the page into md's stripe cache", "blk_stack_limits()" },
        { "dm-raid of an unknown type", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "0 8 raid raid7 0 1 - 7:0" }, NEED_UNKNOWN, "raid type \"raid7\"", NULL },
        { "dm-mirror", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "0 8 mirror core 1 1024 2 7:0 0 7:1 0" }, NEED_RECOMMENDED, "dm-mirror (dm-0) writes the same page to each leg", NULL },
        { "dm target unknown to stablepages", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "0 8 checksummer 7:0" }, NEED_UNKNOWN, "target checksummer (dm-0) is not known to stablepages", NULL },
        { "dm-zero", K612,
          { DISK("dm-0", DEVICE_KIND_DM, 0, .dm_table_source = "kernel") },
          { "0 8 zero" }, NEED_NONE, "stores nothing", NULL },
        { "multipath over zram paths", K61,
          { DISK("dm-0", DEVICE_KIND_DM, 1, .dm_table_source = "kernel", .dm_uuid = "mpath-x", SLAVES("zram0")), ZRAM },
          { "0 8 multipath 0 0 1 1 service-time 0 1 2 251:0 1 1" }, NEED_REQUIRED, "stacked on zram0", "dm_table_set_restrictions()" },

        /* integrity profiles without a checksum: 5.10-6.10 set the flag for them */
        { "integrity nop on 6.1 (flag 1)", K61,
          { DISK("nvme0n1", DEVICE_KIND_NVME, 1, .integrity_format = "nop", .nvme_transport = "pcie") },
          { NULL }, NEED_NONE, "integrity profile nop computes nothing from the data", "blk_integrity_register()" },
        { "integrity nop on 6.12 (flag 0)", K612,
          { DISK("nvme0n1", DEVICE_KIND_NVME, 0, .integrity_format = "nop", .nvme_transport = "pcie") },
          { NULL }, NEED_NONE, "this kernel counts only checksum formats", NULL },
        { "integrity nop on 6.12 with a flag nothing explains", K612,
          { DISK("nvme0n1", DEVICE_KIND_NVME, 1, .integrity_format = "nop", .nvme_transport = "pcie") },
          { NULL }, NEED_UNKNOWN, "no detector explains why", NULL },

        /* NVMe */
        { "nvme-tcp with data digest", K612,
          { DISK("nvme0c0n1", DEVICE_KIND_NVME, 1, .hidden = true, .nvme_transport = "tcp") },
          { NULL }, NEED_REQUIRED, "NVMe/TCP with data digest", "nvme_alloc_ns()" },
        { "nvme-tcp without data digest", K612,
          { DISK("nvme0c0n1", DEVICE_KIND_NVME, 0, .hidden = true, .nvme_transport = "tcp") },
          { NULL }, NEED_NONE, "NVMe/TCP without data digest", NULL },
        { "nvme multipath head over a digest path", K61,
          { DISK("nvme0n1", DEVICE_KIND_NVME, 1, .nvme_paths = (char *[]){ "nvme0c0n1", NULL }),
            DISK("nvme0c0n1", DEVICE_KIND_NVME, 1, .hidden = true, .nvme_transport = "tcp") },
          { NULL }, NEED_REQUIRED, "served by path nvme0c0n1, which is required", "nvme_mpath_add_disk() stacks it from nvme0c0n1" },
        { "nvme-tcp reading 0, its flag at add not recorded", K612,
          { DISK_HIST("nvme0c0n1", DEVICE_KIND_NVME, 0, 0, false, .hidden = true, .nvme_transport = "tcp") },
          { NULL }, NEED_UNKNOWN, "NVMe/TCP, whose driver declares stable writes for a data digest: the flag the kernel set when nvme0c0n1 appeared was not recorded", NULL },
        { "nvme-tcp reading 1, its flag at add not recorded", K612,
          { DISK_HIST("nvme0c0n1", DEVICE_KIND_NVME, 1, 1, false, .hidden = true, .nvme_transport = "tcp") },
          { NULL }, NEED_REQUIRED, "NVMe/TCP with data digest", "nvme_alloc_ns()" },
        { "nvme-tcp declared 1 at add, cleared since", K612,
          { DISK_HIST("nvme0c0n1", DEVICE_KIND_NVME, 0, 1, true, .hidden = true, .nvme_transport = "tcp") },
          { NULL }, NEED_REQUIRED, "NVMe/TCP with data digest", "nvme_alloc_ns()" },
        { "plain nvme (pcie)", K612,
          { DISK("nvme1n1", DEVICE_KIND_NVME, 0, .nvme_transport = "pcie", .driver = "nvme") },
          { NULL }, NEED_NONE, "plain nvme disk", NULL },

        /* MMC over SPI */
        { "mmc over SPI with CRC", K61,
          { DISK("mmcblk0", DEVICE_KIND_MMC, 1, .mmc_spi = true, .driver = "mmcblk") },
          { NULL }, NEED_REQUIRED, "MMC/SD card over SPI with CRC", "mmc_init_queue()" },
        { "mmc over SPI without CRC", K612,
          { DISK("mmcblk0", DEVICE_KIND_MMC, 0, .mmc_spi = true, .driver = "mmcblk") },
          { NULL }, NEED_NONE, "over SPI without CRC", NULL },
        { "mmc over SPI reading 0, its flag at add not recorded", K612,
          { DISK_HIST("mmcblk0", DEVICE_KIND_MMC, 0, 0, false, .mmc_spi = true, .driver = "mmcblk") },
          { NULL }, NEED_UNKNOWN, "MMC/SD card over SPI, whose driver declares stable writes for its CRC", NULL },
        { "mmc on SDHCI with a flag", K612,
          { DISK("mmcblk0", DEVICE_KIND_MMC, 1, .driver = "mmcblk") },
          { NULL }, NEED_UNKNOWN, "no detector explains why (kind mmc, driver mmcblk)", NULL },

        /* iSCSI: only the software initiator sets stable writes */
        { "iscsi_tcp with data digest", K61,
          { DISK("sdb", DEVICE_KIND_SCSI, 1, .iscsi_data_digest = "CRC32C", .scsi_host_driver = "iscsi_tcp", .driver = "sd") },
          { NULL }, NEED_REQUIRED, "data digest CRC32C (software initiator iscsi_tcp)", "iscsi_sw_tcp_slave_configure()" },
        { "offload HBA with data digest", K61,
          { DISK("sdb", DEVICE_KIND_SCSI, 0, .iscsi_data_digest = "CRC32C", .scsi_host_driver = "bnx2i", .driver = "sd") },
          { NULL }, NEED_NONE, "through the offload HBA bnx2i", NULL },
        { "iSCSI with data digest, host driver unknown", K612,
          { DISK("sdb", DEVICE_KIND_SCSI, 0, .iscsi_data_digest = "CRC32C", .driver = "sd") },
          { NULL }, NEED_REQUIRED, "(initiator not known)", NULL },
        { "iSCSI without data digest", K612,
          { DISK("sdb", DEVICE_KIND_SCSI, 0, .iscsi_data_digest = "None", .scsi_host_driver = "iscsi_tcp", .driver = "sd") },
          { NULL }, NEED_NONE, "without data digest", NULL },

        /* the others */
        { "rbd", K612, { DISK("rbd0", DEVICE_KIND_RBD, 1) }, { NULL }, NEED_REQUIRED, "rbd computes a CRC", "rbd_init_disk()" },
        { "rbd nocrc", K612, { DISK("rbd0", DEVICE_KIND_RBD, 0, .rbd_config_info = "1.2.3.4 name=x,nocrc rbd img -") }, { NULL }, NEED_NONE, "nocrc", NULL },
        { "drbd", K61, { DISK("drbd0", DEVICE_KIND_DRBD, 1) }, { NULL }, NEED_REQUIRED, "drbd", "drbd_create_device()" },
        { "dio loop whose backing file's disk could not be found", K612,
          { DISK("loop0", DEVICE_KIND_LOOP, 0, .loop_backing_file = "/mnt/nfs/img", .loop_dio = 1, .loop_backing_unresolved = true) },
          { NULL }, NEED_UNKNOWN, "the disk holding that file is not known", "the loop driver never sets it" },
        { "loop with a flag user space wrote", K612, { DISK("loop0", DEVICE_KIND_LOOP, 1, .loop_backing_file = "/img", .loop_dio = 0) }, { NULL }, NEED_NONE, "buffered I/O", "the loop driver never sets it" },
        { "a disk of a kind no detector knows, reading 0, its flag at add not recorded", K612,
          { DISK_HIST("xvda", DEVICE_KIND_OTHER, 0, 0, false, .driver = "vbd") },
          { NULL }, NEED_UNKNOWN, "no detector knows this kind of disk", NULL },
        { "the same, recorded at add", K612, { DISK("xvda", DEVICE_KIND_OTHER, 0, .driver = "vbd") }, { NULL }, NEED_NONE, "no detector applies", NULL },
        { "a plain disk reading 0, not recorded: its driver never sets the flag", K612,
          { DISK_HIST("vda", DEVICE_KIND_VIRTIO, 0, 0, false, .driver = "virtio_blk") },
          { NULL }, NEED_NONE, "plain virtio disk", NULL },
        { "virtio with a flag nothing explains", K612, { DISK("vda", DEVICE_KIND_VIRTIO, 1, .driver = "virtio_blk") }, { NULL }, NEED_UNKNOWN, "no detector explains why (kind virtio, driver virtio_blk)", NULL },
        { "md raid0 over zram on 6.12 (stacks the flag)", K612,
          { DISK("md0", DEVICE_KIND_MD, 1, .md_level = "raid0", SLAVES("zram0")), ZRAM },
          { NULL }, NEED_REQUIRED, "stacked on zram0", "blk_stack_limits()" },
        { "md raid0 on 6.1 with a flag (md does not stack it there)", K61,
          { DISK("md0", DEVICE_KIND_MD, 1, .md_level = "raid0", SLAVES("loop0")), LOOP },
          { NULL }, NEED_UNKNOWN, "no detector explains why (kind md)", NULL },
};
/* clang-format on */

static void test_synthetic(void) {
        for (size_t i = 0; i < ELEMENTSOF(synthetic); i++) {
                const Synthetic *s = &synthetic[i];
                DeviceFacts devices[3];
                DeviceTable t = { .devices = devices };
                Classification c[3] = {};

                fprintf(stderr, "synthetic: %s\n", s->what);
                for (size_t j = 0; j < ELEMENTSOF(s->devices) && s->devices[j].name; j++) {
                        devices[t.n] = s->devices[j];
                        devices[t.n].dm_table = (DmTable){};
                        if (s->dm_tables[j]) {
                                _cleanup_strv_free_ char **lines = NULL;
                                _cleanup_free_ char *copy = strdup(s->dm_tables[j]);
                                char *save = NULL;
                                for (char *l = strtok_r(copy, "\n", &save); l;
                                     l = strtok_r(NULL, "\n", &save))
                                        CHECK_INT(strv_extend(&lines, l), 0);
                                CHECK_INT(dm_table_from_lines(lines, &devices[t.n].dm_table), 0);
                        }
                        t.n++;
                }
                CHECK_INT(classify_table(&t, s->kernel, c), 0);
                CHECK_STR(need_to_string(c[0].need), need_to_string(s->need));
                CHECK(c[0].reasons);
                if (c[0].reasons)
                        CHECK_CONTAINS(c[0].reasons[0], s->reason);
                if (s->cause)
                        CHECK_CONTAINS(c[0].flag_cause, s->cause);
                else if (c[0].flag_cause && devices[0].stable_writes == 1) {
                        fprintf(stderr, "unexpected cause: %s\n", c[0].flag_cause);
                        tests_failed++;
                }
                CHECK(!none_without_cause(devices[0].stable_writes, &c[0]));
                for (size_t j = 0; j < t.n; j++) {
                        classification_done(&c[j]);
                        dm_table_done(&devices[j].dm_table);
                }
        }
}

/* The fixture walk's check itself fails on a dismissed flag. */
static void test_none_without_cause_detects(void) {
        char *reasons[] = { "plain disk", NULL };
        Classification c = { .need = NEED_NONE, .reasons = reasons };

        CHECK(none_without_cause(1, &c));
        c.flag_cause = "zram_add() sets it";
        CHECK(none_without_cause(1, &c)); /* named, but not said in a reason */
        char *said[] = { "was 1 because zram_add() sets it", NULL };
        c.reasons = said;
        CHECK(!none_without_cause(1, &c));
        CHECK(!none_without_cause(0, &c));
}

int main(void) {
        runtime = tree_new();
        static const PolicyMode modes[] = { POLICY_OBSERVE, POLICY_LATENCY, POLICY_BALANCED,
                                            POLICY_INTEGRITY };

        for (size_t i = 0; i < ELEMENTSOF(expects); i++) {
                const Expect *x = &expects[i];
                _cleanup_(engine_done) Engine e = {};

                fprintf(stderr, "%s %s\n", x->fixture, x->device);
                if (load(&e, x->fixture, DM_FACTS_KERNEL) < 0) {
                        tests_failed++;
                        continue;
                }
                for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
                        e.config.policy = modes[m];
                        CHECK_INT(engine_scan(&e), 0);
                        EngineDevice *d = engine_find(&e, x->device);
                        CHECK(d);
                        if (!d)
                                break;
                        CHECK_STR(need_to_string(d->class.need), need_to_string(x->need));
                        CHECK(d->class.reasons);
                        if (d->class.reasons)
                                CHECK_CONTAINS(d->class.reasons[0], x->reason);
                        if (x->also) {
                                bool found = false;
                                STRV_FOREACH (r, d->class.reasons)
                                        found = found || strstr(*r, x->also);
                                if (!found)
                                        fprintf(stderr, "%s %s: no reason contains \"%s\"\n", x->fixture,
                                                x->device, x->also);
                                CHECK(found);
                        }
                        CHECK_INT(d->class.in_force, x->in_force);
                        char want = x->desired[m];
                        CHECK_INT(d->decision.desired, want == '-' ? -1 : want - '0');
                        CHECK(d->facts->errors == NULL);
                }
        }

        _cleanup_strv_free_ char **fixtures = NULL;
        CHECK_INT(sysfs_list_dir(FIXTURES_DIR, ".", &fixtures), 0);
        size_t n_fixtures = 0, n_dm = 0, n_flagged = 0;
        STRV_FOREACH (f, fixtures) {
                if (!fixture_has(*f, "kernel-release"))
                        continue;
                fprintf(stderr, "fixture %s\n", *f);
                test_scan_for_matches_full_scan(*f);
                test_rescan_matches_full_scan(*f);
                test_flag_never_dismissed(*f, &n_flagged);
                if (fixture_has(*f, "dm-tables")) {
                        test_udev_facts_match_kernel(*f);
                        test_missing_dm_facts(*f);
                        n_dm++;
                }
                n_fixtures++;
        }
        CHECK(n_fixtures >= 46);
        CHECK(n_dm >= 24);
        CHECK(n_flagged >= 30);

        test_none_without_cause_detects();
        test_synthetic();
        tree_free(runtime);
        return tests_finish();
}
