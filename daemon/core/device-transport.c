/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* How a disk is attached, where its attributes do not say it: the iSCSI connection's data
 * digest and its host's driver, the paths of an NVMe multipath head, the driver of an ancestor
 * (an MMC card's SPI host). */
#include <limits.h>

#include "device-transport.h"
#include "sysfs.h"
#include "util.h"

/* Resolves the disk's device directory (block/NAME/device) into resolved and the sysfs root
 * into root (both PATH_MAX): walking up resolved, stay below root. Returns 1, 0 when the disk
 * has no device, or -ENOMEM. */
static int device_dir(const char *sysfs_root, const char *disk, char *resolved, char *root) {
        _cleanup_free_ char *p = strdup_printf("block/%s/device", disk);
        _cleanup_free_ char *full = p ? path_join(sysfs_root, p) : NULL;

        if (!full)
                return -ENOMEM;
        return realpath(full, resolved) && realpath(sysfs_root, root);
}

int device_read_iscsi_digest(const char *sysfs_root, const char *disk, char **digest, char **host_driver) {
        char resolved[PATH_MAX], root[PATH_MAX];
        int r = device_dir(sysfs_root, disk, resolved, root);

        if (r <= 0)
                return r;
        for (char *slash; (slash = strrchr(resolved, '/')) && strlen(resolved) > strlen(root);
             *slash = '\0') {
                if (!startswith(slash + 1, "session"))
                        continue;
                _cleanup_strv_free_ char **conns = NULL;
                if (sysfs_list_dir("/", resolved, &conns) < 0)
                        return 0;
                STRV_FOREACH (c, conns) {
                        if (!startswith(*c, "connection"))
                                continue;
                        _cleanup_free_ char *attr =
                                strdup_printf("%s/%s/iscsi_connection/%s/data_digest", resolved, *c, *c);
                        if (!attr)
                                return -ENOMEM;
                        if (sysfs_read_string("/", attr, digest) == 0)
                                break;
                }
                /* The session's parent is its SCSI host: which driver runs it (iscsi_tcp, the
                 * software initiator, or an offload HBA) is the template's proc_name. */
                *slash = '\0';
                const char *host = strrchr(resolved, '/');
                if (!host || !startswith(host + 1, "host"))
                        return 0;
                _cleanup_free_ char *attr = strdup_printf("%s/scsi_host/%s/proc_name", resolved, host + 1);
                if (!attr)
                        return -ENOMEM;
                if (sysfs_read_string("/", attr, host_driver) == -ENOMEM)
                        return -ENOMEM;
                return 0;
        }
        return 0;
}

int device_ancestor_has_driver(const char *sysfs_root, const char *disk, const char *driver) {
        char resolved[PATH_MAX], root[PATH_MAX];
        int r = device_dir(sysfs_root, disk, resolved, root);

        if (r <= 0)
                return r;
        for (char *slash; strlen(resolved) > strlen(root) && (slash = strrchr(resolved, '/'));
             *slash = '\0') {
                _cleanup_free_ char *link = path_join(resolved, "driver"), *name = NULL;
                if (!link)
                        return -ENOMEM;
                if (sysfs_read_link_basename("/", link, &name) == 0 && streq(name, driver))
                        return 1;
        }
        return 0;
}

int device_read_nvme_paths(const char *sysfs_root, const char *disk, char ***paths) {
        _cleanup_strv_free_ char **disks = NULL;
        unsigned subsys, ns, s2, ctrl, ns2;
        int len = 0, r;

        if (sscanf(disk, "nvme%un%u%n", &subsys, &ns, &len) != 2 || (size_t) len != strlen(disk))
                return 0;
        r = sysfs_list_dir(sysfs_root, "block", &disks);
        if (r < 0)
                return r;
        STRV_FOREACH (d, disks)
                if (sscanf(*d, "nvme%uc%un%u%n", &s2, &ctrl, &ns2, &len) == 3 &&
                    (size_t) len == strlen(*d) && s2 == subsys && ns2 == ns && strv_extend(paths, *d) < 0)
                        return -ENOMEM;
        return 0;
}
