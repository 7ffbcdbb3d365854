/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The detectors. Each states what the device does with a page under writeback, and, where
 * the kernel sets queue/stable_writes for that reason, the kernel function that does it
 * (read from Debian's 6.1.176, 6.1.192 and 6.12.117 source trees). A flag that reads 1 and
 * that no detector attributes to the kernel is "unknown": kept on. */
#include "classify.h"
#include "util.h"

static const char *const need_table[_NEED_MAX] = {
        [NEED_NONE] = "none",
        [NEED_RECOMMENDED] = "recommended",
        [NEED_UNKNOWN] = "unknown",
        [NEED_REQUIRED] = "required",
};

DEFINE_STRING_TABLE_LOOKUP(need, Need);

bool stable_writes_in_force(const DeviceFacts *f, unsigned kernel) {
        return f->stable_writes == 1 ||
               (kernel >= KERNEL_VERSION(6, 11, 0) && integrity_format_is_checksum(f->integrity_format));
}

const char *kernel_state_to_string(int flag, bool in_force) {
        if (flag == ATTR_ABSENT)
                return "-";
        if (flag == 0 && in_force)
                return "on (integrity)";
        return flag ? "on" : "off";
}

/* What a device does with the page, as the detectors see it, with the reasons. */
typedef struct Findings {
        Need need;
        bool matched;     /* some detector applied */
        bool breaks;      /* the device copies the page: what is below never sees it */
        char *flag_cause; /* why the kernel set the flag here, the first cause found */
        char **reasons;
        Need *reason_needs; /* parallel to reasons */
        size_t n;
} Findings;

static void findings_done(Findings *f) {
        free(f->flag_cause);
        strv_free(f->reasons);
        free(f->reason_needs);
}

/* Records one finding: need, whether the device copies the page (breaks the stack), the kernel
 * behaviour that sets the flag for this reason (cause, or NULL) and the reason (owned). */
static int add(Findings *fs, Need need, bool breaks, const char *cause, char *reason) {
        if (!reason)
                return -ENOMEM;
        Need *m = realloc(fs->reason_needs, sizeof(Need) * (fs->n + 1));
        if (!m) {
                free(reason);
                return -ENOMEM;
        }
        fs->reason_needs = m;
        int r = strv_extend(&fs->reasons, reason);
        free(reason);
        if (r < 0)
                return r;
        m[fs->n++] = need;
        fs->need = MAX(fs->need, need);
        fs->breaks = fs->breaks || breaks;
        if (cause && !fs->flag_cause && !(fs->flag_cause = strdup(cause)))
                return -ENOMEM;
        return 0;
}

#define FOUND(fs, need, breaks, cause, ...)                                                                 \
        ({                                                                                                  \
                (fs)->matched = true;                                                                       \
                add((fs), (need), (breaks), (cause), strdup_printf(__VA_ARGS__));                           \
        })

typedef int (*detector_t)(const DeviceFacts *f, unsigned kernel, Findings *fs);

/* 5.10-6.10: blk_integrity_register() sets QUEUE_FLAG_STABLE_WRITES for every profile.
 * 6.11+: it sets nothing; bdev_stable_writes() is true for checksum formats (csum_type). */
#define CAUSE_INTEGRITY_REGISTER                                                                            \
        "blk_integrity_register() sets it for every integrity profile (5.10 to 6.10)"

static int detect_integrity(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        bool old = kernel < KERNEL_VERSION(6, 11, 0);
        const char *enforced = old ? ""
                                   : "; on this kernel (6.11+) the integrity profile enforces "
                                     "stable writes whatever queue/stable_writes reads";
        const char *fmt = f->integrity_format;

        if (fmt && (streq(fmt, "nop") || streq(fmt, "DM-DIF-EXT-TAG")))
                return FOUND(fs, NEED_NONE, false, old ? CAUSE_INTEGRITY_REGISTER : NULL,
                             "integrity profile %s computes nothing from the data (%s): %s", fmt,
                             streq(fmt, "nop") ? "metadata without protection information"
                                               : "dm-integrity stores the tags the layer above supplies",
                             old ? "the kernel's integrity registration sets stable writes for any "
                                   "profile up to 6.10 (" CAUSE_INTEGRITY_REGISTER "), which they do "
                                   "not need; 6.11 dropped it and counts only checksum formats "
                                   "(bdev_stable_writes())"
                                 : "this kernel counts only checksum formats (bdev_stable_writes())");
        if (!integrity_format_is_checksum(fmt))
                return 0;
        if (f->write_generate == 0)
                return FOUND(fs, NEED_RECOMMENDED, false, old ? CAUSE_INTEGRITY_REGISTER : NULL,
                             "integrity format %s with write_generate=0: the kernel does not "
                             "generate protection information now, but write_generate can be set "
                             "to 1 at run time without a uevent%s",
                             fmt, enforced);
        return FOUND(fs, NEED_REQUIRED, false, old ? CAUSE_INTEGRITY_REGISTER : NULL,
                     "integrity format %s with write_generate=%s: the kernel computes protection "
                     "information from the page before the device reads it again; a page modified "
                     "in between fails the guard check%s",
                     fmt, f->write_generate == 1 ? "1" : "(unknown)", enforced);
}

static int detect_zram(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        if (f->kind != DEVICE_KIND_ZRAM)
                return 0;
        return FOUND(fs, NEED_REQUIRED, true, "zram_add() sets it on every zram disk",
                     "zram compresses the page while it is written: a page modified during "
                     "compression is stored corrupted");
}

static int detect_md(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        const char *l = f->md_level;

        if (f->kind != DEVICE_KIND_MD || !l)
                return 0;
        if (streq(l, "raid4") || streq(l, "raid5") || streq(l, "raid6")) {
                if (f->md_skip_copy == 1)
                        return FOUND(fs, NEED_REQUIRED, false,
                                     "raid5_store_skip_copy() sets it with skip_copy=1",
                                     "md %s with skip_copy=1 computes parity from the page and "
                                     "writes the page itself: a page modified in between leaves "
                                     "parity that does not match the data",
                                     l);
                return FOUND(fs, NEED_NONE, true, NULL,
                             "md %s with skip_copy=%s copies the page into its stripe cache "
                             "before computing parity",
                             l, f->md_skip_copy == 0 ? "0" : "(absent)");
        }
        if (streq(l, "raid1") || streq(l, "raid10"))
                return FOUND(fs, NEED_RECOMMENDED, false, NULL,
                             "md %s writes the same page to each mirror at different times: a "
                             "page modified in between leaves the mirrors different (mismatch_cnt)",
                             l);
        return FOUND(fs, NEED_NONE, false, NULL, "md %s passes the page through to its components", l);
}

/* Device-mapper targets that hand the page itself to the devices below (the need comes from
 * them), as found in drivers/md of 6.12. A type not listed here is not known to be safe. */
static const char *const dm_passthrough[] = {
        "linear",
        "striped",
        "multipath",
        "delay",
        "flakey",
        "dust",
        "ebs",
        "era",
        "switch",
        "unstriped",
        "zoned",
        "snapshot",
        "snapshot-origin",
        "snapshot-merge",
        "thin",
        "thin-pool",
        "cache",
        "clone",
        "log-writes",
        "writecache",
        "vdo",
};

static bool dm_is_passthrough(const char *type) {
        for (size_t i = 0; i < ELEMENTSOF(dm_passthrough); i++)
                if (streq(type, dm_passthrough[i]))
                        return true;
        return false;
}

static const char *dm_integrity_mode_name(char mode) {
        switch (mode) {
        case 'J':
                return "journal";
        case 'B':
                return "bitmap";
        case 'D':
                return "direct";
        case 'I':
                return "inline";
        case 'R':
                return "recovery";
        default:
                return NULL;
        }
}

/* dm_integrity_io_hints(): "dm-integrity: require stable writes for internal hash modes". */
#define CAUSE_DM_INTEGRITY                                                                                  \
        "dm_integrity_io_hints() sets it for internal-hash modes B, D and I (since \"dm-integrity: "        \
        "require stable writes for internal hash modes\": 7.3, 7.2.13, 6.12.115, 6.1.191)"

static int detect_dm_integrity(const DeviceFacts *f, const DmTarget *t, bool breaks, Findings *fs) {
        const char *name = f->dm_name ?: f->name, *mode = dm_integrity_mode_name(t->mode);

        if (!mode)
                return FOUND(fs, NEED_UNKNOWN, breaks, NULL,
                             "dm-integrity (%s) in mode '%c', which stablepages does not know: a mode "
                             "that computes the tag from the page cannot be ruled out, treated as required",
                             name, t->mode);
        if (!t->hash)
                return FOUND(fs, NEED_NONE, breaks, NULL,
                             "dm-integrity (%s, %s mode) without internal hash stores the tags the layer "
                             "above supplies (dm-crypt computes them from its own encrypted copy): "
                             "nothing here computes anything from the page",
                             name, mode);
        if (t->mode == 'J')
                /* Measured in tests/vm/scenarios/dm-integrity.sh (6.1, 6.12): no read errors. */
                return FOUND(fs, NEED_NONE, breaks, NULL,
                             "dm-integrity (%s) in journal mode with internal hash %s copies the data "
                             "into its journal and computes the tag from that copy, so a page modified "
                             "under writeback cannot mismatch its tag",
                             name, t->hash);
        if (t->mode == 'R')
                return FOUND(fs, NEED_NONE, breaks, NULL,
                             "dm-integrity (%s) in recovery mode accepts no writes", name);
        return FOUND(fs, NEED_REQUIRED, breaks, CAUSE_DM_INTEGRITY,
                     "dm-integrity (%s) in %s mode with internal hash %s computes the tag from the "
                     "page and writes the page itself: a page modified in between reads back as a "
                     "checksum error (EILSEQ); %s",
                     name, mode, t->hash,
                     f->declared_stable_writes == 1
                             ? "this kernel declared stable writes for it"
                             : "this kernel did not declare stable writes for it (only kernels with "
                               "\"dm-integrity: require stable writes for internal hash modes\" do: "
                               "7.3, 7.2.13, 6.12.115, 6.1.191), so stablepages must");
}

#define LEGS_DIVERGE                                                                                        \
        "writes the same page to each leg at different times: a page modified in between leaves the "       \
        "legs different"

static int detect_dm_target(const DeviceFacts *f, const DmTarget *t, bool breaks, Findings *fs) {
        const char *name = f->dm_name ?: f->name, *type = t->type;

        if (streq(type, "integrity"))
                return detect_dm_integrity(f, t, breaks, fs);
        if (streq(type, "crypt"))
                return FOUND(
                        fs, NEED_NONE, breaks, NULL,
                        "dm-crypt (%s) encrypts the page into its own buffer before it is written%s%s%s",
                        name, t->crypt_integrity ? ", and computes its integrity tags (" : "",
                        t->crypt_integrity ?: "", t->crypt_integrity ? ") from that copy" : "");
        if (streq(type, "raid")) {
                const char *l = t->raid_level ?: "";
                if (startswith(l, "raid4") || startswith(l, "raid5") || startswith(l, "raid6"))
                        /* dm-raid has no md/skip_copy (raid5_store_skip_copy() is its only setter) */
                        return FOUND(fs, NEED_NONE, breaks, NULL,
                                     "dm-raid (%s, %s) copies the page into md's stripe cache before "
                                     "computing parity (skip_copy is 0 and cannot be set on dm-raid)",
                                     name, l);
                if (startswith(l, "raid1"))
                        return FOUND(fs, NEED_RECOMMENDED, breaks, NULL, "dm-raid (%s, %s) %s", name, l,
                                     LEGS_DIVERGE);
                if (streq(l, "raid0"))
                        return FOUND(fs, NEED_NONE, breaks, NULL,
                                     "dm-raid (%s, raid0) passes the page through to its legs", name);
                return FOUND(fs, NEED_UNKNOWN, breaks, NULL,
                             "dm-raid (%s) of raid type \"%s\", which stablepages does not know: treated "
                             "as required",
                             name, l);
        }
        if (streq(type, "mirror"))
                return FOUND(fs, NEED_RECOMMENDED, breaks, NULL, "dm-mirror (%s) %s", name, LEGS_DIVERGE);
        if (streq(type, "zero") || streq(type, "error"))
                return FOUND(fs, NEED_NONE, breaks, NULL, "device-mapper target %s (%s) stores nothing",
                             type, name);
        if (streq(type, "verity"))
                return FOUND(fs, NEED_NONE, breaks, NULL, "dm-verity (%s) is read-only", name);
        if (dm_is_passthrough(type))
                return FOUND(fs, NEED_NONE, breaks, NULL,
                             "device-mapper target %s (%s) passes the page through to the devices below",
                             type, name);
        return FOUND(fs, NEED_UNKNOWN, breaks, NULL,
                     "device-mapper target %s (%s) is not known to stablepages: one that computes a "
                     "checksum from the page cannot be ruled out, treated as required",
                     type, name);
}

/* Whether a target never hands the page itself to the devices below: dm-crypt encrypts it
 * into its own buffer; dm-raid 4/5/6 copies it into md's stripe cache (skip_copy is 0). */
static bool dm_target_copies(const DmTarget *t) {
        const char *l = t->raid_level ?: "";
        return streq(t->type, "crypt") ||
               (streq(t->type, "raid") &&
                (startswith(l, "raid4") || startswith(l, "raid5") || startswith(l, "raid6")));
}

static int detect_dm(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        const char *name = f->dm_name ?: f->name;
        bool breaks = f->dm_table.n > 0;
        int r;

        if (f->kind != DEVICE_KIND_DM)
                return 0;
        if (!f->dm_table_source)
                /* Missing facts are never read as "none": a dm-integrity target in bitmap or
                 * direct mode on a kernel that does not declare it looks like anything else. */
                return FOUND(fs, NEED_UNKNOWN, false, NULL,
                             "the device-mapper table of %s is not known: %s. A dm-integrity target "
                             "that needs stable writes cannot be ruled out: treated as required",
                             name, f->dm_table_missing ?: "not read");
        if (f->dm_table.count == 0)
                return FOUND(fs, NEED_NONE, false, NULL, "device-mapper device %s has no table loaded",
                             name);
        /* Only a table whose every target copies the page shields what is below. */
        for (size_t i = 0; i < f->dm_table.n; i++)
                breaks = breaks && dm_target_copies(&f->dm_table.targets[i]);
        for (size_t i = 0; i < f->dm_table.n; i++)
                if ((r = detect_dm_target(f, &f->dm_table.targets[i], breaks, fs)) < 0)
                        return r;
        return 0;
}

static int detect_loop(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        /* The loop driver sets no stable writes in any tree: a 1 was written by user space. */
        static const char cause[] = "the loop driver never sets it: user space wrote it";

        if (f->kind != DEVICE_KIND_LOOP)
                return 0;
        if (f->loop_dio == 1 && f->loop_backing_unresolved)
                /* Missing facts are never read as "none": the disk below may need it. */
                return FOUND(fs, NEED_UNKNOWN, false, cause,
                             "loop with dio=1 writes the page directly to its backing file \"%s\", and the "
                             "disk holding that file is not known (it could not be resolved): a disk below "
                             "that needs stable writes cannot be ruled out, treated as required",
                             f->loop_backing_file);
        if (f->loop_dio == 1)
                /* the need comes from the disk under the backing file: see classify_one() */
                return FOUND(fs, NEED_NONE, false, cause,
                             "loop with dio=1 writes the page directly to its backing file%s%s%s",
                             f->loop_backing_file ? " \"" : "", f->loop_backing_file ?: "",
                             f->loop_backing_file ? "\"" : "");
        if (!f->loop_backing_file)
                return FOUND(fs, NEED_NONE, true, cause, "loop device without a backing file");
        return FOUND(fs, NEED_NONE, true, cause,
                     "loop with buffered I/O (dio=0) copies the page into the page cache of its "
                     "backing file \"%s\"",
                     f->loop_backing_file);
}

static int detect_iscsi(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        const char *host = f->scsi_host_driver;

        if (!f->iscsi_data_digest)
                return 0;
        if (strcasecmp(f->iscsi_data_digest, "None") == 0)
                return FOUND(fs, NEED_NONE, false, NULL,
                             "iSCSI connection without data digest: the page is sent once");
        if (host && !streq(host, "iscsi_tcp"))
                return FOUND(fs, NEED_NONE, false, NULL,
                             "iSCSI connection with data digest %s through the offload HBA %s, which "
                             "computes the digest as it transfers the data, once; only the software "
                             "initiator (iscsi_tcp) needs stable writes",
                             f->iscsi_data_digest, host);
        return FOUND(fs, NEED_REQUIRED, false,
                     "iscsi_sw_tcp_slave_configure() sets it when the connection negotiated a data digest",
                     "iSCSI connection with data digest %s (%s): the initiator checksums the page and "
                     "then sends it; a page modified in between fails the digest",
                     f->iscsi_data_digest, host ? "software initiator iscsi_tcp" : "initiator not known");
}

static bool nvme_is_tcp(const DeviceFacts *f) {
        return f->kind == DEVICE_KIND_NVME && f->nvme_transport && streq(f->nvme_transport, "tcp");
}

/* A flag that reads 0 where the kernel may have declared stable writes for a reason sysfs
 * does not show (what), and whose value at the disk's add was not recorded: another program
 * may have cleared it. Never read as "none". */
#define UNRECORDED(fs, f, what)                                                                             \
        FOUND(fs, NEED_UNKNOWN, false, NULL,                                                                \
              "%s: the flag the kernel set when %s appeared was not recorded (no history from its add), "   \
              "and it reads 0 now; another program may have cleared it: treated as required",               \
              what, (f)->name)

/* Whether the flag f's detectors read as the kernel's declaration is the kernel's own: recorded
 * at the disk's add, or 1 (a 0 is what clearing it leaves). */
static bool declared_known(const DeviceFacts *f) {
        return f->declared_at_add || f->declared_stable_writes == 1;
}

static int detect_nvme_fabrics(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        if (!nvme_is_tcp(f))
                return 0;
        /* The digest option is not shown in sysfs; the driver declares stable writes exactly
         * when it is on, which is what the declared flag records. */
        if (f->declared_stable_writes == 1)
                return FOUND(fs, NEED_REQUIRED, false,
                             "nvme_alloc_ns() sets it for a controller connected with data_digest",
                             "NVMe/TCP with data digest (the driver declared stable writes at "
                             "connect): the page is checksummed and then sent; a page modified in "
                             "between fails the digest");
        if (!declared_known(f))
                return UNRECORDED(fs, f, "NVMe/TCP, whose driver declares stable writes for a data digest");
        return FOUND(fs, NEED_NONE, false, NULL,
                     "NVMe/TCP without data digest (the driver did not declare stable writes)");
}

static int detect_nvme_head(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        if (f->kind != DEVICE_KIND_NVME || !f->nvme_paths)
                return 0;
        return FOUND(fs, NEED_NONE, false, NULL,
                     "NVMe multipath head: passes the page to one of its paths (%zu)",
                     strv_length(f->nvme_paths));
}

static int detect_mmc(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        if (f->kind != DEVICE_KIND_MMC || !f->mmc_spi)
                return 0;
        if (f->declared_stable_writes == 1)
                return FOUND(fs, NEED_REQUIRED, false,
                             "mmc_init_queue() sets it for a host driven over SPI with CRC (use_spi_crc)",
                             "MMC/SD card over SPI with CRC (mmc_spi): the CRC of each block is computed "
                             "from the page and then the page is sent; a page modified in between fails it");
        if (!declared_known(f))
                return UNRECORDED(fs, f,
                                  "MMC/SD card over SPI, whose driver declares stable writes for its CRC");
        return FOUND(fs, NEED_NONE, false, NULL,
                     "MMC/SD card over SPI without CRC (the driver did not declare stable writes: "
                     "use_spi_crc is off)");
}

static int detect_rbd(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        if (f->kind != DEVICE_KIND_RBD)
                return 0;
        if (f->rbd_config_info && strstr(f->rbd_config_info, "nocrc"))
                return FOUND(fs, NEED_NONE, false, NULL, "rbd mapped with nocrc: no data CRC");
        return FOUND(fs, NEED_REQUIRED, false, "rbd_init_disk() sets it unless mapped with nocrc",
                     "rbd computes a CRC of the data before sending it (mapped without nocrc)");
}

static int detect_drbd(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        if (f->kind != DEVICE_KIND_DRBD)
                return 0;
        return FOUND(fs, NEED_REQUIRED, false, "drbd_create_device() sets it",
                     "drbd may checksum the page (data-integrity-alg) and sends it to its peer "
                     "while writing it locally");
}

static int detect_plain(const DeviceFacts *f, unsigned kernel, Findings *fs) {
        static const DeviceKind plain[] = {
                DEVICE_KIND_SCSI, DEVICE_KIND_VIRTIO, DEVICE_KIND_NVME,
                DEVICE_KIND_NBD,  DEVICE_KIND_MMC,    DEVICE_KIND_RAM,
        };

        if (integrity_format_is_checksum(f->integrity_format) || f->iscsi_data_digest || nvme_is_tcp(f) ||
            f->nvme_paths || f->mmc_spi)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                if (f->kind == plain[i])
                        return FOUND(fs, NEED_NONE, false, NULL,
                                     "plain %s disk%s%s%s: the page is transferred once",
                                     device_kind_to_string(f->kind), f->driver ? " (driver " : "",
                                     f->driver ?: "", f->driver ? ")" : "");
        return 0;
}

static const detector_t detectors[] = {
        detect_integrity,    detect_zram,      detect_md,  detect_dm,  detect_loop, detect_iscsi,
        detect_nvme_fabrics, detect_nvme_head, detect_mmc, detect_rbd, detect_drbd, detect_plain,
};

typedef enum Mark { MARK_NEW, MARK_BUSY, MARK_DONE } Mark;

typedef struct Classifier {
        const DeviceTable *table;
        unsigned kernel;
        Classification *results;
        Mark *marks;
} Classifier;

static int classify_one(Classifier *c, size_t i);

/* Stable insertion sort of the reasons by descending need: the deciding one first. */
static void sort_reasons(Findings *fs) {
        for (size_t k = 1; k < fs->n; k++)
                for (size_t j = k; j > 0 && fs->reason_needs[j] > fs->reason_needs[j - 1]; j--) {
                        Need tn = fs->reason_needs[j];
                        fs->reason_needs[j] = fs->reason_needs[j - 1];
                        fs->reason_needs[j - 1] = tn;
                        char *ts = fs->reasons[j];
                        fs->reasons[j] = fs->reasons[j - 1];
                        fs->reasons[j - 1] = ts;
                }
}

/* The kernel function that stacks the flag from a component into f, or NULL when the kernel
 * does not stack it for this kind of device on this kernel. */
static const char *stacking_function(const DeviceFacts *f, unsigned kernel) {
        bool old = kernel < KERNEL_VERSION(6, 11, 0);

        switch (f->kind) {
        case DEVICE_KIND_DM:
                return old ? "dm_table_set_restrictions()" : "blk_stack_limits()";
        case DEVICE_KIND_MD:
                return old ? NULL : "blk_stack_limits()";
        case DEVICE_KIND_NVME:
                return !f->nvme_paths ? NULL : old ? "nvme_mpath_add_disk()" : "queue_limits_stack_bdev()";
        default:
                return NULL;
        }
}

/* Takes the device below (index j) into account: the kernel may have stacked its flag into
 * this one (the cause of a 1 here), and unless this device copies the page, its need is
 * inherited, citing it. */
static int stack_on(Classifier *c, const DeviceFacts *f, Findings *fs, const char *how, size_t j) {
        const DeviceFacts *below = &c->table->devices[j];
        const char *fn = stacking_function(f, c->kernel);
        int r;

        if (fn && below->stable_writes == 1 && !fs->flag_cause) {
                fs->flag_cause = strdup_printf("%s stacks it from %s, which has it", fn, below->name);
                if (!fs->flag_cause)
                        return -ENOMEM;
        }
        if (fs->breaks)
                return 0;
        r = classify_one(c, j);
        if (r < 0)
                return r;
        const Classification *b = &c->results[j];
        if (b->need == NEED_NONE)
                return 0;
        return add(fs, b->need, false, NULL,
                   strdup_printf("%s %s, which is %s: %s", how, below->name, need_to_string(b->need),
                                 b->reasons ? b->reasons[0] : "no reason"));
}

static int classify_one(Classifier *c, size_t i) {
        const DeviceFacts *f = &c->table->devices[i];
        Classification *cl = &c->results[i];
        _cleanup_(findings_done) Findings fs = {};
        int r;

        if (c->marks[i] == MARK_DONE)
                return 0;
        if (c->marks[i] == MARK_BUSY)
                return 0; /* a loop in slaves/ or backing files: do not follow it again */
        c->marks[i] = MARK_BUSY;

        *cl = (Classification){ .need = NEED_NONE, .in_force = stable_writes_in_force(f, c->kernel) };
        cl->integrity_enforced =
                c->kernel >= KERNEL_VERSION(6, 11, 0) && integrity_format_is_checksum(f->integrity_format);

        for (size_t d = 0; d < ELEMENTSOF(detectors); d++)
                if ((r = detectors[d](f, c->kernel, &fs)) < 0)
                        return r;

        STRV_FOREACH (s, f->slaves) {
                DeviceFacts *below = device_table_find(c->table, *s);
                if (below &&
                    (r = stack_on(c, f, &fs, "stacked on", (size_t) (below - c->table->devices))) < 0)
                        return r;
        }
        STRV_FOREACH (s, f->nvme_paths) {
                DeviceFacts *below = device_table_find(c->table, *s);
                if (below &&
                    (r = stack_on(c, f, &fs, "served by path", (size_t) (below - c->table->devices))) < 0)
                        return r;
        }
        if (f->kind == DEVICE_KIND_LOOP && f->loop_dio == 1 && f->loop_backing_devnum) {
                DeviceFacts *below = device_table_find_devnum(c->table, f->loop_backing_devnum);
                if (below && below != f &&
                    (r = stack_on(c, f, &fs, "its backing file lives on",
                                  (size_t) (below - c->table->devices))) < 0)
                        return r;
        }

        if (f->declared_stable_writes == 1 && !fs.flag_cause)
                r = add(&fs, NEED_UNKNOWN, false, NULL,
                        strdup_printf("the kernel declared stable writes at probe time and no detector "
                                      "explains why (kind %s%s%s): treated as required",
                                      device_kind_to_string(f->kind), f->driver ? ", driver " : "",
                                      f->driver ?: ""));
        else if (f->declared_stable_writes == 1 && fs.need == NEED_NONE)
                /* Name the kernel behaviour that set a flag nothing here needs. */
                r = add(&fs, NEED_NONE, false, NULL,
                        strdup_printf("queue/stable_writes was 1 because %s; nothing on %s needs it",
                                      fs.flag_cause, f->name));
        else if (!fs.matched && !declared_known(f))
                r = UNRECORDED(
                        &fs, f,
                        "no detector knows this kind of disk, whose driver may declare stable writes");
        else if (!fs.matched)
                r = add(&fs, NEED_NONE, false, NULL,
                        strdup_printf("no detector applies (kind %s) and the kernel did not declare "
                                      "stable writes: nothing known reads the page twice",
                                      device_kind_to_string(f->kind)));
        else
                r = 0;
        if (r < 0)
                return r;

        sort_reasons(&fs);
        cl->need = fs.need;
        cl->reasons = TAKE_PTR(fs.reasons);
        cl->flag_cause = TAKE_PTR(fs.flag_cause);
        c->marks[i] = MARK_DONE;
        return 0;
}

int classify_table(const DeviceTable *t, unsigned kernel, Classification *ret) {
        memset(ret, 0, sizeof(Classification) * t->n);
        return classify_devices(t, kernel, NULL, ret);
}

int classify_devices(const DeviceTable *t, unsigned kernel, const bool *redo, Classification *results) {
        _cleanup_free_ Mark *marks = calloc(t->n + 1, sizeof(Mark));
        Classifier c = { .table = t, .kernel = kernel, .results = results, .marks = marks };

        if (!marks)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++)
                if (redo && !redo[i])
                        marks[i] = MARK_DONE; /* results[i] is what it was */
                else
                        results[i] = (Classification){};
        for (size_t i = 0; i < t->n; i++) {
                int r = classify_one(&c, i);
                if (r < 0) {
                        for (size_t j = 0; j < t->n; j++)
                                if (!redo || redo[j])
                                        classification_done(&results[j]);
                        return r;
                }
        }
        return 0;
}

void classification_done(Classification *c) {
        strv_free(c->reasons);
        free(c->flag_cause);
        *c = (Classification){};
}
