/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <sys/utsname.h>
#include <time.h>

#include "config-build.h"
#include "config-in-force.h"
#include "consumers-read.h"
#include "engine.h"
#include "flag.h"
#include "history.h"
#include "identity.h"
#include "log.h"
#include "message-id.h"
#include "sysfs.h"
#include "util.h"

const char *desired_to_string(int desired) {
        return desired < 0 ? "-" : desired ? "on" : "off";
}

static int strdup_or(char **dst, const char *value, const char *fallback) {
        *dst = strdup(value ?: fallback);
        return *dst ? 0 : -ENOMEM;
}

/* This boot's id in *ret ("" when the kernel does not say). Returns 0 or -ENOMEM. */
static int read_boot_id(char **ret) {
        _cleanup_free_ char *data = NULL;
        int r = read_full_file("/proc/sys/kernel/random/boot_id", 64, &data, NULL);

        if (r < 0)
                log_debug_errno(r, "Cannot read this boot's id: %m");
        if (r == -ENOMEM)
                return r;
        return strdup_or(ret, r < 0 ? NULL : strstrip(data), "");
}

/* The kernel's version with the patch level its release may hide: Debian names its 6.1.176 kernel
 * "6.1.0-50-amd64" and says "Debian 6.1.176-1" in uname -v, Ubuntu says it in
 * /proc/version_signature ("Ubuntu 6.5.0-14.14-generic 6.5.3"). A bound such as 6.1.72 (the page
 * cache's capture, consumers.h) rests on it. */
static unsigned kernel_version_refined(unsigned kernel, const char *version) {
        _cleanup_free_ char *signature = NULL;
        const char *p = version ? strstr(version, "Debian ") : NULL;
        unsigned a, b, c;

        if (p)
                p += strlen("Debian ");
        else if (read_full_file("/proc/version_signature", 256, &signature, NULL) >= 0 &&
                 (p = strrchr(strstrip(signature), ' ')))
                p++;
        if (!p || sscanf(p, "%u.%u.%u", &a, &b, &c) != 3 || KERNEL_VERSION(a, b, 0) != (kernel & ~0xffU))
                return kernel;
        return KERNEL_VERSION(a, b, c);
}

int engine_init(Engine *e, const EngineOptions *o) {
        struct utsname u;
        int r;

        *e = (Engine){
                .resolve_backing = o->resolve_backing,
                .resolve_userdata = o->resolve_userdata,
                .read_dm_table = o->read_dm_table,
                .read_dm_table_userdata = o->read_dm_table_userdata,
                .record_history = o->record_history,
        };
        if (!o->kernel_release && uname(&u) < 0)
                return -errno;
        if ((r = strdup_or(&e->sysfs_root, o->sysfs_root, "/sys")) < 0 ||
            (r = strdup_or(&e->udev_data_dir, o->udev_data_dir, "/run/udev/data")) < 0 ||
            (r = strdup_or(&e->config_file, o->config_file, CONFIG_FILE)) < 0 ||
            (r = strdup_or(&e->dropin_dir, o->dropin_dir, CONFIG_DROPIN_DIR)) < 0 ||
            (r = strdup_or(&e->runtime_dir, o->runtime_dir, RUNTIME_DIR)) < 0 ||
            (r = strdup_or(&e->state_dir, o->state_dir, STATE_DIR)) < 0 ||
            (r = strdup_or(&e->kernel_release, o->kernel_release, u.release)) < 0 ||
            (r = strdup_or(&e->writer, o->writer, "stablepagesd")) < 0 ||
            (o->added_disk && (r = strdup_or(&e->added_disk, o->added_disk, NULL)) < 0) ||
            (r = o->boot_id ? strdup_or(&e->boot_id, o->boot_id, "") : read_boot_id(&e->boot_id)) < 0)
                goto fail;
        r = parse_kernel_version(e->kernel_release, &e->kernel);
        if (r < 0) {
                log_error("Cannot parse kernel release \"%s\".", e->kernel_release);
                goto fail;
        }
        if (!o->kernel_release)
                e->kernel = kernel_version_refined(e->kernel, u.version);
        r = config_init_defaults(&e->config);
        if (r < 0)
                goto fail;
        return 0;
fail:
        engine_done(e);
        return r;
}

/* Frees what was derived about d (not its facts) and zeroes it. */
static void engine_device_done(EngineDevice *d) {
        classification_done(&d->class);
        policy_decision_done(&d->decision);
        free(d->learned_key);
        free(d->learned_reason);
        free(d->need_problem);
        free(d->override_binding);
        free(d->override_source);
        *d = (EngineDevice){};
}

static void engine_devices_free(Engine *e) {
        for (size_t i = 0; e->devices && i < e->table.n; i++)
                engine_device_done(&e->devices[i]);
        e->devices = mfree(e->devices);
        device_table_done(&e->table);
}

void engine_done(Engine *e) {
        engine_devices_free(e);
        config_done(&e->config);
        config_diags_done(&e->diags);
        runtime_overrides_done(&e->overrides);
        learned_records_done(&e->learned);
        free(e->state_dir);
        free(e->sysfs_root);
        free(e->udev_data_dir);
        free(e->config_file);
        free(e->dropin_dir);
        free(e->runtime_dir);
        free(e->kernel_release);
        free(e->boot_id);
        free(e->added_disk);
        free(e->writer);
        *e = (Engine){};
}

/* Takes the result r of a load (c and d) as e's configuration and diagnostics. Returns 0 or
 * r < 0 (c and d then freed). */
static int engine_take_config(Engine *e, int r, Config *c, ConfigDiags *d) {
        if (r < 0) {
                config_done(c);
                config_diags_done(d);
                return r;
        }
        config_diags_done(&e->diags);
        e->diags = *d;
        *d = (ConfigDiags){};
        engine_set_config(e, c);
        return 0;
}

int engine_load_config(Engine *e) {
        Config c = {};
        ConfigDiags d = {};
        return engine_take_config(e, config_load(e->config_file, e->dropin_dir, &c, &d), &c, &d);
}

int engine_load_config_in_force(Engine *e, char **ret_note) {
        Config c = {};
        ConfigDiags d = {};
        int r = config_load_in_force(e->config_file, e->dropin_dir, e->runtime_dir, &c, &d, ret_note);
        return engine_take_config(e, r == -ENOMEM ? r : 0, &c, &d);
}

void engine_set_config(Engine *e, Config *c) {
        for (size_t i = 0; e->devices && i < e->table.n; i++)
                e->devices[i].setting_rule = NULL; /* points into the old config */
        config_done(&e->config);
        e->config = *c;
        *c = (Config){};
}

int engine_load_overrides(Engine *e) {
        RuntimeOverrides o = {};
        int r = state_load_overrides(e->runtime_dir, &o);
        if (r < 0)
                return r;
        runtime_overrides_done(&e->overrides);
        e->overrides = o;
        return 0;
}

int engine_load_learned(Engine *e) {
        LearnedRecords l = {};
        int r = learned_load(e->state_dir, e->boot_id, &l);
        if (r < 0)
                return r;
        learned_records_done(&e->learned);
        e->learned = l;
        return 0;
}

int engine_learned_key(Engine *e, EngineDevice *d) {
        return d->learned_key ? 0 : learned_key(d->facts, &e->table, e->boot_id, &d->learned_key);
}

/* Order of protection: a Need= may move a disk up this list, never down. */
static int need_rank(Need n) {
        return n == NEED_REQUIRED ? 3 : n == NEED_UNKNOWN ? 2 : n == NEED_RECOMMENDED ? 1 : 0;
}

/* Need= of a [Device] section: raises the detected need, or records why it cannot lower it. */
static int engine_configured_need(Engine *e, EngineDevice *d, const DeviceIdentity *id) {
        const DeviceRule *rule;
        int need = config_device_need(&e->config, id, &rule);
        Classification *c = &d->class;

        if (need < 0 || (Need) need == c->need)
                return 0;
        if (need_rank(need) < need_rank(c->need)) {
                d->need_problem = strdup_printf(
                        "%s:%u: Need=%s cannot lower the detected need %s of %s (%s); "
                        "ignoring it",
                        rule->file, rule->need_line, need_to_string(need), need_to_string(c->need),
                        d->facts->name, c->reasons ? c->reasons[0] : "no reason");
                return d->need_problem ? 0 : -ENOMEM;
        }
        _cleanup_strv_free_ char **reasons = NULL;
        if (strv_extendf(&reasons, "Need=%s in %s:%u (detected: %s)", need_to_string(need), rule->file,
                         rule->need_line, need_to_string(c->need)) < 0 ||
            strv_extend_strv(&reasons, c->reasons) < 0)
                return -ENOMEM;
        strv_free(c->reasons);
        c->reasons = TAKE_PTR(reasons);
        c->need = need;
        return 0;
}

static int engine_decide(Engine *e, EngineDevice *d) {
        DeviceFacts *f = d->facts;
        DeviceIdentity id = device_identity_of(f);
        const DeviceRule *force_rule = NULL;
        const RuntimeOverride *o;

        config_device_settings(&e->config, &id, &d->setting, &d->force, &d->setting_rule, &force_rule);
        d->setting_source = SOURCE_CONFIG;
        /* Bound to this disk, not to its name: another disk under the name has its own diskseq. */
        o = runtime_overrides_find(&e->overrides, f->diskseq);
        if (o) {
                d->setting = o->setting;
                d->force = o->force;
                d->setting_source = SOURCE_RUNTIME;
                d->setting_rule = NULL;
        }
        d->managed = config_device_is_managed(&e->config, f->name);
        int r = engine_describe_override(e, d, o, force_rule);
        if (r < 0)
                return r;
        r = engine_configured_need(e, d, &id);
        if (r < 0)
                return r;

        /* Keyed by the disk, never by its name: another disk under the name gets none of it. */
        const LearnedRecord *l;
        r = learned_find_disk(&e->learned, f, &e->table, e->boot_id, &l, &d->learned_key);
        if (r < 0)
                return r;
        _cleanup_free_ char *summary = NULL;
        d->learned = l ? l->learned : LEARNED_NONE;
        if (l && l->learned != LEARNED_NONE) { /* else a mirror's figures only */
                char when[64];
                time_t t = (time_t) (l->since_usec / USEC_PER_SEC);
                struct tm tm;
                strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&t, &tm));
                d->learned_since_usec = l->since_usec;
                d->learned_reason = strdup(l->reason);
                summary = strdup_printf("learned %s: %s", when, l->reason);
                if (!d->learned_reason || !summary)
                        return -ENOMEM;
        }
        d->stalls = d->learned == LEARNED_OFF  ? STALL_OVER_BUDGET
                    : d->learned == LEARNED_ON ? STALL_WITHIN_BUDGET
                                               : STALL_UNMEASURED;

        PolicyInput in = {
                .name = f->name,
                .mode = e->config.policy,
                .need = d->class.need,
                .need_reason = d->class.reasons ? d->class.reasons[0] : NULL,
                .managed = d->managed,
                .setting = d->setting,
                .setting_source = d->setting_source,
                .force = d->force,
                .stalls = d->stalls,
                .stall_summary = summary,
                .declared = f->declared_stable_writes == 1,
                .integrity_enforced = d->class.integrity_enforced,
        };
        policy_decision_done(&d->decision);
        return policy_decide(&in, &d->decision);
}

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

/* Fills what f's history says (history.h): the flag the kernel declared and whether that was
 * seen at the disk's add, and whether the flag moved without the project since the last record.
 * With record, the disk's first sight and such a move are recorded. */
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

int engine_rescan_disks(Engine *e, char *const *disks, bool **ret_redone) {
        DeviceScanOptions so = engine_scan_options(e);
        size_t n = e->table.n;
        _cleanup_free_ bool *set = calloc(n + 1, sizeof(bool)), *down = calloc(n + 1, sizeof(bool)),
                            *up = calloc(n + 1, sizeof(bool)), *read = calloc(n + 1, sizeof(bool));
        _cleanup_free_ Classification *classes = calloc(n + 1, sizeof(Classification));
        bool grew;
        int r;

        if (!set || !down || !up || !read || !classes)
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
                        DeviceFacts f;

                        if (!set[i] || read[i])
                                continue;
                        r = device_facts_read(&so, e->table.devices[i].name, &f);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return -ESTALE; /* gone: a full scan removes it */
                        if (f.devnum != e->table.devices[i].devnum ||
                            f.diskseq != e->table.devices[i].diskseq || !facts_resolved(e, &f)) {
                                device_facts_done(&f);
                                return -ESTALE; /* another disk under that name, or a new one */
                        }
                        engine_read_history(e, &f, e->record_history);
                        device_facts_done(&e->table.devices[i]);
                        e->table.devices[i] = f;
                        read[i] = true;
                        grew = true;
                        /* Its new facts may name other disks below or above it. */
                        bool was_down = down[i], was_up = up[i];
                        down[i] = up[i] = false;
                        if (was_down)
                                mark_below(e, set, down, i);
                        if (was_up)
                                mark_above(e, set, up, i);
                }
        } while (grew);

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

void apply_result_done(ApplyResult *r) {
        free(r->message);
        *r = (ApplyResult){};
}

static int fail(ApplyResult *ret, int error, char *message) {
        ret->message = message;
        return message ? error : -ENOMEM;
}

/* True when the disk is gone from sysfs, or going: removed while we looked at it or wrote
 * to it. The kernel removes queue/ first (del_gendisk), then the disk's directory. */
static bool disk_removed(const Engine *e, const char *name) {
        _cleanup_free_ char *p = strdup_printf("%s/block/%s/queue", e->sysfs_root, name);
        return p && access(p, F_OK) < 0 && errno == ENOENT;
}

int engine_need_of(const char *disk, uint64_t diskseq, Need *ret_need, char **ret_why, void *userdata) {
        const Engine *e = userdata;
        DeviceScanOptions so = engine_scan_options(e);
        _cleanup_(device_table_done) DeviceTable t = {};
        _cleanup_free_ Classification *classes = NULL;
        char *const names[] = { (char *) disk, NULL };
        const DeviceRule *rule;
        DeviceFacts *f;
        int r;

        *ret_why = NULL;
        r = device_table_scan_for(&so, names, &t);
        if (r < 0) {
                *ret_why = strdup_printf("cannot read the disks under %s/block: %s", e->sysfs_root,
                                         strerror(-r));
                return *ret_why ? r : -ENOMEM;
        }
        f = device_table_find(&t, disk);
        if (!f || (diskseq != 0 && f->diskseq != diskseq)) {
                *ret_why = strdup(f ? "another disk has its name now" : "it is gone");
                return *ret_why ? -ESTALE : -ENOMEM;
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

int engine_apply(Engine *e, EngineDevice *d, ApplyResult *ret) {
        DeviceFacts *f = d->facts;
        const PolicyDecision *dec = &d->decision;
        int r;

        *ret = (ApplyResult){ .old_value = f->stable_writes, .new_value = f->stable_writes };
        if (dec->desired < 0) {
                ret->message = strdup_printf("%s: left as it is (%s)", f->name, dec->reason);
                return ret->message ? 0 : -ENOMEM;
        }
        /* Unreadable or unparsable (recorded by device.c) is not the same as absent. */
        STRV_FOREACH (err, f->errors)
                if (f->stable_writes == ATTR_ABSENT && startswith(*err, "queue/stable_writes:"))
                        return fail(ret, -EIO, strdup_printf("%s: %s", f->name, *err));
        if (f->stable_writes == ATTR_ABSENT && disk_removed(e, f->name))
                return fail(ret, -ENODEV, strdup_printf("%s: the disk was removed", f->name));
        if (f->stable_writes == ATTR_ABSENT)
                return fail(
                        ret, -EOPNOTSUPP,
                        strdup_printf("%s: the kernel has no queue/stable_writes for this device", f->name));

        if (f->stable_writes != dec->desired) {
                _cleanup_free_ char *reason = NULL;
                int now, old = f->stable_writes;
                FlagWrite w = {
                        .disk = f->name,
                        .diskseq = f->diskseq,
                        .devnum = f->devnum,
                        .need = d->class.need,
                        .force = dec->forced,
                        .value = dec->desired,
                        .writer = e->writer,
                        .need_of = engine_need_of,
                        .userdata = e,
                };

                r = flag_write(e->sysfs_root, e->runtime_dir, &w, &now, &reason);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail(ret, r, TAKE_PTR(reason));
                ret->changed = now != old;
                ret->new_value = now;
                f->stable_writes = now;
                d->class.in_force = stable_writes_in_force(f, e->kernel);
                if (ret->changed)
                        log_struct(dec->forced ? LOG_WARNING : LOG_INFO,
                                   dec->forced ? SP_MESSAGE_FORCED : NULL,
                                   LOG_FIELDS("STABLEPAGES_DEVICE", f->name),
                                   "%s: stable writes %s -> %s: %s%s (need %s: %s)", f->name,
                                   old ? "on" : "off", now ? "on" : "off", dec->reason,
                                   dec->forced ? " (FORCED)" : "", need_to_string(d->class.need),
                                   d->class.reasons ? d->class.reasons[0] : "no reason");
        }

        if (dec->refused)
                return fail(ret, -EPERM, strdup_printf("%s: %s", f->name, dec->reason));
        ret->message = strdup_printf("%s: stable writes %s%s (%s)", f->name, desired_to_string(dec->desired),
                                     ret->changed ? "" : ", unchanged", dec->reason);
        return ret->message ? 0 : -ENOMEM;
}

int engine_restore(Engine *e, EngineDevice *d, ApplyResult *ret) {
        _cleanup_(history_done) FlagHistory h = {};
        _cleanup_free_ char *reason = NULL;
        DeviceFacts *f = d->facts;
        bool ours = false;
        int r, now;

        *ret = (ApplyResult){ .old_value = f->stable_writes, .new_value = f->stable_writes };
        r = history_load(e->runtime_dir, f->name, f->diskseq, &h);
        if (r == -ENOENT)
                return fail(ret, 0,
                            strdup_printf("%s: no history of its flag: nothing to restore", f->name));
        if (r < 0)
                return fail(ret, r,
                            strdup_printf("%s: cannot read its history in %s/history: %s", f->name,
                                          e->runtime_dir, strerror(-r)));
        for (size_t i = 0; i < h.n_changes; i++)
                ours = ours || !streq(h.changes[i].writer, HISTORY_WRITER_OTHER);
        if (!ours || f->stable_writes == h.first)
                return fail(ret, 0,
                            strdup_printf("%s: stable writes %s, as the kernel %s them: nothing to restore",
                                          f->name, f->stable_writes ? "on" : "off",
                                          h.first_at_add ? "set" : "had when first seen, with"));
        FlagWrite w = {
                .disk = f->name,
                .diskseq = f->diskseq,
                .devnum = f->devnum,
                .need = d->class.need,
                .value = h.first,
                .writer = "restore",
                .need_of = engine_need_of,
                .userdata = e,
        };
        r = flag_write(e->sysfs_root, e->runtime_dir, &w, &now, &reason);
        if (r == -ENOMEM)
                return r;
        if (r == -EPERM)
                return fail(
                        ret, r,
                        strdup_printf("%s: left on, not restored to the kernel's 0: %s", f->name, reason));
        if (r < 0)
                return fail(ret, r, TAKE_PTR(reason));
        ret->changed = now != f->stable_writes;
        ret->new_value = now;
        log_info("%s: stable writes %s -> %s: restored to the kernel's own value.", f->name,
                 f->stable_writes ? "on" : "off", now ? "on" : "off");
        f->stable_writes = now;
        return fail(ret, 0,
                    strdup_printf("%s: stable writes restored to %s, the kernel's own value", f->name,
                                  now ? "on" : "off"));
}

static void json_attr_int(JsonWriter *w, const char *key, int v) {
        json_key(w, key);
        if (v == ATTR_ABSENT)
                json_null(w);
        else
                json_int(w, v);
}

void engine_device_json_members(const Engine *e, const EngineDevice *d, JsonWriter *w) {
        const DeviceFacts *f = d->facts;
        char buf[32];

        json_key(w, "name");
        json_string(w, f->name);
        json_key(w, "devnum");
        json_string(w, format_devnum(f->devnum, buf));
        json_key(w, "kind");
        json_string(w, device_kind_to_string(f->kind));
        json_key(w, "driver");
        json_string(w, f->driver);
        json_attr_int(w, "stable_writes", f->stable_writes);
        json_attr_int(w, "declared", f->declared_stable_writes);
        json_key(w, "in_force");
        json_bool(w, d->class.in_force);
        json_key(w, "integrity_enforced");
        json_bool(w, d->class.integrity_enforced);
        json_key(w, "need");
        json_string(w, need_to_string(d->class.need));
        json_key(w, "reasons");
        json_strv(w, d->class.reasons);
        json_key(w, "flag_cause");
        json_string(w, d->class.flag_cause);
        json_key(w, "desired");
        json_string(w, d->decision.desired < 0 ? NULL : desired_to_string(d->decision.desired));
        json_key(w, "desired_source");
        json_string(w, desired_source_to_string(d->decision.source));
        json_key(w, "decision");
        json_string(w, d->decision.reason);
        json_key(w, "refused");
        json_bool(w, d->decision.refused);
        json_key(w, "forced");
        json_bool(w, d->decision.forced);
        json_key(w, "managed");
        json_bool(w, d->managed);
        json_key(w, "setting");
        json_string(w, setting_to_string(d->setting));
        json_key(w, "diskseq");
        json_uint(w, f->diskseq);
        json_key(w, "override");
        if (d->override_scope) {
                json_object_begin(w);
                json_key(w, "scope");
                json_string(w, d->override_scope);
                json_key(w, "setting");
                json_string(w, setting_to_string(d->setting));
                json_key(w, "force");
                json_bool(w, d->force);
                json_key(w, "bound_to");
                json_string(w, d->override_binding);
                json_key(w, "source");
                json_string(w, d->override_source);
                json_object_end(w);
        } else
                json_null(w);
        json_key(w, "learned");
        json_string(w, learned_to_string(d->learned));
        json_key(w, "learned_since_usec");
        if (d->learned == LEARNED_NONE)
                json_null(w);
        else
                json_uint(w, d->learned_since_usec);
        json_key(w, "learned_reason");
        json_string(w, d->learned_reason);
        json_key(w, "need_problem");
        json_string(w, d->need_problem);

        json_key(w, "facts");
        json_object_begin(w);
        json_key(w, "integrity_format");
        json_string(w, f->integrity_format);
        json_attr_int(w, "write_generate", f->write_generate);
        json_attr_int(w, "read_verify", f->read_verify);
        json_attr_int(w, "integrity_capable", f->integrity_capable);
        json_key(w, "md_level");
        json_string(w, f->md_level);
        json_attr_int(w, "md_skip_copy", f->md_skip_copy);
        json_key(w, "dm_name");
        json_string(w, f->dm_name);
        json_key(w, "dm_uuid");
        json_string(w, f->dm_uuid);
        json_key(w, "dm_table_source");
        json_string(w, f->dm_table_source);
        json_key(w, "dm_targets");
        if (f->dm_table_source) {
                json_array_begin(w);
                for (size_t i = 0; i < f->dm_table.n; i++) {
                        _cleanup_free_ char *t = dm_target_to_string(&f->dm_table.targets[i]);
                        json_string(w, t ?: "?");
                }
                json_array_end(w);
        } else
                json_null(w);
        json_key(w, "dm_table_missing");
        json_string(w, f->dm_table_missing);
        json_key(w, "loop_backing_file");
        json_string(w, f->loop_backing_file);
        json_attr_int(w, "loop_dio", f->loop_dio);
        json_key(w, "iscsi_data_digest");
        json_string(w, f->iscsi_data_digest);
        json_key(w, "scsi_host_driver");
        json_string(w, f->scsi_host_driver);
        json_key(w, "nvme_transport");
        json_string(w, f->nvme_transport);
        json_key(w, "nvme_paths");
        json_strv(w, f->nvme_paths);
        json_key(w, "mmc_spi");
        json_bool(w, f->mmc_spi);
        json_key(w, "hidden");
        json_bool(w, f->hidden);
        json_key(w, "slaves");
        json_strv(w, f->slaves);
        json_key(w, "holders");
        json_strv(w, f->holders);
        json_key(w, "partitions");
        json_array_begin(w);
        for (size_t i = 0; i < f->n_partitions; i++)
                json_string(w, f->partitions[i].name);
        json_array_end(w);
        json_object_end(w);

        json_key(w, "errors");
        json_strv(w, f->errors);
}

const char *kernel_state_to_string(int flag, bool in_force) {
        if (flag == ATTR_ABSENT)
                return "-";
        if (flag == 0 && in_force)
                return "on (integrity)";
        return flag ? "on" : "off";
}

void engine_dump_json(const Engine *e, char *const *names, FILE *f, bool pretty) {
        _cleanup_(local_consumers_done) LocalConsumers local = {};
        JsonWriter w;

        /* What a consumer took, as far as this process finds them (consumers-read.h). */
        if (local_consumers_read(e, &local) < 0)
                log_oom();
        ConsumerInputs in = local_consumers_inputs(&local);
        json_init(&w, f, pretty);
        json_array_begin(&w);
        for (size_t i = 0; i < e->table.n; i++) {
                _cleanup_(device_consumers_done) DeviceConsumers c = {};
                if (strv_length(names) > 0 && !strv_contains(names, e->devices[i].facts->name))
                        continue;
                if (consumers_of(e, &e->devices[i], &in, &c) < 0)
                        log_oom();
                json_object_begin(&w);
                engine_device_json_members(e, &e->devices[i], &w);
                consumers_json(&c, &w);
                json_object_end(&w);
        }
        json_array_end(&w);
        if (!pretty)
                fputc('\n', f);
}

void engine_dump_text(const Engine *e, FILE *f) {
        fprintf(f, "%-12s %-8s %-15s %-12s %-7s %-9s %s\n", "DEVICE", "KIND", "KERNEL", "NEED", "DESIRED",
                "SOURCE", "REASON");
        for (size_t i = 0; i < e->table.n; i++) {
                const EngineDevice *d = &e->devices[i];
                const DeviceFacts *df = d->facts;
                fprintf(f, "%-12s %-8s %-15s %-12s %-7s %-9s %s\n", df->name,
                        device_kind_to_string(df->kind),
                        kernel_state_to_string(df->stable_writes, d->class.in_force),
                        need_to_string(d->class.need), desired_to_string(d->decision.desired),
                        desired_source_to_string(d->decision.source),
                        d->class.reasons ? d->class.reasons[0] : "");
        }
}
