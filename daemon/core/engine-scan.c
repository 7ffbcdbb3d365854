/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The engine's reading of sysfs: every disk (or the named ones) with its flag's history,
 * classified and decided; the re-read of a few disks and their stacks; the need of one disk
 * read again for flag_write(). */
#include "engine-internal.h"
#include "history.h"
#include "identity.h"
#include "log.h"
#include "util.h"

/* Keeps the history h (taken over) in f, for what each consumer took at its moment
 * (consumers.h). */
static void engine_keep_history(DeviceFacts *f, FlagHistory *h) {
        if (f->history) {
                history_done(f->history);
                free(f->history);
        }
        f->history = h->disk ? malloc(sizeof(FlagHistory)) : NULL;
        if (f->history) {
                *f->history = *h;
                *h = (FlagHistory){};
        }
}

/* Whether f's flag now is what the kernel set at its add: f is the disk whose add this run
 * handles, or a hidden path of it (an NVMe multipath head's paths get no uevent of their own:
 * they are set up before the head is added, and without a device node only root's sysfs
 * writes could have changed their flag since). */
static bool engine_at_add(const Engine *e, const DeviceFacts *f) {
        const DeviceFacts *added;

        if (!e->added_disk)
                return false;
        if (streq(e->added_disk, f->name))
                return true;
        added = f->hidden ? device_table_find(&e->table, e->added_disk) : NULL;
        return added && strv_contains(added->nvme_paths, f->name);
}

/* Fills what f's history says (history.h): the flag the kernel declared and whether that was
 * seen at the disk's add, and whether the flag moved without the project since the last record.
 * With record, the disk's first sight and such a move are recorded. */
static void engine_read_history(const Engine *e, DeviceFacts *f, bool record) {
        _cleanup_(history_done) FlagHistory h = {};
        bool at_add = engine_at_add(e, f);
        int r;

        f->moved_from = ATTR_ABSENT;
        if (f->stable_writes == ATTR_ABSENT || f->diskseq == 0)
                return; /* no flag, or nothing to tell this disk from the next of its name */
        if (record) {
                r = history_note_first(e->runtime_dir, f->name, f->diskseq, f->devnum, f->stable_writes,
                                       at_add, e->writer);
                if (r < 0)
                        log_warning_errno(r, "%s: cannot record the flag's history in %s/history: %m",
                                          f->name, e->runtime_dir);
        }
        r = history_load(e->runtime_dir, f->name, f->diskseq, &h);
        if (r < 0) {
                if (r != -ENOENT)
                        log_debug_errno(r, "%s: cannot read its history in %s/history: %m", f->name,
                                        e->runtime_dir);
                return;
        }
        f->declared_stable_writes = h.first;
        f->declared_at_add = h.first_at_add;
        if (history_last(&h) != f->stable_writes)
                f->moved_from = history_last(&h);
        if (record && f->moved_from != ATTR_ABSENT) {
                r = history_note_change(e->runtime_dir, f->name, f->diskseq, f->devnum, f->moved_from,
                                        f->stable_writes, HISTORY_WRITER_OTHER);
                if (r < 0)
                        log_warning_errno(r, "%s: cannot record the flag's history in %s/history: %m",
                                          f->name, e->runtime_dir);
                else {
                        history_done(&h);
                        (void) history_load(e->runtime_dir, f->name, f->diskseq, &h);
                }
        }
        engine_keep_history(f, &h);
}

static int facts_compare(const void *a, const void *b) {
        return strcmp(((const DeviceFacts *) a)->name, ((const DeviceFacts *) b)->name);
}

EngineDevice *engine_find_disk(const Engine *e, const char *name) {
        size_t lo = 0, hi = e->devices ? e->table.n : 0;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(e->table.devices[mid].name, name);
                if (c == 0)
                        return &e->devices[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* How the engine reads facts: its sysfs root, udev database and readers. */
static DeviceScanOptions engine_scan_options(const Engine *e) {
        return (DeviceScanOptions){
                .sysfs_root = e->sysfs_root,
                .udev_data_dir = e->udev_data_dir,
                .resolve_backing = e->resolve_backing,
                .resolve_userdata = e->resolve_userdata,
                .read_dm_table = e->read_dm_table,
                .read_dm_table_userdata = e->read_dm_table_userdata,
        };
}

static int engine_scan_internal(Engine *e, char *const *disks) {
        DeviceScanOptions so = engine_scan_options(e);
        _cleanup_free_ Classification *classes = NULL;
        int r;

        engine_devices_free(e);
        r = disks ? device_table_scan_for(&so, disks, &e->table) : device_table_scan(&so, &e->table);
        if (r < 0)
                return log_error_errno(r, "Cannot list block devices under %s/block: %m", e->sysfs_root);
        /* In name order, which engine_find_disk() searches. */
        if (e->table.n > 1)
                qsort(e->table.devices, e->table.n, sizeof(DeviceFacts), facts_compare);

        for (size_t i = 0; i < e->table.n; i++)
                engine_read_history(e, &e->table.devices[i], e->record_history);

        classes = calloc(e->table.n + 1, sizeof(Classification));
        e->devices = calloc(e->table.n + 1, sizeof(EngineDevice));
        if (!classes || !e->devices)
                return -ENOMEM;
        r = classify_table(&e->table, e->kernel, classes);
        if (r < 0)
                return r;
        for (size_t i = 0; i < e->table.n; i++) {
                e->devices[i].facts = &e->table.devices[i];
                e->devices[i].class = classes[i];
                r = engine_decide(e, &e->devices[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int engine_scan(Engine *e) {
        return engine_scan_for(e, NULL);
}

int engine_scan_for(Engine *e, char *const *disks) {
        int r = engine_scan_internal(e, disks);
        if (r < 0)
                engine_devices_free(e); /* never leave a half-built table behind */
        return r;
}

/* The index of disk name in e's table, or -1. */
static ssize_t engine_index(const Engine *e, const char *name) {
        EngineDevice *d = engine_find_disk(e, name);
        return d ? d - e->devices : -1;
}

/* Marks i and the disks it stacks on (slaves/, the disk under a dio loop's backing file),
 * recursively, in set; down[] remembers which ones were walked. */
static void mark_below(const Engine *e, bool *set, bool *down, size_t i) {
        const DeviceFacts *f = &e->table.devices[i];

        set[i] = true;
        if (down[i])
                return;
        down[i] = true;
        STRV_FOREACH (s, f->slaves) {
                ssize_t j = engine_index(e, *s);
                if (j >= 0)
                        mark_below(e, set, down, (size_t) j);
        }
        STRV_FOREACH (p, f->nvme_paths) {
                ssize_t j = engine_index(e, *p);
                if (j >= 0)
                        mark_below(e, set, down, (size_t) j);
        }
        if (f->kind == DEVICE_KIND_LOOP && f->loop_dio == 1 && f->loop_backing_devnum) {
                const DeviceFacts *b = device_table_find_devnum(&e->table, f->loop_backing_devnum);
                if (b && b != f)
                        mark_below(e, set, down, (size_t) (b - e->table.devices));
        }
}

/* Marks i and the disks stacked on it (holders/, dio loop devices whose backing file lives on
 * it, the NVMe multipath head it is a path of), recursively, in set; up[] remembers which ones
 * were walked. */
static void mark_above(const Engine *e, bool *set, bool *up, size_t i) {
        const DeviceFacts *f = &e->table.devices[i];

        set[i] = true;
        if (up[i])
                return;
        up[i] = true;
        STRV_FOREACH (h, f->holders) {
                ssize_t j = engine_index(e, *h);
                if (j >= 0)
                        mark_above(e, set, up, (size_t) j);
        }
        for (size_t j = 0; j < e->table.n; j++) {
                const DeviceFacts *l = &e->table.devices[j];
                if ((j != i && l->kind == DEVICE_KIND_LOOP && l->loop_dio == 1 && l->loop_backing_devnum &&
                     device_table_find_devnum(&e->table, l->loop_backing_devnum) == f) ||
                    strv_contains(l->nvme_paths, f->name))
                        mark_above(e, set, up, j);
        }
}

/* True when every disk f names (slaves, holders, NVMe paths) is in the table. */
static bool facts_resolved(const Engine *e, const DeviceFacts *f) {
        STRV_FOREACH (s, f->slaves)
                if (engine_index(e, *s) < 0)
                        return false;
        STRV_FOREACH (p, f->nvme_paths)
                if (engine_index(e, *p) < 0)
                        return false;
        STRV_FOREACH (h, f->holders)
                if (engine_index(e, *h) < 0)
                        return false;
        return true;
}

/* Reads the facts of disk i of the table again, with its history, in place of the old ones.
 * Returns 0; -ESTALE when it is gone, another disk has its name now or it names a disk not in
 * the table (a full scan is needed); -ENOMEM. */
static int engine_reread(Engine *e, const DeviceScanOptions *so, size_t i) {
        DeviceFacts f;
        int r = device_facts_read(so, e->table.devices[i].name, &f);

        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return -ESTALE; /* gone: a full scan removes it */
        if (f.devnum != e->table.devices[i].devnum || f.diskseq != e->table.devices[i].diskseq ||
            !facts_resolved(e, &f)) {
                device_facts_done(&f);
                return -ESTALE; /* another disk under that name, or a new one */
        }
        engine_read_history(e, &f, e->record_history);
        device_facts_done(&e->table.devices[i]);
        e->table.devices[i] = f;
        return 0;
}

/* Classifies and decides again the disks in set (parallel to the table); every other disk keeps
 * its classification and decision. Returns 0 or -errno. */
static int engine_rederive(Engine *e, const bool *set) {
        size_t n = e->table.n;
        _cleanup_free_ Classification *classes = calloc(n + 1, sizeof(Classification));
        int r;

        if (!classes)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!set[i])
                        classes[i] = e->devices[i].class; /* borrowed, read only */
        r = classify_devices(&e->table, e->kernel, set, classes);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (!set[i])
                        continue;
                engine_device_done(&e->devices[i]);
                e->devices[i].facts = &e->table.devices[i];
                e->devices[i].class = classes[i];
                classes[i] = (Classification){};
        }
        for (size_t i = 0; i < n; i++)
                if (set[i]) {
                        r = engine_decide(e, &e->devices[i]);
                        if (r < 0)
                                return r;
                }
        return 0;
}

int engine_rescan_disks(Engine *e, char *const *disks, bool **ret_redone) {
        DeviceScanOptions so = engine_scan_options(e);
        size_t n = e->table.n;
        _cleanup_free_ bool *set = calloc(n + 1, sizeof(bool)), *down = calloc(n + 1, sizeof(bool)),
                            *up = calloc(n + 1, sizeof(bool)), *read = calloc(n + 1, sizeof(bool));
        bool grew;
        int r;

        if (!set || !down || !up || !read)
                return -ENOMEM;
        if (!e->devices)
                return -ESTALE;
        STRV_FOREACH (d, disks) {
                ssize_t i = engine_index(e, *d);
                if (i < 0)
                        return -ESTALE; /* a disk we have not seen: a full scan adds it */
                mark_below(e, set, down, (size_t) i);
        }

        /* What stacks on anything re-read may change with it: walk up from each, with the facts
         * before and after the re-read (a stack may have been built or torn down), until no
         * new disk joins. */
        do {
                grew = false;
                for (size_t i = 0; i < n; i++)
                        if (set[i] && down[i] && !up[i])
                                mark_above(e, set, up, i);
                for (size_t i = 0; i < n; i++) {
                        if (!set[i] || read[i])
                                continue;
                        r = engine_reread(e, &so, i);
                        if (r < 0)
                                return r;
                        read[i] = grew = true;
                        /* Its new facts may name other disks below or above it. */
                        bool was_down = down[i], was_up = up[i];
                        down[i] = up[i] = false;
                        if (was_down)
                                mark_below(e, set, down, i);
                        if (was_up)
                                mark_above(e, set, up, i);
                }
        } while (grew);

        r = engine_rederive(e, set);
        if (r < 0)
                return r;
        if (ret_redone)
                *ret_redone = TAKE_PTR(set);
        return 0;
}

EngineDevice *engine_find(Engine *e, const char *name) {
        _cleanup_free_ char *disk = NULL;
        EngineDevice *d = engine_find_disk(e, name);

        if (d)
                return d;
        if (device_disk_of(e->sysfs_root, name, &disk) < 0)
                return NULL;
        return engine_find_disk(e, disk);
}

int engine_need_of(const char *disk, uint64_t diskseq, Need *ret_need, char **ret_reason, void *userdata) {
        const Engine *e = userdata;
        DeviceScanOptions so = engine_scan_options(e);
        _cleanup_(device_table_done) DeviceTable t = {};
        _cleanup_free_ Classification *classes = NULL;
        char *const names[] = { (char *) disk, NULL };
        const DeviceRule *rule;
        DeviceFacts *f;
        int r;

        *ret_reason = NULL;
        r = device_table_scan_for(&so, names, &t);
        if (r < 0) {
                *ret_reason = strdup_printf("cannot read the disks under %s/block: %s", e->sysfs_root,
                                            strerror(-r));
                return *ret_reason ? r : -ENOMEM;
        }
        f = device_table_find(&t, disk);
        if (!f || (diskseq != 0 && f->diskseq != diskseq)) {
                *ret_reason = strdup(f ? "another disk has its name now" : "it is gone");
                return *ret_reason ? -ESTALE : -ENOMEM;
        }
        for (size_t i = 0; i < t.n; i++)
                engine_read_history(e, &t.devices[i], false);
        classes = calloc(t.n + 1, sizeof(Classification));
        if (!classes)
                return -ENOMEM;
        r = classify_table(&t, e->kernel, classes);
        if (r < 0)
                return r;
        Need need = classes[f - t.devices].need;
        DeviceIdentity id = device_identity_of(f);
        int configured = config_device_need(&e->config, &id, &rule);
        if (configured >= 0 && need_rank(configured) > need_rank(need))
                need = configured; /* Need= raises it, never lowers it */
        for (size_t i = 0; i < t.n; i++)
                classification_done(&classes[i]);
        *ret_need = need;
        return 0;
}
