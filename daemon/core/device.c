/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The facts of one disk under a sysfs root: its attributes read relative to its directory,
 * its kind, stack, partitions and udev properties, a dm device's table, the device under a dio
 * loop's backing file; and the disk of a kernel name or of a device number. */
#include <assert.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "device-transport.h"
#include "device.h"
#include "history.h"
#include "loop-backing.h"
#include "sysfs.h"
#include "util.h"

static const char *const device_kind_table[_DEVICE_KIND_MAX] = {
        [DEVICE_KIND_OTHER] = "other",   [DEVICE_KIND_SCSI] = "scsi", [DEVICE_KIND_NVME] = "nvme",
        [DEVICE_KIND_VIRTIO] = "virtio", [DEVICE_KIND_LOOP] = "loop", [DEVICE_KIND_ZRAM] = "zram",
        [DEVICE_KIND_MD] = "md",         [DEVICE_KIND_DM] = "dm",     [DEVICE_KIND_RBD] = "rbd",
        [DEVICE_KIND_DRBD] = "drbd",     [DEVICE_KIND_NBD] = "nbd",   [DEVICE_KIND_MMC] = "mmc",
        [DEVICE_KIND_RAM] = "ram",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(device_kind, DeviceKind);

bool integrity_format_is_checksum(const char *format) {
        return format && (startswith(format, "T10-DIF-") || startswith(format, "EXT-DIF-"));
}

static int add_error(DeviceFacts *f, const char *attr, int error) {
        return strv_extendf(&f->errors, "%s: %s", attr, strerror(-error));
}

/* The directory of the disk being read: its descriptor (attributes are opened relative to it)
 * and its listing (NULL when it could not be listed). */
typedef struct DiskDir {
        int fd;
        char **entries;
} DiskDir;

/* Whether attr ("md/level") lies in a directory that entries (the disk's directory listing,
 * NULL when unknown) shows does not exist: then it is absent, with no need to open it. */
static bool in_absent_dir(char *const *entries, const char *attr) {
        const char *slash = strchr(attr, '/');
        if (!entries || !slash)
                return false;
        STRV_FOREACH (e, entries)
                if (strlen(*e) == (size_t) (slash - attr) && strneq(*e, attr, slash - attr))
                        return false;
        return true;
}

/* Reads an optional string attribute of the disk into *ret (NULL when absent). */
static int read_opt_string(const DeviceScanOptions *o, DeviceFacts *f, const DiskDir *dd, const char *attr,
                           char **ret) {
        if (in_absent_dir(dd->entries, attr)) {
                *ret = NULL;
                return 0;
        }
        int r = sysfs_read_string_at(dd->fd, attr, ret);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret = NULL;
                if (r != -ENOENT && r != -ENOTDIR)
                        return add_error(f, attr, r);
        }
        return 0;
}

/* Reads an optional 0/1 attribute into *ret (ATTR_ABSENT when absent or unparsable). */
static int read_opt_bool(const DeviceScanOptions *o, DeviceFacts *f, const DiskDir *dd, const char *attr,
                         int *ret) {
        _cleanup_free_ char *s = NULL;
        int r = read_opt_string(o, f, dd, attr, &s);
        if (r < 0)
                return r;
        *ret = ATTR_ABSENT;
        if (!s)
                return 0;
        r = sysfs_parse_bool01(s);
        if (r < 0)
                return strv_extendf(&f->errors, "%s: unparsable value \"%s\"", attr, s);
        *ret = r;
        return 0;
}

static DeviceKind kind_from_facts(const DeviceFacts *f, bool has_md, bool has_dm, bool has_loop) {
        static const struct {
                const char *prefix;
                DeviceKind kind;
        } prefixes[] = {
                { "zram", DEVICE_KIND_ZRAM },  { "loop", DEVICE_KIND_LOOP }, { "nvme", DEVICE_KIND_NVME },
                { "rbd", DEVICE_KIND_RBD },    { "drbd", DEVICE_KIND_DRBD }, { "nbd", DEVICE_KIND_NBD },
                { "mmcblk", DEVICE_KIND_MMC }, { "ram", DEVICE_KIND_RAM },   { "md", DEVICE_KIND_MD },
                { "dm-", DEVICE_KIND_DM },
        };

        if (has_md)
                return DEVICE_KIND_MD;
        if (has_dm)
                return DEVICE_KIND_DM;
        if (has_loop)
                return DEVICE_KIND_LOOP;
        if (f->driver) {
                if (streq(f->driver, "sd"))
                        return DEVICE_KIND_SCSI;
                if (streq(f->driver, "virtio_blk"))
                        return DEVICE_KIND_VIRTIO;
        }
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (startswith(f->name, prefixes[i].prefix))
                        return prefixes[i].kind;
        if (startswith(f->name, "sd"))
                return DEVICE_KIND_SCSI;
        if (startswith(f->name, "vd"))
                return DEVICE_KIND_VIRTIO;
        return DEVICE_KIND_OTHER;
}

static bool dir_exists(int dirfd, const char *path) {
        struct stat st;
        return fstatat(dirfd, path, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

/* Whether block/NAME (given as that path) is a disk: it has a device number, or it is a
 * hidden disk, which has a queue but no device number (device_add_disk() gives a
 * GENHD_FL_HIDDEN disk no devt). */
static bool disk_exists(const char *root, const char *block_name) {
        _cleanup_free_ char *dir = path_join(root, block_name);
        _cleanup_close_ int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK) : -EBADF;
        return fd >= 0 && (faccessat(fd, "dev", F_OK, 0) == 0 || dir_exists(fd, "queue"));
}

int device_disk_of(const char *sysfs_root, const char *name, char **ret) {
        _cleanup_strv_free_ char **disks = NULL;
        _cleanup_free_ char *p = NULL;
        int r;

        if (!device_name_is_valid(name))
                return -EINVAL;
        p = strdup_printf("block/%s", name);
        if (!p)
                return -ENOMEM;
        if (disk_exists(sysfs_root, p)) {
                char *s = strdup(name);
                if (!s)
                        return -ENOMEM;
                *ret = s;
                return 0;
        }
        r = sysfs_list_dir(sysfs_root, "block", &disks);
        if (r < 0)
                return r;
        STRV_FOREACH (d, disks) {
                _cleanup_free_ char *part = strdup_printf("block/%s/%s/partition", *d, name);
                _cleanup_free_ char *fp = part ? path_join(sysfs_root, part) : NULL;
                if (!fp)
                        return -ENOMEM;
                if (access(fp, F_OK) == 0) {
                        char *s = strdup(*d);
                        if (!s)
                                return -ENOMEM;
                        *ret = s;
                        return 0;
                }
        }
        return -ENOENT;
}

/* Lists slaves/ or holders/ and maps partitions to their disks. */
static int read_stack(const DeviceScanOptions *o, DeviceFacts *f, const DiskDir *dd, const char *dir,
                      char ***ret) {
        _cleanup_strv_free_ char **names = NULL, **disks = NULL;
        int r;

        r = sysfs_list_dir_at(dd->fd, dir, &names);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return add_error(f, dir, r);
        STRV_FOREACH (n, names) {
                _cleanup_free_ char *disk = NULL;
                r = device_disk_of(o->sysfs_root, *n, &disk);
                if (r == -ENOMEM)
                        return r;
                const char *use = r < 0 ? *n : disk;
                if (!strv_contains(disks, use) && strv_extend(&disks, use) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(disks);
        return 0;
}

/* Appends the partitions of disk (entries of its directory, open as dirfd and listed in
 * entries, with a "partition" file and a readable "dev") to *partitions. Returns 0 or -ENOMEM. */
static int list_partitions_in(int dirfd, const char *disk, char *const *entries, Partition **partitions,
                              size_t *n) {
        STRV_FOREACH (e, entries) {
                /* The kernel names a partition after its disk ("sda1", "nvme0n1p1"): the other
                 * entries (attributes, queue/, holders/...) need no look. */
                if (!startswith(*e, disk))
                        continue;
                _cleanup_free_ char *pp = strdup_printf("%s/partition", *e);
                _cleanup_free_ char *dp = strdup_printf("%s/dev", *e);
                _cleanup_free_ char *dev = NULL;
                dev_t devnum;

                if (!pp || !dp)
                        return -ENOMEM;
                if (faccessat(dirfd, pp, F_OK, 0) < 0)
                        continue;
                if (sysfs_read_string_at(dirfd, dp, &dev) < 0 || parse_devnum(dev, &devnum) < 0)
                        continue;
                Partition *m = realloc(*partitions, sizeof(Partition) * (*n + 1));
                if (!m)
                        return -ENOMEM;
                *partitions = m;
                m[*n].name = strdup(*e);
                if (!m[*n].name)
                        return -ENOMEM;
                m[(*n)++].devnum = devnum;
        }
        return 0;
}

/* The same for disk under sysfs_root. Returns 0, -ENOMEM, or -errno when block/DISK cannot be
 * listed. */
static int list_partitions(const char *sysfs_root, const char *disk, Partition **partitions, size_t *n) {
        _cleanup_strv_free_ char **entries = NULL;
        _cleanup_free_ char *full = strdup_printf("%s/block/%s", sysfs_root, disk);
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!full)
                return -ENOMEM;
        fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        r = sysfs_list_dir_at(fd, ".", &entries);
        if (r < 0)
                return r;
        return list_partitions_in(fd, disk, entries, partitions, n);
}

static int read_partitions(DeviceFacts *f, const DiskDir *dd) {
        /* Without a listing of the disk's directory its partitions cannot be known. */
        int r = dd->entries
                        ? list_partitions_in(dd->fd, f->name, dd->entries, &f->partitions, &f->n_partitions)
                        : -EIO;
        if (r < 0 && r != -ENOMEM)
                return add_error(f, "partitions", r);
        return r;
}

/* Reads "E:KEY=value" lines of the udev database entry of devnum into *l. */
static int read_udev_properties(const DeviceScanOptions *o, dev_t devnum, char ***l) {
        _cleanup_free_ char *p = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char line[4096];

        if (isempty(o->udev_data_dir) || devnum == 0)
                return 0;
        p = strdup_printf("%s/b%u:%u", o->udev_data_dir, major(devnum), minor(devnum));
        if (!p)
                return -ENOMEM;
        f = fopen(p, "re");
        if (!f)
                return 0; /* not known to udev: normal without udev */
        for (bool tail = false; fgets(line, sizeof line, f);) {
                /* A line longer than the buffer comes in pieces: skip it whole, so that the
                 * tail of a long value is never taken for a property of its own. */
                bool piece = !strchr(line, '\n') && !feof(f), skip = tail || piece;
                tail = piece;
                if (!skip && startswith(line, "E:") && !strv_contains(*l, strstrip_trailing(line + 2)) &&
                    strv_extend(l, line + 2) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The table of a dm device: from the kernel when the reader can, else from the udev database
 * (the udev rule's import); when neither, dm_table_missing says why. */
static int read_dm_table(const DeviceScanOptions *o, DeviceFacts *f) {
        _cleanup_free_ char *kernel = NULL;
        const char *udev;
        int r;

        if (o->read_dm_table) {
                r = o->read_dm_table(f->devnum, o->read_dm_table_userdata, &f->dm_table);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0) {
                        f->dm_table_source = "kernel";
                        return 0;
                }
                kernel = strdup_printf("the kernel refused DM_TABLE_STATUS: %s%s", strerror(-r),
                                       r == -EPERM || r == -EACCES ? " (it needs CAP_SYS_ADMIN)" : "");
        } else
                kernel = strdup_printf("not read from the kernel (sysfs root %s)", o->sysfs_root);
        if (!kernel)
                return -ENOMEM;

        r = dm_table_from_properties(f->properties, &f->dm_table);
        if (r == -ENOMEM)
                return r;
        if (r >= 0) {
                f->dm_table_source = "udev";
                return 0;
        }
        if (isempty(o->udev_data_dir))
                udev = "the udev database is not read";
        else if (r == -ENODATA)
                udev = "the udev database has no " DM_TABLE_PROPERTY " for it (the udev rule's "
                       "\"stablepagesd udev-facts\" did not run for it)";
        else
                udev = "its " DM_TABLE_PROPERTY " and " DM_TARGETS_PROPERTY
                       " in the udev database are malformed";
        f->dm_table_missing = strdup_printf("%s; %s", kernel, udev);
        return f->dm_table_missing ? 0 : -ENOMEM;
}

/* Fills in the defaults of the options that are not set. */
static void scan_options_defaults(DeviceScanOptions *o) {
        if (!o->sysfs_root)
                o->sysfs_root = "/sys";
        if (!o->udev_data_dir)
                o->udev_data_dir = "/run/udev/data";
        if (!o->read_dm_table && streq(o->sysfs_root, "/sys"))
                o->read_dm_table = dm_table_reader_kernel;
}

/* The disk's device number (a hidden disk has none), diskseq and driver. Returns 0, -ENOENT
 * when the directory is no disk's (any more), or -ENOMEM. */
static int read_identity(const DeviceScanOptions *o, DeviceFacts *f, const DiskDir *dd) {
        _cleanup_free_ char *dev = NULL, *seq = NULL, *link = NULL;
        int r;

        r = read_opt_string(o, f, dd, "dev", &dev);
        if (r < 0)
                return r;
        if (!dev) /* a hidden disk has a queue but no device number (see disk_exists()); looked at
                   * now, not in the listing: a disk being removed loses dev and queue */
                f->hidden = dir_exists(dd->fd, "queue");
        /* 0:0 is no device number: only hidden disks have none. */
        if (!f->hidden && (!dev || parse_devnum(dev, &f->devnum) < 0 || f->devnum == 0))
                return -ENOENT;
        r = read_opt_string(o, f, dd, "diskseq", &seq);
        if (r < 0)
                return r;
        if (seq)
                f->diskseq = strtoull(seq, NULL, 10);

        link = strdup_printf("block/%s/device/driver", f->name);
        if (!link)
                return -ENOMEM;
        if (!dd->entries || strv_contains(dd->entries, "device"))
                (void) sysfs_read_link_basename(o->sysfs_root, link, &f->driver);
        return 0;
}

/* The attributes any disk may have: the flag, integrity, md, dm, loop, transport. */
static int read_attributes(const DeviceScanOptions *o, DeviceFacts *f, const DiskDir *dd) {
        int r;

        if ((r = read_opt_bool(o, f, dd, "queue/stable_writes", &f->stable_writes)) < 0 ||
            (r = read_opt_string(o, f, dd, "integrity/format", &f->integrity_format)) < 0 ||
            (r = read_opt_bool(o, f, dd, "integrity/write_generate", &f->write_generate)) < 0 ||
            (r = read_opt_bool(o, f, dd, "integrity/read_verify", &f->read_verify)) < 0 ||
            (r = read_opt_bool(o, f, dd, "integrity/device_is_integrity_capable", &f->integrity_capable)) <
                    0 ||
            (r = read_opt_string(o, f, dd, "md/level", &f->md_level)) < 0 ||
            (r = read_opt_bool(o, f, dd, "md/skip_copy", &f->md_skip_copy)) < 0 ||
            (r = read_opt_string(o, f, dd, "dm/name", &f->dm_name)) < 0 ||
            (r = read_opt_string(o, f, dd, "dm/uuid", &f->dm_uuid)) < 0 ||
            (r = read_opt_string(o, f, dd, "loop/backing_file", &f->loop_backing_file)) < 0 ||
            (r = read_opt_bool(o, f, dd, "loop/dio", &f->loop_dio)) < 0 ||
            (r = read_opt_string(o, f, dd, "device/transport", &f->nvme_transport)) < 0)
                return r;
        return 0;
}

/* Whether the disk's directory has the subdirectory name, from the listing when there is one. */
static bool disk_has_dir(const DiskDir *dd, const char *name) {
        return dd->entries ? strv_contains(dd->entries, name) : dir_exists(dd->fd, name);
}

/* What only some kinds of disk have: rbd's config, an iSCSI digest, NVMe paths, mmc_spi. */
static int read_kind_facts(const DeviceScanOptions *o, DeviceFacts *f, const DiskDir *dd) {
        int r;

        switch (f->kind) {
        case DEVICE_KIND_RBD:
                return read_opt_string(o, f, dd, "device/config_info", &f->rbd_config_info);
        case DEVICE_KIND_SCSI:
                return device_read_iscsi_digest(o->sysfs_root, f->name, &f->iscsi_data_digest,
                                                &f->scsi_host_driver);
        case DEVICE_KIND_NVME:
                r = device_read_nvme_paths(o->sysfs_root, f->name, &f->nvme_paths);
                return r < 0 && r != -ENOMEM ? add_error(f, "nvme paths", r) : r;
        case DEVICE_KIND_MMC:
                r = device_ancestor_has_driver(o->sysfs_root, f->name, "mmc_spi");
                if (r < 0)
                        return r;
                f->mmc_spi = r > 0;
                return 0;
        default:
                return 0;
        }
}

/* The device of the filesystem holding the backing file of a loop device in direct I/O mode
 * (the only one that stacks on it), as loop-backing.h says: the udev rule's record, else the
 * resolver; an error in f->errors when it cannot be resolved. Returns 0 or -ENOMEM. */
static int resolve_loop_backing(const DeviceScanOptions *o, DeviceFacts *f) {
        backing_resolver_t resolve = o->resolve_backing ?: loop_backing_stat;
        const char *recorded = NULL;
        int r;

        if (!f->loop_backing_file || f->loop_dio != 1)
                return 0;
        r = loop_backing_from_record(f->properties, f->diskseq, &f->loop_backing_devnum, &recorded);
        if (r == 0) /* the kernel appends " (deleted)" when the backing file was unlinked */
                r = resolve(f->loop_backing_file, o->resolve_userdata, &f->loop_backing_devnum);
        if (r == -ENOMEM)
                return r;
        if (r >= 0)
                return 0;
        f->loop_backing_devnum = 0;
        f->loop_backing_unresolved = true;
        if (r == -ETIMEDOUT && !recorded)
                r = strv_extendf(&f->errors,
                                 "loop/backing_file: cannot resolve \"%s\": its filesystem did not answer "
                                 "within %llu ms (hung?)",
                                 f->loop_backing_file,
                                 (unsigned long long) (LOOP_BACKING_TIMEOUT_USEC / USEC_PER_MSEC));
        else
                r = strv_extendf(&f->errors, "loop/backing_file: cannot resolve \"%s\": %s",
                                 f->loop_backing_file, recorded ?: strerror(-r));
        return r < 0 ? -ENOMEM : 0;
}

/* The udev properties of the disk, then (from the disk's own) a dm device's table, then those
 * of its partitions. */
static int read_udev_facts(const DeviceScanOptions *o, DeviceFacts *f) {
        int r;

        r = read_udev_properties(o, f->devnum, &f->properties);
        if (r < 0)
                return r;
        /* Only the disk's own properties are read yet: the table's are the disk's. */
        if (f->kind == DEVICE_KIND_DM && (r = read_dm_table(o, f)) < 0)
                return r;
        for (size_t i = 0; i < f->n_partitions; i++)
                if ((r = read_udev_properties(o, f->partitions[i].devnum, &f->properties)) < 0)
                        return r;
        return 0;
}

int device_facts_read(const DeviceScanOptions *options, const char *name, DeviceFacts *ret) {
        _cleanup_(device_facts_done) DeviceFacts f = {
                .stable_writes = ATTR_ABSENT,
                .write_generate = ATTR_ABSENT,
                .read_verify = ATTR_ABSENT,
                .integrity_capable = ATTR_ABSENT,
                .md_skip_copy = ATTR_ABSENT,
                .loop_dio = ATTR_ABSENT,
        };
        _cleanup_free_ char *dir = NULL;
        _cleanup_strv_free_ char **entries = NULL;
        _cleanup_close_ int fd = -EBADF;
        DeviceScanOptions o = *options;
        int r;

        assert(options);
        assert(ret);

        scan_options_defaults(&o);
        if (!device_name_is_valid(name))
                return -EINVAL;

        f.name = strdup(name);
        if (!f.name)
                return -ENOMEM;

        /* The disk's directory, open once (its attributes are opened relative to it, without
         * walking /sys/block/NAME again each time) and listed once: what is not in it (md/, dm/,
         * loop/, device/...) is absent without opening it, and partitions are among its
         * entries. */
        dir = strdup_printf("%s/block/%s", o.sysfs_root, name);
        if (!dir)
                return -ENOMEM;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return errno == ENOTDIR ? -ENOENT : -errno; /* not a disk's directory */
        r = sysfs_list_dir_at(fd, ".", &entries);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                entries = strv_free(entries); /* unknown: read every attribute */
        const DiskDir dd = { .fd = fd, .entries = entries };

        if ((r = read_identity(&o, &f, &dd)) < 0 || (r = read_attributes(&o, &f, &dd)) < 0)
                return r;
        f.kind = kind_from_facts(&f, disk_has_dir(&dd, "md"), disk_has_dir(&dd, "dm"),
                                 disk_has_dir(&dd, "loop"));
        if ((r = read_kind_facts(&o, &f, &dd)) < 0)
                return r;

        f.declared_stable_writes = f.stable_writes;
        f.moved_from = ATTR_ABSENT;

        if ((r = read_stack(&o, &f, &dd, "slaves", &f.slaves)) < 0 ||
            (r = read_stack(&o, &f, &dd, "holders", &f.holders)) < 0 || (r = read_partitions(&f, &dd)) < 0 ||
            (r = read_udev_facts(&o, &f)) < 0 || (r = resolve_loop_backing(&o, &f)) < 0)
                return r;

        *ret = f;
        f = (DeviceFacts){};
        return 0;
}

void device_facts_done(DeviceFacts *f) {
        if (f->history) {
                history_done(f->history);
                free(f->history);
        }
        free(f->name);
        free(f->driver);
        free(f->integrity_format);
        free(f->md_level);
        free(f->dm_name);
        free(f->dm_uuid);
        free(f->loop_backing_file);
        dm_table_done(&f->dm_table);
        free(f->dm_table_missing);
        free(f->iscsi_data_digest);
        free(f->scsi_host_driver);
        free(f->nvme_transport);
        strv_free(f->nvme_paths);
        free(f->rbd_config_info);
        strv_free(f->slaves);
        strv_free(f->holders);
        for (size_t i = 0; i < f->n_partitions; i++)
                free(f->partitions[i].name);
        free(f->partitions);
        strv_free(f->properties);
        strv_free(f->errors);
        *f = (DeviceFacts){};
}

/* Whether disk name, or one of its partitions, has device number devnum. */
static int disk_has_devnum(const char *sysfs_root, const char *name, dev_t devnum) {
        _cleanup_free_ char *dp = strdup_printf("block/%s/dev", name), *dev = NULL;
        Partition *partitions = NULL;
        size_t n = 0;
        bool found = false;
        dev_t d;
        int r;

        if (!dp)
                return -ENOMEM;
        if (sysfs_read_string(sysfs_root, dp, &dev) < 0 || parse_devnum(dev, &d) < 0)
                return 0;
        if (d == devnum)
                return 1;
        r = list_partitions(sysfs_root, name, &partitions, &n);
        for (size_t i = 0; i < n; i++) {
                found = found || partitions[i].devnum == devnum;
                free(partitions[i].name);
        }
        free(partitions);
        if (r == -ENOMEM)
                return r;
        return found;
}

int device_disk_of_devnum(const char *sysfs_root, dev_t devnum, char **ret) {
        _cleanup_strv_free_ char **disks = NULL;
        int r;

        r = sysfs_list_dir(sysfs_root, "block", &disks);
        if (r < 0)
                return r;
        STRV_FOREACH (d, disks) {
                r = disk_has_devnum(sysfs_root, *d, devnum);
                if (r < 0)
                        return r;
                if (r > 0) {
                        *ret = strdup(*d);
                        return *ret ? 0 : -ENOMEM;
                }
        }
        return -ENOENT;
}

const char *device_facts_property(const DeviceFacts *f, const char *key) {
        return strv_find_value(f->properties, key);
}
