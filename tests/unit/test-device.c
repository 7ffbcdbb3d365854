/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* device.c and engine_apply() on a fake sysfs root: the facts that live outside the disk's own
 * directory (hidden NVMe paths, the SPI host of an MMC card, the SCSI host of an iSCSI
 * session, a dm table from the kernel or from the udev database), and faults: attributes and whole disks
 * that vanish between listing and reading (made to vanish exactly there with the open hook
 * of tests/unit/fault.c), unparsable and unreadable values, a udev database with lines
 * longer than the reader's buffer, and writes of queue/stable_writes that fail (EIO,
 * EINVAL, EBUSY injected; a directory, a FIFO, a device node in place of the attribute;
 * the disk removed while it is being applied; a switch that ignores the write). Every
 * failure is an error that names the disk and the reason; nothing is fatal, and the other
 * disks are read and applied as usual. */

#include <limits.h>
#include <sys/sysmacros.h>

#include "device.h"
#include "engine.h"
#include "fake-sysfs.h"
#include "fault.h"
#include "log.h"
#include "sysfs.h"

static char *root;

/* A loop disk without a backing file (need none) with flag value, devnum 7:minor. */
static void make_loop(const char *name, unsigned minor, const char *flag) {
        char rel[256], dev[32];

        snprintf(dev, sizeof dev, "7:%u\n", minor);
        snprintf(rel, sizeof rel, "block/%s/dev", name);
        tree_put(root, rel, dev);
        snprintf(rel, sizeof rel, "block/%s/diskseq", name);
        tree_put(root, rel, "42\n");
        snprintf(rel, sizeof rel, "block/%s/queue/stable_writes", name);
        tree_put(root, rel, flag);
        snprintf(rel, sizeof rel, "block/%s/loop/dio", name);
        tree_put(root, rel, "0\n");
        snprintf(rel, sizeof rel, "block/%s/holders", name);
        tree_mkdir(root, rel);
        snprintf(rel, sizeof rel, "block/%s/slaves", name);
        tree_mkdir(root, rel);
}

static DeviceScanOptions scan_options(void) {
        static char udev[PATH_MAX];
        snprintf(udev, sizeof udev, "%s/udev", root);
        return (DeviceScanOptions){ .sysfs_root = root, .udev_data_dir = udev };
}

static bool has_error(const DeviceFacts *f, const char *text) {
        STRV_FOREACH (e, f->errors)
                if (strstr(*e, text))
                        return true;
        return false;
}

static void print_errors(const DeviceFacts *f) {
        STRV_FOREACH (e, f->errors)
                fprintf(stderr, "  %s: %s\n", f->name, *e);
}

static void rm_action(const char *path, void *userdata) {
        tree_rm(root, userdata);
}

static void test_vanish_between_listing_and_reading(void) {
        _cleanup_(device_table_done) DeviceTable t = {};
        DeviceScanOptions o = scan_options();

        tree_rm(root, "block");
        make_loop("loop1", 1, "1\n");
        make_loop("loop2", 2, "1\n");
        make_loop("loop3", 3, "0\n");

        /* loop2 is listed, then removed just before its first attribute is opened. */
        fault_arm_open("/block/loop2/dev", rm_action, "block/loop2");
        CHECK_INT(device_table_scan(&o, &t), 0);
        CHECK_INT(fault_hits(), 1);
        fault_disarm();
        CHECK_INT(t.n, 2);
        CHECK(device_table_find(&t, "loop1") != NULL);
        CHECK(device_table_find(&t, "loop2") == NULL);
        CHECK(device_table_find(&t, "loop3") != NULL);
        device_table_done(&t);

        /* loop3 goes away in the middle of its reading: what is left reads as absent, not
         * as an error, and the scan goes on. */
        fault_arm_open("/block/loop3/queue/stable_writes", rm_action, "block/loop3");
        CHECK_INT(device_table_scan(&o, &t), 0);
        CHECK_INT(fault_hits(), 1);
        fault_disarm();
        CHECK_INT(t.n, 2);
        DeviceFacts *f = device_table_find(&t, "loop3");
        CHECK(f != NULL);
        if (f) {
                CHECK_INT(f->stable_writes, ATTR_ABSENT);
                CHECK_INT(f->loop_dio, ATTR_ABSENT);
                CHECK_INT(f->n_partitions, 0);
                CHECK(strv_length(f->errors) == 0);
                print_errors(f);
        }
        device_table_done(&t);

        /* Only the attribute goes: absent, not an error. */
        make_loop("loop3", 3, "0\n");
        fault_arm_open("/block/loop3/queue/stable_writes", rm_action, "block/loop3/queue/stable_writes");
        CHECK_INT(device_table_scan(&o, &t), 0);
        CHECK_INT(fault_hits(), 1);
        fault_disarm();
        f = device_table_find(&t, "loop3");
        CHECK(f && f->stable_writes == ATTR_ABSENT && f->loop_dio == 0 && strv_length(f->errors) == 0);
        device_table_done(&t);

        /* Entries of block/ that are not disks: a dangling symlink (what sysfs shows for a
         * disk being deleted), a plain file, a directory without dev. */
        tree_symlink(root, "block/loop4", "../devices/virtual/block/loop4");
        tree_put(root, "block/stray", "x");
        tree_mkdir(root, "block/nodev");
        CHECK_INT(device_table_scan(&o, &t), 0);
        CHECK_INT(t.n, 2);
        device_table_done(&t);

        tree_rm(root, "block");
        tree_put(root, "block", "not a directory");
        CHECK_INT(device_table_scan(&o, &t), -ENOTDIR);
        tree_rm(root, "block");
}

static void test_unparsable_and_unreadable(void) {
        _cleanup_(device_table_done) DeviceTable t = {};
        DeviceScanOptions o = scan_options();
        DeviceFacts *f;

        tree_rm(root, "block");
        make_loop("loop1", 1, "2\n");
        tree_put(root, "block/loop1/integrity/write_generate", "yes\n");
        tree_put(root, "block/loop1/integrity/format", "T10-DIF-TYPE1-CRC\n");
        tree_put(root, "block/loop1/diskseq", "not a number\n");
        make_loop("loop2", 2, "1\n");
        tree_rm(root, "block/loop2/queue/stable_writes");
        tree_mkdir(root, "block/loop2/queue/stable_writes");
        tree_rm(root, "block/loop2/loop/dio");
        tree_mkfifo(root, "block/loop2/loop/dio"); /* must not block */
        make_loop("loop3", 3, "1\n");
        tree_put(root, "block/loop3/dev", "7:3:junk\n"); /* not a disk we can name */
        make_loop("loop4", 4, "\n");
        tree_put(root, "block/loop4/md/skip_copy", "99999999999999999999999\n");
        make_loop("loop5", 5, "0\n");

        CHECK_INT(device_table_scan(&o, &t), 0);
        CHECK_INT(t.n, 4);

        f = device_table_find(&t, "loop1");
        CHECK(f != NULL);
        if (f) {
                CHECK_INT(f->stable_writes, ATTR_ABSENT);
                CHECK_INT(f->write_generate, ATTR_ABSENT);
                CHECK_STR(f->integrity_format, "T10-DIF-TYPE1-CRC");
                CHECK(has_error(f, "queue/stable_writes: unparsable value \"2\""));
                CHECK(has_error(f, "integrity/write_generate: unparsable value \"yes\""));
                CHECK_INT(f->diskseq, 0);
        }
        f = device_table_find(&t, "loop2");
        CHECK(f != NULL);
        if (f) {
                CHECK_INT(f->stable_writes, ATTR_ABSENT);
                CHECK(has_error(f, "queue/stable_writes: Is a directory"));
                CHECK(has_error(f, "loop/dio: unparsable value \"\""));
        }
        CHECK(device_table_find(&t, "loop3") == NULL);
        f = device_table_find(&t, "loop4");
        CHECK(f && has_error(f, "queue/stable_writes: unparsable value \"\"") &&
              has_error(f, "md/skip_copy: unparsable value"));
        f = device_table_find(&t, "loop5");
        CHECK(f && f->stable_writes == 0 && strv_length(f->errors) == 0);
        for (size_t i = 0; i < t.n; i++)
                print_errors(&t.devices[i]);
        tree_rm(root, "block");
}

static void test_udev_database(void) {
        _cleanup_(device_facts_done) DeviceFacts f = {};
        DeviceScanOptions o = scan_options();
        _cleanup_free_ char *db = NULL;
        size_t n = 0;
        FILE *m = open_memstream(&db, &n);

        tree_rm(root, "block");
        make_loop("loop1", 1, "0\n");
        CHECK(m != NULL);
        if (!m)
                return;
        fputs("S:disk/by-id/x\nE:ID_SERIAL=abc\nE:ID_SERIAL=abc\nE:\nE:NOEQUALS\n", m);
        /* A value longer than the reader's 4 KiB line buffer whose tail looks like a
         * property (it starts right after the first 4095 bytes): the tail must not become
         * a property of the disk. */
        fputs("E:ID_MODEL=", m);
        for (int i = 0; i < 4095 - 11; i++)
                fputc('m', m);
        fputs("E:ID_WWN=0xspoofed\n", m);
        fputs("E:ID_FS_UUID=1234\nI:123\n", m);
        fputs("E:LAST=no newline", m);
        CHECK(fclose(m) == 0);
        tree_put(root, "udev/b7:1", db);

        CHECK_INT(device_facts_read(&o, "loop1", &f), 0);
        CHECK_STR(device_facts_property(&f, "ID_SERIAL"), "abc");
        CHECK_STR(device_facts_property(&f, "ID_FS_UUID"), "1234");
        CHECK_STR(device_facts_property(&f, "LAST"), "no newline");
        CHECK(device_facts_property(&f, "ID_WWN") == NULL);
        size_t serials = 0;
        STRV_FOREACH (p, f.properties)
                serials += startswith(*p, "ID_SERIAL=");
        CHECK_INT(serials, 1);

        /* The database entry is a directory, or unreadable: no properties, no failure. */
        device_facts_done(&f);
        tree_rm(root, "udev/b7:1");
        tree_mkdir(root, "udev/b7:1");
        CHECK_INT(device_facts_read(&o, "loop1", &f), 0);
        CHECK(f.properties == NULL);
        tree_rm(root, "udev");
        tree_rm(root, "block");
}

/* ---- engine_apply ---- */

static int setup_engine(Engine *e) {
        _cleanup_free_ char *udev = tree_path(root, "udev"), *conf = tree_path(root, "etc/stablepages.conf"),
                            *dropins = tree_path(root, "etc/conf.d"), *run = tree_path(root, "run");
        EngineOptions o = {
                .sysfs_root = root,
                .udev_data_dir = udev,
                .config_file = conf,
                .dropin_dir = dropins,
                .runtime_dir = run,
                .kernel_release = "6.18.0",
        };
        int r;

        tree_put(root, "etc/stablepages.conf", "[Manager]\nRescanSec=0\n[Device loop*]\nStableWrites=on\n");
        r = engine_init(e, &o);
        if (r >= 0)
                r = engine_load_config(e);
        if (r >= 0)
                r = engine_scan(e);
        return r;
}

typedef struct ApplyCase {
        const char *name;
        int error;           /* injected write errno, 0 = none */
        bool swallow;        /* the write is ignored */
        const char *replace; /* what replace_action() does just before the write or read back */
        int ret;             /* engine_apply() */
        const char *message; /* in ApplyResult.message */
} ApplyCase;

static void replace_action(const char *path, void *userdata) {
        const char *how = userdata;
        if (streq(how, "remove-disk"))
                tree_rm(root, "block/loop1");
        else if (streq(how, "remove-flag"))
                CHECK(unlink(path) == 0);
        else if (streq(how, "remove-flag-after-write")) {
                /* The write went through; the disk is being removed before the read back:
                 * its flag is gone, its queue/ and diskseq not yet (del_gendisk's order). The
                 * flag is opened to be read, to be written, then to be read back (flag.c). */
                if (fault_hits() == 3)
                        CHECK(unlink(path) == 0);
        } else if (streq(how, "reuse-name-after-write")) {
                /* The write went through; another loop1 took the name before the read back:
                 * its own flag (0) and diskseq. */
                if (fault_hits() == 3) {
                        tree_rm(root, "block/loop1");
                        make_loop("loop1", 1, "0\n");
                        tree_put(root, "block/loop1/diskseq", "43\n");
                }
        } else if (streq(how, "reuse-name")) {
                /* Removed, and another loop1 is appearing: its queue is there, not yet its
                 * diskseq nor its flag. */
                tree_rm(root, "block/loop1");
                tree_mkdir(root, "block/loop1/queue");
        } else if (streq(how, "dir")) {
                CHECK(unlink(path) == 0);
                CHECK(mkdir(path, 0755) == 0);
        } else if (streq(how, "fifo")) {
                CHECK(unlink(path) == 0);
                CHECK(mkfifo(path, 0644) == 0);
        }
}

static int apply_case(void *userdata) {
        const ApplyCase *c = userdata;
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(apply_result_done) ApplyResult res = {};
        EngineDevice *d1, *d2;
        int r;

        tree_rm(root, "block");
        tree_rm(root, "run");
        make_loop("loop1", 1, "0\n");
        make_loop("loop2", 2, "0\n");
        r = setup_engine(&e);
        CHECK_INT(r, 0);
        if (r < 0)
                return r;
        d1 = engine_find(&e, "loop1");
        d2 = engine_find(&e, "loop2");
        CHECK(d1 && d2);
        if (!d1 || !d2)
                return -ENODEV;
        CHECK_INT(d1->decision.desired, 1);

        if (c->error)
                fault_arm_write("/block/loop1/queue/stable_writes", c->error);
        else if (c->swallow)
                fault_arm_write_swallow("/block/loop1/queue/stable_writes");
        else if (c->replace)
                fault_arm_open("/block/loop1/queue/stable_writes", replace_action, (void *) c->replace);
        r = engine_apply(&e, d1, &res);
        if (c->error || c->swallow || c->replace)
                CHECK(fault_hits() >= (c->replace && strstr(c->replace, "-after-write") ? 3u : 1u));
        fault_disarm();
        if (r != c->ret)
                fprintf(stderr, "apply case \"%s\": %d (%s)\n", c->name, r, res.message);
        CHECK_INT(r, c->ret);
        CHECK(res.message != NULL);
        CHECK_CONTAINS(res.message, "loop1: ");
        CHECK_CONTAINS(res.message, c->message);
        if (c->ret < 0) {
                CHECK(!res.changed);
                CHECK_INT(d1->facts->stable_writes, 0); /* not pretended to be changed */
        }

        /* The next disk is applied as usual. */
        apply_result_done(&res);
        CHECK_INT(engine_apply(&e, d2, &res), 0);
        CHECK(res.changed);
        long long v = -1;
        CHECK_INT(sysfs_read_int(root, "block/loop2/queue/stable_writes", &v), 0);
        CHECK_INT(v, 1);
        return tests_failed > 0 ? -EBADMSG : 0;
}

static const ApplyCase apply_cases[] = {
        { "ok", .ret = 0, .message = "stable writes on" },
        { "EIO", .error = EIO, .ret = -EIO,
          .message = "cannot write 1 to queue/stable_writes: Input/output error" },
        { "EINVAL", .error = EINVAL, .ret = -EINVAL,
          .message = "cannot write 1 to queue/stable_writes: Invalid argument" },
        { "EBUSY", .error = EBUSY, .ret = -EBUSY, .message = "Device or resource busy" },
        { "EACCES", .error = EACCES, .ret = -EACCES, .message = "Permission denied" },
        { "ignored write", .swallow = true, .ret = -EIO,
          .message = "wrote 1 to queue/stable_writes but it reads 0" },
        { "directory", .replace = "dir", .ret = -EISDIR, .message = "Is a directory" },
        /* The flag is read before it is written (flag.c): a FIFO reads as nothing. */
        { "fifo", .replace = "fifo", .ret = -EINVAL,
          .message = "cannot read queue/stable_writes: Invalid argument" },
        { "disk removed while applied", .replace = "remove-disk", .ret = -ENODEV,
          .message = "loop1: the disk was removed while being applied" },
        { "disk removed and its name taken while applied", .replace = "reuse-name", .ret = -ENODEV,
          .message = "loop1: the disk was removed while being applied" },
        { "flag removed while applied", .replace = "remove-flag", .ret = -ENODEV,
          .message = "loop1: the disk was removed while being applied" },
        { "flag removed before the read back", .replace = "remove-flag-after-write", .ret = -ENODEV,
          .message = "loop1: the disk was removed while being applied" },
        { "name taken before the read back", .replace = "reuse-name-after-write", .ret = -ENODEV,
          .message = "loop1: the disk was removed while being applied" },
};

static void test_apply_faults(void) {
        for (size_t i = 0; i < ELEMENTSOF(apply_cases); i++) {
                /* In a child with an alarm: a write that blocks fails the case. */
                int r = run_in_child(apply_case, (void *) &apply_cases[i], false);
                if (r != 0)
                        fprintf(stderr, "apply case \"%s\" failed: %d\n", apply_cases[i].name, r);
                CHECK_INT(r, 0);
        }
}

static int apply_unreadable(void *userdata) {
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(apply_result_done) ApplyResult res = {};
        const char *how = userdata;
        int r;

        tree_rm(root, "block");
        tree_rm(root, "run");
        make_loop("loop1", 1, "0\n");
        if (streq(how, "removed")) {
                /* Removed in the middle of its reading: the flag is gone, then the rest. */
                fault_arm_open("/block/loop1/queue/stable_writes", rm_action, "block/loop1");
        } else if (streq(how, "unparsable"))
                tree_put(root, "block/loop1/queue/stable_writes", "maybe\n");
        else if (streq(how, "absent"))
                tree_rm(root, "block/loop1/queue/stable_writes");
        else {
                tree_rm(root, "block/loop1/queue/stable_writes");
                tree_mkdir(root, "block/loop1/queue/stable_writes");
        }
        r = setup_engine(&e);
        CHECK_INT(r, 0);
        fault_disarm();
        EngineDevice *d = engine_find(&e, "loop1");
        CHECK(d != NULL);
        if (!d)
                return -ENODEV;
        r = engine_apply(&e, d, &res);
        CHECK(r < 0);
        fprintf(stderr, "%s: %s\n", how, res.message);
        /* The message says what is wrong with the attribute, not that it does not exist. */
        if (streq(how, "unparsable")) {
                CHECK_INT(r, -EIO);
                CHECK_CONTAINS(res.message, "loop1: queue/stable_writes: unparsable value \"maybe\"");
        } else if (streq(how, "removed")) {
                CHECK_INT(r, -ENODEV);
                CHECK_CONTAINS(res.message, "loop1: the disk was removed");
        } else if (streq(how, "absent")) {
                CHECK_INT(r, -EOPNOTSUPP);
                CHECK_CONTAINS(res.message, "loop1: the kernel has no queue/stable_writes");
        } else {
                CHECK_INT(r, -EIO);
                CHECK_CONTAINS(res.message, "loop1: queue/stable_writes: Is a directory");
        }
        return tests_failed > 0 ? -EBADMSG : 0;
}

static void test_apply_unreadable_flag(void) {
        CHECK_INT(run_in_child(apply_unreadable, "unparsable", false), 0);
        CHECK_INT(run_in_child(apply_unreadable, "absent", false), 0);
        CHECK_INT(run_in_child(apply_unreadable, "directory", false), 0);
        CHECK_INT(run_in_child(apply_unreadable, "removed", false), 0);
}

/* A hidden disk (an NVMe multipath path: a queue, no dev) is a disk of its own, found by
 * name but never by number, and its head lists it. */
static void test_hidden_nvme_paths(void) {
        _cleanup_(device_table_done) DeviceTable t = {}, sub = {};
        DeviceScanOptions o = scan_options();
        _cleanup_free_ char *disk = NULL;

        tree_rm(root, "block");
        tree_put(root, "block/nvme0c0n1/queue/stable_writes", "1\n");
        tree_put(root, "block/nvme0c0n1/device/transport", "tcp\n");
        tree_put(root, "block/nvme0c1n1/queue/stable_writes", "1\n");
        tree_put(root, "block/nvme0n1/dev", "259:1\n");
        tree_put(root, "block/nvme0n1/queue/stable_writes", "1\n");
        tree_put(root, "block/nvme1n1/dev", "259:2\n"); /* another subsystem's namespace */
        tree_put(root, "block/nvme1n1/queue/stable_writes", "0\n");
        tree_put(root, "block/nvme0n10/dev", "259:3\n"); /* another namespace of subsystem 0 */

        CHECK_INT(device_table_scan(&o, &t), 0);
        CHECK_INT(t.n, 5);
        DeviceFacts *path = device_table_find(&t, "nvme0c0n1"), *head = device_table_find(&t, "nvme0n1");
        CHECK(path && path->hidden && path->devnum == 0 && path->stable_writes == 1);
        CHECK(path && path->nvme_transport && streq(path->nvme_transport, "tcp"));
        CHECK(head && !head->hidden && strv_length(head->nvme_paths) == 2);
        CHECK(head && strv_contains(head->nvme_paths, "nvme0c0n1") &&
              strv_contains(head->nvme_paths, "nvme0c1n1"));
        CHECK(strv_length(device_table_find(&t, "nvme1n1")->nvme_paths) == 0);
        CHECK(strv_length(device_table_find(&t, "nvme0n10")->nvme_paths) == 0);
        CHECK(device_table_find_devnum(&t, 0) == NULL);
        CHECK_INT(device_disk_of(root, "nvme0c0n1", &disk), 0);
        CHECK_STR(disk, "nvme0c0n1");

        /* The applier's view of the head reads its paths too. */
        CHECK_INT(device_table_scan_for(&o, (char *[]){ "nvme0n1", NULL }, &sub), 0);
        CHECK_INT(sub.n, 3);
        CHECK(device_table_find(&sub, "nvme0c1n1") != NULL);
        tree_rm(root, "block");
}

/* MMC over SPI: an ancestor of the card is bound to mmc_spi. iSCSI: the session's SCSI host
 * says which initiator runs it. Laid out as the kernel does (mmc_alloc_host() under the SPI
 * device, iscsi_session under its host). */
static void test_ancestor_facts(void) {
        _cleanup_(device_table_done) DeviceTable t = {};
        DeviceScanOptions o = scan_options();

        tree_rm(root, "block");
        tree_rm(root, "devices");
        tree_symlink(root, "devices/platform/spi0/spi0.0/driver", "../../../../bus/spi/drivers/mmc_spi");
        tree_symlink(root, "devices/platform/spi0/spi0.0/mmc_host/mmc0/mmc0:0000/driver",
                     "../../../../../../../bus/mmc/drivers/mmcblk");
        tree_put(root, "block/mmcblk0/dev", "179:0\n");
        tree_put(root, "block/mmcblk0/queue/stable_writes", "1\n");
        tree_symlink(root, "block/mmcblk0/device",
                     "../../devices/platform/spi0/spi0.0/mmc_host/mmc0/mmc0:0000");
        tree_put(root, "block/mmcblk1/dev", "179:8\n"); /* on an SDHCI host */
        tree_mkdir(root, "devices/pci0000:00/sdhci/mmc_host/mmc1/mmc1:0001");
        tree_symlink(root, "block/mmcblk1/device", "../../devices/pci0000:00/sdhci/mmc_host/mmc1/mmc1:0001");

        tree_put(root, "devices/platform/host3/scsi_host/host3/proc_name", "iscsi_tcp\n");
        tree_put(root,
                 "devices/platform/host3/session1/connection1:0/iscsi_connection/connection1:0/data_digest",
                 "CRC32C\n");
        tree_mkdir(root, "devices/platform/host3/session1/target3:0:0/3:0:0:0");
        tree_put(root, "block/sdb/dev", "8:16\n");
        tree_symlink(root, "block/sdb/device", "../../devices/platform/host3/session1/target3:0:0/3:0:0:0");
        tree_put(root, "block/sdb/queue/stable_writes", "1\n");

        CHECK_INT(device_table_scan(&o, &t), 0);
        DeviceFacts *f = device_table_find(&t, "mmcblk0");
        CHECK(f && f->kind == DEVICE_KIND_MMC && f->mmc_spi);
        f = device_table_find(&t, "mmcblk1");
        CHECK(f && f->kind == DEVICE_KIND_MMC && !f->mmc_spi);
        f = device_table_find(&t, "sdb");
        CHECK(f && f->iscsi_data_digest && streq(f->iscsi_data_digest, "CRC32C"));
        CHECK(f && f->scsi_host_driver && streq(f->scsi_host_driver, "iscsi_tcp"));
        device_table_done(&t);

        tree_put(root, "devices/platform/host3/scsi_host/host3/proc_name", "bnx2i\n");
        CHECK_INT(device_table_scan(&o, &t), 0);
        f = device_table_find(&t, "sdb");
        CHECK(f && f->scsi_host_driver && streq(f->scsi_host_driver, "bnx2i"));
        tree_rm(root, "block");
        tree_rm(root, "devices");
}

static int reader_result;
static int fake_reader(dev_t devnum, void *userdata, DmTable *ret) {
        if (reader_result < 0)
                return reader_result;
        return dm_table_from_lines((char *[]){ "0 8 integrity 7:0 0 4 D 1 internal_hash:sha256", NULL },
                                   ret);
}

/* The table of a dm device: the kernel's when the reader can (root), else the udev
 * database's; when neither, the reason says why, and nothing is read as "none". */
static void test_dm_table_sources(void) {
        DeviceScanOptions o = scan_options();
        DeviceFacts f;

        tree_rm(root, "block");
        tree_rm(root, "udev");
        tree_put(root, "block/dm-0/dev", "253:0\n");
        tree_put(root, "block/dm-0/dm/name", "sp\n");
        tree_put(root, "block/dm-0/queue/stable_writes", "0\n");

        o.read_dm_table = fake_reader;
        reader_result = 0;
        CHECK_INT(device_facts_read(&o, "dm-0", &f), 0);
        CHECK_STR(f.dm_table_source, "kernel");
        CHECK(f.dm_table.n == 1 && f.dm_table.targets[0].mode == 'D');
        device_facts_done(&f);

        /* Not root: no table, and nothing in the udev database. */
        reader_result = -EACCES;
        CHECK_INT(device_facts_read(&o, "dm-0", &f), 0);
        CHECK(!f.dm_table_source);
        CHECK_CONTAINS(f.dm_table_missing, "Permission denied (it needs CAP_SYS_ADMIN)");
        CHECK_CONTAINS(f.dm_table_missing, "the udev database has no STABLEPAGES_DM_TABLE");
        device_facts_done(&f);

        /* What the rule's import recorded. */
        tree_put(root, "udev/b253:0",
                 "S:mapper/sp\nE:DM_NAME=sp\nE:STABLEPAGES_DM_TABLE=1\n"
                 "E:STABLEPAGES_DM_TARGETS=integrity,mode=B,hash=crc32c\n");
        CHECK_INT(device_facts_read(&o, "dm-0", &f), 0);
        CHECK_STR(f.dm_table_source, "udev");
        CHECK(f.dm_table.n == 1 && f.dm_table.targets[0].mode == 'B');
        CHECK(!f.dm_table_missing);
        device_facts_done(&f);

        tree_put(root, "udev/b253:0", "E:STABLEPAGES_DM_TABLE=one\n");
        CHECK_INT(device_facts_read(&o, "dm-0", &f), 0);
        CHECK(!f.dm_table_source);
        CHECK_CONTAINS(f.dm_table_missing, "malformed");
        device_facts_done(&f);

        /* A captured tree (another sysfs root) is never read through the kernel. */
        o.read_dm_table = NULL;
        tree_rm(root, "udev");
        CHECK_INT(device_facts_read(&o, "dm-0", &f), 0);
        CHECK(!f.dm_table_source);
        CHECK_CONTAINS(f.dm_table_missing, "not read from the kernel");
        device_facts_done(&f);
        tree_rm(root, "block");
}

int main(void) {
        log_set_max_level(LOG_DEBUG);
        root = tree_new();
        test_hidden_nvme_paths();
        test_ancestor_facts();
        test_dm_table_sources();
        test_vanish_between_listing_and_reading();
        test_unparsable_and_unreadable();
        test_udev_database();
        test_apply_faults();
        test_apply_unreadable_flag();
        tree_free(root);
        return tests_finish();
}
