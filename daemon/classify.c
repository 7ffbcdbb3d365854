/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "classify.h"
#include "util.h"

static const char *const need_table[_NEED_MAX] = {
        [NEED_NONE] = "none",
        [NEED_RECOMMENDED] = "recommended",
        [NEED_UNKNOWN] = "unknown",
        [NEED_REQUIRED] = "required",
};

const char *need_to_string(Need n) {
        return n >= 0 && n < _NEED_MAX ? need_table[n] : NULL;
}

Need need_from_string(const char *s) {
        for (Need n = 0; n < _NEED_MAX; n++)
                if (s && streq(s, need_table[n]))
                        return n;
        return _NEED_INVALID;
}

bool stable_writes_in_force(const DeviceFacts *f, unsigned kernel) {
        return f->stable_writes == 1 ||
               (kernel >= KERNEL_VERSION(6, 11, 0) && integrity_format_is_checksum(f->integrity_format));
}

/* What a detector concluded about one device. */
typedef struct Finding {
        Need need;
        char *reason;
        bool explains_flag; /* the detector knows why the kernel set (or would never set) the flag */
        bool breaks_stack;  /* the device copies the page: what is below never sees it */
} Finding;

typedef int (*detector_t)(const DeviceFacts *f, unsigned kernel, Finding *ret);

#define FOUND(ret, n, explains, breaks, ...)                                                                \
        ({                                                                                                  \
                *(ret) = (Finding){ .need = (n), .explains_flag = (explains), .breaks_stack = (breaks) };   \
                (ret)->reason = strdup_printf(__VA_ARGS__);                                                 \
                (ret)->reason ? 1 : -ENOMEM;                                                                \
        })

static int detect_integrity(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        const char *enforced = kernel >= KERNEL_VERSION(6, 11, 0)
                                       ? "; on this kernel (6.11+) the integrity profile enforces "
                                         "stable writes whatever queue/stable_writes reads"
                                       : "";

        if (!integrity_format_is_checksum(f->integrity_format))
                return 0;
        if (f->write_generate == 0)
                return FOUND(ret, NEED_RECOMMENDED, true, false,
                             "integrity format %s with write_generate=0: the kernel does not "
                             "generate protection information now, but write_generate can be set "
                             "to 1 at run time without a uevent%s",
                             f->integrity_format, enforced);
        return FOUND(ret, NEED_REQUIRED, true, false,
                     "integrity format %s with write_generate=%s: the kernel computes protection "
                     "information from the page before the device reads it again; a page modified "
                     "in between fails the guard check%s",
                     f->integrity_format, f->write_generate == 1 ? "1" : "(unknown)", enforced);
}

static int detect_zram(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        if (f->kind != DEVICE_KIND_ZRAM)
                return 0;
        return FOUND(ret, NEED_REQUIRED, true, true,
                     "zram compresses the page while it is written: a page modified during "
                     "compression is stored corrupted");
}

static int detect_md(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        const char *l = f->md_level;

        if (f->kind != DEVICE_KIND_MD || !l)
                return 0;
        if (streq(l, "raid4") || streq(l, "raid5") || streq(l, "raid6")) {
                if (f->md_skip_copy == 1)
                        return FOUND(ret, NEED_REQUIRED, true, false,
                                     "md %s with skip_copy=1 computes parity from the page and "
                                     "writes the page itself: a page modified in between leaves "
                                     "parity that does not match the data",
                                     l);
                return FOUND(ret, NEED_NONE, true, true,
                             "md %s with skip_copy=%s copies the page into its stripe cache "
                             "before computing parity",
                             l, f->md_skip_copy == 0 ? "0" : "(absent)");
        }
        if (streq(l, "raid1") || streq(l, "raid10"))
                return FOUND(ret, NEED_RECOMMENDED, true, false,
                             "md %s writes the same page to each mirror at different times: a "
                             "page modified in between leaves the mirrors different (mismatch_cnt)",
                             l);
        return FOUND(ret, NEED_NONE, true, false, "md %s passes the page through to its components", l);
}

static int detect_dm(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        const char *u = f->dm_uuid ?: "";
        const char *name = f->dm_name ?: f->name;

        if (f->kind != DEVICE_KIND_DM)
                return 0;
        if (startswith(u, "CRYPT-INTEGRITY-") || startswith(u, "INTEGRITY-")) {
                if (f->declared_stable_writes == 1)
                        return FOUND(ret, NEED_REQUIRED, true, false,
                                     "dm-integrity (%s) declared stable writes (bitmap or direct mode): "
                                     "it computes the tag from the page and writes the page itself, so a "
                                     "page modified in between reads back as a checksum error",
                                     name);
                /* Measured in tests/vm/scenarios/dm-integrity.sh (6.1, 6.12): no read errors. */
                return FOUND(ret, NEED_NONE, true, false,
                             "dm-integrity (%s) did not declare stable writes (journal mode): it copies "
                             "the data into its journal and computes the tag from that copy, so a page "
                             "modified under writeback cannot mismatch its tag",
                             name);
        }
        if (startswith(u, "CRYPT-"))
                return FOUND(ret, NEED_NONE, true, true,
                             "dm-crypt (%s) encrypts the page into its own buffer before it is "
                             "written",
                             name);
        if (startswith(u, "LVM-"))
                return FOUND(ret, NEED_NONE, true, false,
                             "LVM logical volume (%s) maps the page through to its physical volumes", name);
        if (startswith(u, "mpath-"))
                return FOUND(ret, NEED_NONE, true, false,
                             "dm-multipath (%s) passes the page through to its paths", name);
        return FOUND(ret, NEED_NONE, true, false,
                     "device-mapper device (%s) passes the page through to its components", name);
}

static int detect_loop(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        if (f->kind != DEVICE_KIND_LOOP)
                return 0;
        if (f->loop_dio == 1)
                /* the need comes from the disk under the backing file: see classify_one() */
                return FOUND(ret, NEED_NONE, true, false,
                             "loop with dio=1 writes the page directly to its backing file%s%s%s",
                             f->loop_backing_file ? " \"" : "", f->loop_backing_file ?: "",
                             f->loop_backing_file ? "\"" : "");
        if (!f->loop_backing_file)
                return FOUND(ret, NEED_NONE, true, true, "loop device without a backing file");
        return FOUND(ret, NEED_NONE, true, true,
                     "loop with buffered I/O (dio=0) copies the page into the page cache of its "
                     "backing file \"%s\"",
                     f->loop_backing_file);
}

static int detect_iscsi(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        if (!f->iscsi_data_digest)
                return 0;
        if (strcasecmp(f->iscsi_data_digest, "None") == 0)
                return FOUND(ret, NEED_NONE, false, false,
                             "iSCSI connection without data digest: the page is sent once");
        return FOUND(ret, NEED_REQUIRED, true, false,
                     "iSCSI connection with data digest %s: the initiator checksums the page and "
                     "then sends it; a page modified in between fails the digest",
                     f->iscsi_data_digest);
}

static int detect_nvme_fabrics(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        if (f->kind != DEVICE_KIND_NVME || !f->nvme_transport || !streq(f->nvme_transport, "tcp"))
                return 0;
        if (f->declared_stable_writes == 1)
                return FOUND(ret, NEED_REQUIRED, true, false,
                             "NVMe/TCP with data digest (the driver declared stable writes at "
                             "connect): the page is checksummed and then sent");
        return FOUND(ret, NEED_NONE, true, false,
                     "NVMe/TCP without data digest (the driver did not declare stable writes)");
}

static int detect_rbd(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        if (f->kind != DEVICE_KIND_RBD)
                return 0;
        if (f->rbd_config_info && strstr(f->rbd_config_info, "nocrc"))
                return FOUND(ret, NEED_NONE, true, false, "rbd mapped with nocrc: no data CRC");
        return FOUND(ret, NEED_REQUIRED, true, false,
                     "rbd computes a CRC of the data before sending it (mapped without nocrc)");
}

static int detect_drbd(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        if (f->kind != DEVICE_KIND_DRBD)
                return 0;
        return FOUND(ret, NEED_REQUIRED, true, false,
                     "drbd may checksum the page (data-integrity-alg) and sends it to its peer "
                     "while writing it locally");
}

static int detect_plain(const DeviceFacts *f, unsigned kernel, Finding *ret) {
        static const DeviceKind plain[] = {
                DEVICE_KIND_SCSI, DEVICE_KIND_VIRTIO, DEVICE_KIND_NVME,
                DEVICE_KIND_NBD,  DEVICE_KIND_MMC,    DEVICE_KIND_RAM,
        };

        if (integrity_format_is_checksum(f->integrity_format))
                return 0;
        if (f->kind == DEVICE_KIND_NVME && f->nvme_transport && streq(f->nvme_transport, "tcp"))
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                if (f->kind == plain[i])
                        return FOUND(ret, NEED_NONE, false, false,
                                     "plain %s disk%s%s%s: the page is transferred once",
                                     device_kind_to_string(f->kind), f->driver ? " (driver " : "",
                                     f->driver ?: "", f->driver ? ")" : "");
        return 0;
}

static const detector_t detectors[] = {
        detect_integrity, detect_zram,         detect_md,  detect_dm,   detect_loop,
        detect_iscsi,     detect_nvme_fabrics, detect_rbd, detect_drbd, detect_plain,
};

typedef enum Mark { MARK_NEW, MARK_BUSY, MARK_DONE } Mark;

typedef struct Classifier {
        const DeviceTable *table;
        unsigned kernel;
        Classification *results;
        Mark *marks;
} Classifier;

static int classify_one(Classifier *c, size_t i);

/* The need each reason stands for, parallel to Classification.reasons. */
typedef struct ReasonNeeds {
        Need *items;
        size_t n;
} ReasonNeeds;

static void reason_needs_done(ReasonNeeds *n) {
        free(n->items);
}

static int add_reason(Classification *cl, ReasonNeeds *needs, Need need, char *reason) {
        if (!reason)
                return -ENOMEM;
        Need *m = realloc(needs->items, sizeof(Need) * (needs->n + 1));
        if (!m) {
                free(reason);
                return -ENOMEM;
        }
        needs->items = m;
        if (strv_extend(&cl->reasons, reason) < 0) {
                free(reason);
                return -ENOMEM;
        }
        free(reason);
        m[needs->n++] = need;
        return 0;
}

/* Stable insertion sort of the reasons by descending need. */
static int sort_reasons(Classification *cl, ReasonNeeds *needs) {
        for (size_t k = 1; k < needs->n; k++)
                for (size_t j = k; j > 0 && needs->items[j] > needs->items[j - 1]; j--) {
                        Need tn = needs->items[j];
                        needs->items[j] = needs->items[j - 1];
                        needs->items[j - 1] = tn;
                        char *ts = cl->reasons[j];
                        cl->reasons[j] = cl->reasons[j - 1];
                        cl->reasons[j - 1] = ts;
                }
        return 0;
}

/* Inherits the need of the device below (index j) into *cl, citing it. */
static int inherit(Classifier *c, Classification *cl, ReasonNeeds *needs, bool *explained, const char *how,
                   size_t j) {
        const DeviceFacts *below = &c->table->devices[j];
        int r = classify_one(c, j);
        if (r < 0)
                return r;
        const Classification *b = &c->results[j];
        if (b->in_force)
                *explained = true; /* the kernel stacks the flag from below */
        if (b->need == NEED_NONE)
                return 0;
        cl->need = MAX(cl->need, b->need);
        char *reason = strdup_printf("%s %s, which is %s: %s", how, below->name, need_to_string(b->need),
                                     b->reasons ? b->reasons[0] : "no reason");
        return reason ? add_reason(cl, needs, b->need, reason) : -ENOMEM;
}

static int classify_one(Classifier *c, size_t i) {
        const DeviceFacts *f = &c->table->devices[i];
        Classification *cl = &c->results[i];
        _cleanup_(reason_needs_done) ReasonNeeds needs = {};
        bool explained = false, breaks = false, matched = false;
        int r;

        if (c->marks[i] == MARK_DONE)
                return 0;
        if (c->marks[i] == MARK_BUSY)
                return 0; /* a loop in slaves/ or backing files: do not follow it again */
        c->marks[i] = MARK_BUSY;

        *cl = (Classification){ .need = NEED_NONE, .in_force = stable_writes_in_force(f, c->kernel) };
        cl->integrity_enforced =
                c->kernel >= KERNEL_VERSION(6, 11, 0) && integrity_format_is_checksum(f->integrity_format);

        for (size_t d = 0; d < ELEMENTSOF(detectors); d++) {
                Finding found = {};
                r = detectors[d](f, c->kernel, &found);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                matched = true;
                cl->need = MAX(cl->need, found.need);
                explained = explained || found.explains_flag;
                breaks = breaks || found.breaks_stack;
                r = add_reason(cl, &needs, found.need, found.reason);
                if (r < 0)
                        return r;
        }

        if (!breaks) {
                STRV_FOREACH (s, f->slaves) {
                        DeviceFacts *below = device_table_find(c->table, *s);
                        if (!below)
                                continue;
                        r = inherit(c, cl, &needs, &explained, "stacked on",
                                    (size_t) (below - c->table->devices));
                        if (r < 0)
                                return r;
                }
                if (f->kind == DEVICE_KIND_LOOP && f->loop_dio == 1 && f->loop_backing_devnum) {
                        DeviceFacts *below = device_table_find_devnum(c->table, f->loop_backing_devnum);
                        if (below && below != f) {
                                r = inherit(c, cl, &needs, &explained, "its backing file lives on",
                                            (size_t) (below - c->table->devices));
                                if (r < 0)
                                        return r;
                        }
                }
        }

        if (f->declared_stable_writes == 1 && !explained) {
                cl->need = MAX(cl->need, NEED_UNKNOWN);
                r = add_reason(
                        cl, &needs, NEED_UNKNOWN,
                        strdup_printf("the kernel declared stable writes at probe time and no detector "
                                      "explains why (kind %s%s%s): treated as required",
                                      device_kind_to_string(f->kind), f->driver ? ", driver " : "",
                                      f->driver ?: ""));
                if (r < 0)
                        return r;
        } else if (!matched) {
                r = add_reason(cl, &needs, NEED_NONE,
                               strdup_printf("no detector applies (kind %s) and the kernel did not declare "
                                             "stable writes: nothing known reads the page twice",
                                             device_kind_to_string(f->kind)));
                if (r < 0)
                        return r;
        }

        /* Strongest reason first: the one that decided the need. */
        r = sort_reasons(cl, &needs);
        if (r < 0)
                return r;

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
        *c = (Classification){};
}
