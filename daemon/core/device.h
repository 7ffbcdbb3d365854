/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The facts of every whole disk under a sysfs root, as the kernel shows them. Missing
 * attributes are normal (kernels differ) and read as "absent"; unreadable ones are
 * recorded in DeviceFacts.errors, never fatal. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "dm-table.h"
#include "macro.h"

typedef enum DeviceKind {
        DEVICE_KIND_OTHER,
        DEVICE_KIND_SCSI, /* sd */
        DEVICE_KIND_NVME,
        DEVICE_KIND_VIRTIO, /* virtio_blk */
        DEVICE_KIND_LOOP,
        DEVICE_KIND_ZRAM,
        DEVICE_KIND_MD,
        DEVICE_KIND_DM,
        DEVICE_KIND_RBD,
        DEVICE_KIND_DRBD,
        DEVICE_KIND_NBD,
        DEVICE_KIND_MMC,
        DEVICE_KIND_RAM, /* brd */
        _DEVICE_KIND_MAX,
} DeviceKind;

/* A tri-state attribute: absent (-1), 0 or 1. */
#define ATTR_ABSENT (-1)

typedef struct Partition {
        char *name;
        dev_t devnum;
} Partition;

typedef struct DeviceFacts {
        char *name;       /* kernel name of the disk, e.g. "sda" */
        dev_t devnum;     /* MAJ:MIN of the disk; 0 for a hidden disk */
        bool hidden;      /* a hidden disk (the path of an NVMe multipath head): no device
                           * number, no device node, nothing mounts it */
        uint64_t diskseq; /* 0 when the kernel has none */
        DeviceKind kind;
        char *driver; /* basename of device/driver, NULL if none */

        int stable_writes;          /* queue/stable_writes: ATTR_ABSENT, 0, 1 */
        int declared_stable_writes; /* what the kernel set at probe time, before anyone wrote
                                     * the flag: the first sight in the disk's history, else
                                     * stable_writes (filled by the caller, see history.h) */
        bool declared_at_add;       /* declared_stable_writes was recorded at the disk's add:
                                     * the kernel's own value; false: seen later (another
                                     * program may have changed it before) or no history */
        int moved_from;             /* the flag the history recorded last, when it reads otherwise
                                     * now (moved without the project); ATTR_ABSENT when not */

        /* The disk's flag history (history.h), NULL when none: what each consumer took at its
         * moment (consumers.h). */
        struct FlagHistory *history;

        char *integrity_format; /* integrity/format ("none", "T10-DIF-TYPE1-CRC"…), NULL if absent */
        int write_generate;     /* integrity/write_generate */
        int read_verify;        /* integrity/read_verify */
        int integrity_capable;  /* integrity/device_is_integrity_capable */

        char *md_level;   /* md/level ("raid5"…), NULL if not md */
        int md_skip_copy; /* md/skip_copy */

        char *dm_name, *dm_uuid;     /* dm/name, dm/uuid */
        DmTable dm_table;            /* dm: the targets of the live table, when known */
        const char *dm_table_source; /* dm: "kernel" (DM_TABLE_STATUS) or "udev" (the udev
                                      * database), NULL when the table is not known */
        char *dm_table_missing;      /* dm: why the table is not known, or NULL */

        char *loop_backing_file;      /* loop/backing_file */
        int loop_dio;                 /* loop/dio */
        dev_t loop_backing_devnum;    /* device holding the backing file, 0 if unknown (only
                                       * looked for with dio=1: loop-backing.h) */
        bool loop_backing_unresolved; /* dio=1 and that device could not be found (the reason
                                       * is in errors): what is below is not known */

        char *iscsi_data_digest; /* data_digest of the iSCSI connection ("CRC32C", "None") */
        char *scsi_host_driver;  /* iSCSI: proc_name of the SCSI host of that session
                                  * ("iscsi_tcp", or an offload HBA: "bnx2i", "cxgb4i"…) */
        char *nvme_transport;    /* device/transport ("tcp", "rdma", "pcie"…) */
        char **nvme_paths;       /* NVMe multipath head nvmeXnY: its path disks nvmeXcZnY */
        bool mmc_spi;            /* MMC/SD card whose host is driven over SPI (mmc_spi) */
        char *rbd_config_info;   /* device/config_info */

        char **slaves;  /* disk names below this one (partitions mapped to their disk) */
        char **holders; /* disk names above this one */
        Partition *partitions;
        size_t n_partitions;

        char **properties; /* udev KEY=value of the disk and its partitions, if known */
        char **errors;     /* "attribute: reason" for attributes that exist but can't be read */
} DeviceFacts;

typedef struct DeviceTable {
        DeviceFacts *devices;
        size_t n;
} DeviceTable;

/* Resolves the filesystem device of a loop backing file. Returns 0 and *ret, or -errno. */
typedef int (*backing_resolver_t)(const char *backing_file, void *userdata, dev_t *ret);

/* Reads the device-mapper table of the dm device devnum. Returns 0 and *ret, or -errno. */
typedef int (*dm_table_reader_t)(dev_t devnum, void *userdata, DmTable *ret);

typedef struct DeviceScanOptions {
        const char *sysfs_root;             /* default "/sys" */
        const char *udev_data_dir;          /* default "/run/udev/data"; "" disables */
        backing_resolver_t resolve_backing; /* for a dio loop device without the udev rule's
                                             * record; default: stat(2), bounded
                                             * (loop-backing.h) */
        void *resolve_userdata;
        dm_table_reader_t read_dm_table; /* default: the kernel's table (dm_table_reader_kernel)
                                          * when sysfs_root is "/sys"; none for another root,
                                          * whose dm devices are not the running kernel's.
                                          * Without it, or when it fails (no CAP_SYS_ADMIN),
                                          * the table comes from the udev database. */
        void *read_dm_table_userdata;
} DeviceScanOptions;

/* Reads the facts of every whole disk under options->sysfs_root/block into *ret.
 * Returns 0 or -errno (only when the block directory itself cannot be listed). */
int device_table_scan(const DeviceScanOptions *options, DeviceTable *ret);

/* Reads the facts of the disks named (kernel names of disks, not partitions) and of everything
 * their classification looks at: the disks in their slaves/ and the paths of an NVMe
 * multipath head, recursively, and the disk holding
 * the backing file of a loop device with dio=1. What the one-shot applier needs, without reading
 * every disk of the machine. Names that are not disks are left out. Returns 0 or -errno. */
int device_table_scan_for(const DeviceScanOptions *options, char *const *names, DeviceTable *ret);

/* The whole disk (not partition) whose device number, or whose partition's, is devnum: its
 * kernel name in *ret. Returns 0, -ENOENT when none, or -errno. */
int device_disk_of_devnum(const char *sysfs_root, dev_t devnum, char **ret);

/* Reads the facts of one disk by kernel name. Returns 0, -ENOENT when no such disk. */
int device_facts_read(const DeviceScanOptions *options, const char *name, DeviceFacts *ret);

void device_facts_done(DeviceFacts *f);
void device_table_done(DeviceTable *t);

/* The disk of that name or NULL. */
DeviceFacts *device_table_find(const DeviceTable *t, const char *name);

/* The disk with that diskseq (not 0), or NULL. */
DeviceFacts *device_table_find_diskseq(const DeviceTable *t, uint64_t diskseq);

/* The disk whose devnum, or one of whose partitions' devnum, is devnum, or NULL. */
DeviceFacts *device_table_find_devnum(const DeviceTable *t, dev_t devnum);

/* Maps a kernel name of a disk or partition to the disk's name under sysfs_root.
 * Returns 0 with a new string, -ENOENT when no such block device. */
int device_disk_of(const char *sysfs_root, const char *name, char **ret);

/* The value of udev property key of the disk itself, or NULL. */
const char *device_facts_property(const DeviceFacts *f, const char *key);

const char *device_kind_to_string(DeviceKind k);

/* True when the integrity format is a real checksum (T10-DIF-*, EXT-DIF-*). */
bool integrity_format_is_checksum(const char *format);
