/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Need, reasons and desired state under every policy mode, on sysfs trees captured from
 * real kernels (tests/fixtures/, see its README for the command behind each). */
#include <sys/sysmacros.h>

#include "engine.h"
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

        /* 6.1: integrity registration sets stable_writes=1 */
        { "vm-6.1-pi-wg1", "sda", NEED_REQUIRED, "T10-DIF-TYPE1-CRC with write_generate=1", NULL, true, "-111" },
        { "vm-6.1-pi-wg0", "sda", NEED_RECOMMENDED, "T10-DIF-TYPE1-CRC with write_generate=0", NULL, true, "-011" },
        { "vm-6.1-dm-linear-pi", "dm-0", NEED_REQUIRED, "T10-DIF-TYPE1-CRC with write_generate=1", "stacked on sda, which is required", true, "-111" },
        { "vm-6.1-dm-linear-pi", "sda", NEED_REQUIRED, "T10-DIF-TYPE1-CRC with write_generate=1", NULL, true, "-111" },
        { "vm-6.1-md-raid1", "md0", NEED_RECOMMENDED, "md raid1 writes the same page to each mirror", NULL, false, "-011" },
        { "vm-6.1-md-raid5-sc0", "md0", NEED_NONE, "md raid5 with skip_copy=0 copies the page", NULL, false, "-000" },
        { "vm-6.1-md-raid5-sc1", "md0", NEED_REQUIRED, "md raid5 with skip_copy=1 computes parity", NULL, true, "-111" },
        { "vm-6.1-md-raid6-sc1", "md0", NEED_REQUIRED, "md raid6 with skip_copy=1 computes parity", NULL, true, "-111" },
        { "vm-6.1-md-raid6-sc1", "dm-0", NEED_REQUIRED, "stacked on md0, which is required: md raid6 with skip_copy=1", NULL, true, "-111" },
        { "vm-6.1-md-raid6-sc1", "loop0", NEED_NONE, "buffered I/O (dio=0)", NULL, false, "-000" },
        { "vm-6.1-dm-crypt", "dm-0", NEED_NONE, "dm-crypt (sp-crypt) encrypts the page into its own buffer", NULL, false, "-000" },
        { "vm-6.1-dm-integrity-journal", "dm-0", NEED_NONE, "dm-integrity (sp-integrity) did not declare", NULL, false, "-000" },
        { "vm-6.1-dm-integrity-bitmap", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) declared stable writes", NULL, true, "-111" },
        { "vm-6.1-dm-integrity-nojournal", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) declared stable writes", NULL, true, "-111" },
        /* the kernel does not propagate the need through a file: the engine must */
        { "vm-6.1-loop-dio-on-raid5", "loop3", NEED_REQUIRED, "its backing file lives on md0, which is required", "dio=1 writes the page directly", false, "-111" },
        { "vm-6.1-zram", "zram0", NEED_REQUIRED, "zram compresses the page", NULL, true, "-111" },

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
        { "vm-6.12-dm-integrity-journal", "dm-0", NEED_NONE, "dm-integrity (sp-integrity) did not declare", NULL, false, "-000" },
        { "vm-6.12-dm-integrity-bitmap", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) declared stable writes", NULL, true, "-111" },
        { "vm-6.12-dm-integrity-nojournal", "dm-0", NEED_REQUIRED, "dm-integrity (sp-integrity) declared stable writes", NULL, true, "-111" },
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

static int load(Engine *e, const char *fixture) {
        _cleanup_free_ char *root = strdup_printf("%s/%s/sys", FIXTURES_DIR, fixture);
        _cleanup_free_ char *udev = strdup_printf("%s/%s/run/udev/data", FIXTURES_DIR, fixture);
        _cleanup_free_ char *krel_path = strdup_printf("%s/%s/kernel-release", FIXTURES_DIR, fixture);
        _cleanup_free_ char *krel = NULL;

        if (read_full_file(krel_path, 4096, &krel, NULL) < 0) {
                fprintf(stderr, "%s: cannot read kernel-release\n", fixture);
                return -ENOENT;
        }
        EngineOptions o = {
                .sysfs_root = root,
                .udev_data_dir = udev,
                .config_file = "/nonexistent/stablepages.conf",
                .dropin_dir = "/nonexistent/stablepages.conf.d",
                .runtime_dir = "/nonexistent/run",
                .kernel_release = strstrip(krel),
                .resolve_backing = resolve_from_map,
                .resolve_userdata = (void *) fixture,
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

        if (load(&e, fixture) < 0 || engine_scan(&e) < 0) {
                tests_failed++;
                return;
        }
        DeviceScanOptions so = {
                .sysfs_root = root,
                .udev_data_dir = udev,
                .resolve_backing = resolve_from_map,
                .resolve_userdata = (void *) fixture,
        };
        for (size_t i = 0; i < e.table.n; i++) {
                const EngineDevice *full = &e.devices[i];
                char *names[] = { full->facts->name, NULL };
                DeviceTable sub = {};
                _cleanup_free_ Classification *classes = NULL;

                CHECK_INT(device_table_scan_for(&so, names, &sub), 0);
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

int main(void) {
        static const PolicyMode modes[] = { POLICY_OBSERVE, POLICY_LATENCY, POLICY_BALANCED,
                                            POLICY_INTEGRITY };

        for (size_t i = 0; i < ELEMENTSOF(expects); i++) {
                const Expect *x = &expects[i];
                _cleanup_(engine_done) Engine e = {};

                fprintf(stderr, "%s %s\n", x->fixture, x->device);
                if (load(&e, x->fixture) < 0) {
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
        size_t n_fixtures = 0;
        STRV_FOREACH (f, fixtures) {
                _cleanup_free_ char *krel = strdup_printf("%s/%s/kernel-release", FIXTURES_DIR, *f);
                if (access(krel, F_OK) < 0)
                        continue;
                test_scan_for_matches_full_scan(*f);
                n_fixtures++;
        }
        CHECK(n_fixtures >= 30);
        return tests_finish();
}
