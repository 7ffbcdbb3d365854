/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The facts of one disk as device.c reads them from a sysfs root and the udev database,
 * then classified: the input is split at NUL bytes into the contents of the attributes
 * below (a missing piece leaves the attribute out), written to a throw-away tree that is
 * read with device_facts_read() and classified on a 6.1 and a 6.18 kernel. */

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "classify.h"
#include "device.h"
#include "fuzz.h"
#include "util.h"

static const char *const fields[] = {
        "udev/b7:9", /* the disk's udev database entry */
        "sys/block/loop9/dev",
        "sys/block/loop9/queue/stable_writes",
        "sys/block/loop9/integrity/format",
        "sys/block/loop9/integrity/write_generate",
        "sys/block/loop9/md/level",
        "sys/block/loop9/md/skip_copy",
        "sys/block/loop9/loop/backing_file",
        "sys/block/loop9/loop/dio",
        "sys/block/loop9/diskseq",
        "sys/block/loop9/dm/uuid",
        "sys/block/loop9/loop9p1/dev",
        "udev/b259:1", /* the partition's, when its dev says 259:1 */
};

static char *root;

static void setup(void) {
        char tmpl[] = "/dev/shm/fuzz-device-XXXXXX", tmpl2[] = "/tmp/fuzz-device-XXXXXX";

        root = mkdtemp(tmpl) ? strdup(tmpl) : mkdtemp(tmpl2) ? strdup(tmpl2) : NULL;
        if (!root)
                abort();
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                _cleanup_free_ char *p = path_join(root, fields[i]);
                if (!p)
                        abort();
                *strrchr(p, '/') = '\0';
                if (mkdir_p(p, 0755) < 0)
                        abort();
        }
        /* The partition directory needs "partition" to count as one. */
        _cleanup_free_ char *part = path_join(root, "sys/block/loop9/loop9p1/partition");
        int fd = open(part, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                abort();
        close(fd);
}

/* Always resolves: facts must not depend on the files of this machine. */
static int resolve(const char *backing_file, void *userdata, dev_t *ret) {
        *ret = 0;
        return backing_file[0] == '/' ? 0 : -ENOENT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *sys = NULL, *udev = NULL;
        DeviceTable t = {};
        size_t pos = 0;

        fuzz_check_escaping(data, size);

        if (size > 64 * 1024)
                return 0;
        if (!root)
                setup();
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                _cleanup_free_ char *p = path_join(root, fields[i]);
                const uint8_t *end = pos <= size ? memchr(data + pos, '\0', size - pos) : NULL;
                size_t len = end ? (size_t) (end - (data + pos)) : size - pos;

                if (!p)
                        abort();
                if (pos > size) {
                        (void) unlink(p);
                        continue;
                }
                int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0)
                        abort();
                if (len > 0 && write(fd, data + pos, len) != (ssize_t) len)
                        abort();
                close(fd);
                pos += len + 1;
        }

        sys = path_join(root, "sys");
        udev = path_join(root, "udev");
        if (!sys || !udev)
                abort();
        DeviceScanOptions o = { .sysfs_root = sys, .udev_data_dir = udev, .resolve_backing = resolve };
        t.devices = calloc(1, sizeof(DeviceFacts));
        if (!t.devices)
                abort();
        int r = device_facts_read(&o, "loop9", &t.devices[0]);
        FUZZ_ASSERT(r == 0 || r == -ENOENT || r == -ENOMEM);
        if (r == 0) {
                const DeviceFacts *f = &t.devices[0];
                t.n = 1;
                FUZZ_ASSERT(f->stable_writes >= ATTR_ABSENT && f->stable_writes <= 1);
                FUZZ_ASSERT(f->write_generate >= ATTR_ABSENT && f->write_generate <= 1);
                FUZZ_ASSERT(f->md_skip_copy >= ATTR_ABSENT && f->md_skip_copy <= 1);
                FUZZ_ASSERT(f->loop_dio >= ATTR_ABSENT && f->loop_dio <= 1);
                STRV_FOREACH (p, f->properties)
                        FUZZ_ASSERT(!strchr(*p, '\n'));
                (void) device_facts_property(f, "ID_WWN");
                /* Without "dev" the disk is hidden (it has a queue/): no number to find it by. */
                FUZZ_ASSERT(f->hidden ? f->devnum == 0 && !device_table_find_devnum(&t, 0)
                                      : device_table_find_devnum(&t, f->devnum) == f);

                for (unsigned k = 0; k < 2; k++) {
                        Classification c = {};
                        FUZZ_ASSERT(classify_table(&t,
                                                   k ? KERNEL_VERSION(6, 18, 0) : KERNEL_VERSION(6, 1, 0),
                                                   &c) == 0);
                        FUZZ_ASSERT(c.need >= 0 && c.need < _NEED_MAX);
                        FUZZ_ASSERT(strv_length(c.reasons) > 0);
                        /* A flag the kernel declared is never "none" without its cause. */
                        FUZZ_ASSERT(f->declared_stable_writes != 1 || c.need != NEED_NONE || c.flag_cause);
                        classification_done(&c);
                }
        }
        device_table_done(&t);
        return 0;
}
