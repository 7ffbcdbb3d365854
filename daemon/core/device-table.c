/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The DeviceTable: the facts of every disk, or of the named ones and what they stack on, and
 * the look-ups of a disk in it. */
#include <assert.h>

#include "device.h"
#include "sysfs.h"
#include "util.h"

void device_table_done(DeviceTable *t) {
        for (size_t i = 0; i < t->n; i++)
                device_facts_done(&t->devices[i]);
        free(t->devices);
        *t = (DeviceTable){};
}

int device_table_scan(const DeviceScanOptions *options, DeviceTable *ret) {
        _cleanup_strv_free_ char **names = NULL;
        DeviceTable t = {};
        int r;

        r = sysfs_list_dir(options->sysfs_root ?: "/sys", "block", &names);
        if (r < 0)
                return r;
        t.devices = calloc(strv_length(names) + 1, sizeof(DeviceFacts));
        if (!t.devices)
                return -ENOMEM;
        STRV_FOREACH (n, names) {
                r = device_facts_read(options, *n, &t.devices[t.n]);
                if (r == -ENOMEM) {
                        device_table_done(&t);
                        return r;
                }
                if (r < 0)
                        continue; /* vanished between listing and reading, or not a disk */
                t.n++;
        }
        *ret = t;
        return 0;
}

/* Appends f to t (taking it over, zeroing it). Returns 0 or -ENOMEM (then f is untouched). */
static int table_append(DeviceTable *t, DeviceFacts *f) {
        DeviceFacts *m = realloc(t->devices, sizeof(DeviceFacts) * (t->n + 1));
        if (!m)
                return -ENOMEM;
        t->devices = m;
        t->devices[t->n++] = *f;
        *f = (DeviceFacts){};
        return 0;
}

/* Queues the disks that added stacks on: its slaves, its NVMe paths, and the disk holding
 * the backing file of a loop device in direct I/O mode. Returns 0 or -ENOMEM. */
static int queue_below(const DeviceScanOptions *options, const DeviceFacts *added, char ***queue) {
        _cleanup_free_ char *below = NULL;
        int r;

        if (strv_extend_strv(queue, added->slaves) < 0 || strv_extend_strv(queue, added->nvme_paths) < 0)
                return -ENOMEM;
        if (added->kind != DEVICE_KIND_LOOP || added->loop_dio != 1 || !added->loop_backing_devnum)
                return 0;
        r = device_disk_of_devnum(options->sysfs_root ?: "/sys", added->loop_backing_devnum, &below);
        if (r == -ENOMEM)
                return r;
        if (r >= 0 && strv_extend(queue, below) < 0)
                return -ENOMEM;
        return 0;
}

int device_table_scan_for(const DeviceScanOptions *options, char *const *names, DeviceTable *ret) {
        _cleanup_(device_table_done) DeviceTable t = {};
        _cleanup_strv_free_ char **queue = NULL;
        int r;

        assert(options);
        assert(ret);

        if (strv_extend_strv(&queue, names) < 0)
                return -ENOMEM;
        for (size_t i = 0; queue && queue[i]; i++) {
                _cleanup_(device_facts_done) DeviceFacts f = {};

                if (device_table_find(&t, queue[i]))
                        continue;
                r = device_facts_read(options, queue[i], &f);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue; /* not a disk, or vanished */
                if (table_append(&t, &f) < 0 || queue_below(options, &t.devices[t.n - 1], &queue) < 0)
                        return -ENOMEM;
        }
        *ret = t;
        t = (DeviceTable){};
        return 0;
}

DeviceFacts *device_table_find(const DeviceTable *t, const char *name) {
        for (size_t i = 0; i < t->n; i++)
                if (streq(t->devices[i].name, name))
                        return &t->devices[i];
        return NULL;
}

DeviceFacts *device_table_find_diskseq(const DeviceTable *t, uint64_t diskseq) {
        for (size_t i = 0; diskseq != 0 && i < t->n; i++)
                if (t->devices[i].diskseq == diskseq)
                        return &t->devices[i];
        return NULL;
}

DeviceFacts *device_table_find_devnum(const DeviceTable *t, dev_t devnum) {
        if (devnum == 0)
                return NULL; /* hidden disks have none */
        for (size_t i = 0; i < t->n; i++) {
                if (t->devices[i].devnum == devnum)
                        return &t->devices[i];
                for (size_t j = 0; j < t->devices[i].n_partitions; j++)
                        if (t->devices[i].partitions[j].devnum == devnum)
                                return &t->devices[i];
        }
        return NULL;
}
