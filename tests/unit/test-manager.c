/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Manager's reconcile on a fake sysfs root, without root or a bus: the flag each disk is
 * left with under its policy and overrides, a required disk never turned off without force,
 * and what is published (the events the D-Bus side turns into signals, devices.json). The
 * event loop is made but never run: each reconcile is called here. The uevent, mount and swap
 * monitors follow the real system, whose devices never name a disk of the fake tree (their
 * MAJ:MIN are in major 60, for local use, which no driver takes). */
#include "fake-engine.h"
#include "manager-overrides.h"
#include "manager.h"
#include "told.h"

/* The bus side's two steps (bus_find_device(), then the Manager's call) for a name. */
static int set_override(Manager *m, const char *name, Setting setting, bool force) {
        EngineDevice *d = manager_find_device(m, name);
        return d ? manager_set_override(m, d, setting, force) : -ENODEV;
}

/* Resets the runtime override of name; *ret_removed: the first sentence of what was removed
 * (NULL none). Returns how many were removed or -errno. */
static int reset_override(Manager *m, const char *name, char **ret_removed) {
        EngineDevice *d = manager_find_device(m, name);
        _cleanup_strv_free_ char **removed = NULL;
        _cleanup_free_ char *problem = NULL;
        int r;

        *ret_removed = NULL;
        if (!d)
                return -ENODEV;
        r = manager_reset_overrides(m, d, true, &removed, &problem);
        if (r < 0)
                return r;
        if (!removed)
                return 0;
        *ret_removed = strdup(removed[0]);
        return *ret_removed ? (int) strv_length(removed) : -ENOMEM;
}

static char *root;
static char **events;

static void on_event(Manager *m, const ManagerEvent *ev, void *userdata) {
        switch (ev->type) {
        case MANAGER_DEVICE_ADDED:
                told_add(&events, "added %s", ev->device);
                break;
        case MANAGER_DEVICE_CHANGED:
                told_add(&events, "changed %s", ev->device);
                break;
        case MANAGER_DEVICE_REMOVED:
                told_add(&events, "removed %s", ev->device);
                break;
        case MANAGER_APPLIED:
                if (ev->result->changed)
                        told_add(&events, "applied %s %d -> %d", ev->device, ev->result->old_value,
                                 ev->result->new_value);
                else
                        told_add(&events, "apply failed %s", ev->device);
                break;
        case MANAGER_RELOADED:
                told_add(&events, "reloaded");
                break;
        default:
                told_add(&events, "event %d %s", ev->type, ev->device ?: "");
                break;
        }
}

static void put(const char *disk, const char *attr, const char *value) {
        char rel[256];
        snprintf(rel, sizeof rel, "sys/block/%s/%s", disk, attr);
        tree_put(root, rel, value);
}

/* A disk 60:minor with flag (as the kernel writes it, "0\n" or "1\n"). */
static void make_disk(const char *name, unsigned minor, const char *flag) {
        char value[32], rel[256];

        snprintf(value, sizeof value, "60:%u\n", minor);
        put(name, "dev", value);
        snprintf(value, sizeof value, "%u\n", 100 + minor);
        put(name, "diskseq", value);
        put(name, "queue/stable_writes", flag);
        snprintf(rel, sizeof rel, "sys/block/%s/holders", name);
        tree_mkdir(root, rel);
        snprintf(rel, sizeof rel, "sys/block/%s/slaves", name);
        tree_mkdir(root, rel);
}

/* The flag file of disk as the Manager left it: 0, 1, or -1 when it does not read 0 or 1. */
static int flag_of(const char *disk) {
        _cleanup_free_ char *rel = strdup_printf("sys/block/%s/queue/stable_writes", disk);
        _cleanup_free_ char *path = tree_path(root, rel), *s = NULL;

        if (read_full_file(path, 4096, &s, NULL) < 0)
                return -1;
        return streq(s, "0") || streq(s, "0\n") ? 0 : streq(s, "1") || streq(s, "1\n") ? 1 : -1;
}

/* The object of disk in runtime_dir/devices.json, as the daemon wrote it last (pretty: one
 * member per line, each device's "name" first); NULL when it is not listed. */
static char *published(const char *disk) {
        _cleanup_free_ char *path = tree_path(root, "run/devices.json"), *json = NULL;
        _cleanup_free_ char *key = strdup_printf("\"name\": \"%s\"", disk);
        const char *start, *end;

        if (!key || read_full_file(path, 1024 * 1024, &json, NULL) < 0)
                return NULL;
        start = strstr(json, key);
        if (!start)
                return NULL;
        /* up to the next device, or the end of the devices */
        end = strstr(start + 1, "\n    },\n    {");
        if (!end)
                end = strstr(start, "\n  ],");
        return end ? strndup(start, end - start) : strdup(start);
}

#define CHECK_EVENTS(...)                                                                                   \
        do {                                                                                                \
                _cleanup_free_ char *_got = told_take(&events);                                             \
                CHECK_STR(_got, __VA_ARGS__);                                                               \
        } while (0)

/* Checks that the object of disk in devices.json has member (a "key": value line). */
#define CHECK_PUBLISHED(disk, member)                                                                       \
        do {                                                                                                \
                _cleanup_free_ char *_j = published(disk);                                                  \
                CHECK_CONTAINS(_j, member);                                                                 \
        } while (0)

static void set_config(const char *content) {
        tree_put(root, "etc/stablepages.conf", content);
}

int main(void) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_free_ char *removed = NULL, *j = NULL;
        ApplyResult res = {};
        FakeEngine fe;

        fake_engine_init(&fe);
        root = fe.root;
        set_config("[Manager]\nPolicy=integrity\n");
        /* md0: an md raid1 (need recommended), stable writes off; sda with a partition and
         * vdb: nothing reads their pages twice (need none), off; zram0: required, on (what the
         * kernel sets at its add). */
        make_disk("md0", 0, "0\n");
        put("md0", "md/level", "raid1\n");
        make_disk("sda", 16, "0\n");
        put("sda", "sda1/partition", "1\n");
        put("sda", "sda1/dev", "60:17\n");
        make_disk("vdb", 32, "0\n");
        make_disk("zram0", 48, "1\n");

        fe.options.record_history = true; /* as the daemon runs it */
        CHECK_INT(manager_new(&fe.options, &m), 0);
        if (!m)
                return tests_finish();
        manager_set_event_handler(m, on_event, NULL);

        /* The first reconcile (at start): Policy=integrity turns the raid1 on and leaves the
         * others as they are; each disk is published, the write is told. */
        CHECK_INT(manager_start(m), 0);
        CHECK_INT(flag_of("md0"), 1);
        CHECK_INT(flag_of("sda"), 0);
        CHECK_INT(flag_of("vdb"), 0);
        CHECK_INT(flag_of("zram0"), 1);
        CHECK_EVENTS("applied md0 0 -> 1\nadded md0\nadded sda\nadded vdb\nadded zram0\n");
        CHECK_INT(manager_n_devices(m), 4);
        CHECK_PUBLISHED("md0", "\"need\": \"recommended\"");
        CHECK_PUBLISHED("md0", "\"desired\": \"on\"");
        CHECK_PUBLISHED("md0", "\"in_force\": true");
        CHECK_PUBLISHED("zram0", "\"need\": \"required\"");
        CHECK_PUBLISHED("zram0", "\"desired\": \"on\"");

        /* Nothing changed: a reconcile writes and publishes nothing. */
        CHECK_INT(manager_reconcile(m), 0);
        CHECK_EVENTS("");

        /* Policy=latency: the raid1 is turned off, the required zram0 stays on. */
        set_config("[Manager]\nPolicy=latency\n");
        CHECK_INT(manager_reload(m, NULL), 0);
        CHECK_INT(flag_of("md0"), 0);
        CHECK_INT(flag_of("sda"), 0);
        CHECK_INT(flag_of("zram0"), 1);
        CHECK_EVENTS("applied md0 1 -> 0\nchanged md0\nchanged sda\nchanged vdb\nreloaded\n");
        CHECK_PUBLISHED("md0", "\"desired\": \"off\"");
        CHECK_PUBLISHED("md0", "\"in_force\": false");

        /* Somebody turns sda on and the required zram0 off behind the daemon's back: both are
         * put back. */
        put("sda", "queue/stable_writes", "1\n");
        put("zram0", "queue/stable_writes", "0\n");
        CHECK_INT(manager_reconcile(m), 0);
        CHECK_INT(flag_of("sda"), 0);
        CHECK_INT(flag_of("zram0"), 1);
        CHECK_EVENTS("applied sda 1 -> 0\napplied zram0 0 -> 1\n");

        /* An override "off" without force does not turn a required disk off, even when its flag
         * is found off: the refusal is told (once) and shown. */
        CHECK_INT(set_override(m, "zram0", SETTING_OFF, false), 0);
        CHECK_INT(flag_of("zram0"), 1);
        CHECK_EVENTS("apply failed zram0\nchanged zram0\n");
        CHECK_PUBLISHED("zram0", "\"desired\": \"on\"");
        CHECK_PUBLISHED("zram0", "\"refused\": true");
        CHECK_PUBLISHED("zram0", "\"scope\": \"runtime\"");
        put("zram0", "queue/stable_writes", "0\n");
        CHECK_INT(manager_reconcile(m), 0);
        CHECK_INT(flag_of("zram0"), 1);
        j = told_take(&events);
        CHECK(!strstr(j, "-> 0"));
        j = mfree(j);
        /* Only an explicit force turns it off. */
        CHECK_INT(set_override(m, "zram0", SETTING_OFF, true), 0);
        CHECK_INT(flag_of("zram0"), 0);
        CHECK_EVENTS("applied zram0 1 -> 0\nchanged zram0\n");
        CHECK_INT(reset_override(m, "zram0", &removed), 1);
        CHECK_CONTAINS(removed, "runtime override off (force) of zram0");
        removed = mfree(removed);
        CHECK_INT(flag_of("zram0"), 1);
        CHECK_EVENTS("applied zram0 0 -> 1\nchanged zram0\n");

        /* An override "on" of sda, by the name of its partition, and its reset. */
        CHECK_INT(set_override(m, "sda1", SETTING_ON, false), 0);
        CHECK_INT(flag_of("sda"), 1);
        CHECK_EVENTS("applied sda 0 -> 1\nchanged sda\n");
        CHECK_PUBLISHED("sda", "\"desired\": \"on\"");
        CHECK_PUBLISHED("sda", "\"in_force\": true");
        CHECK_INT(reset_override(m, "sda", &removed), 1);
        removed = mfree(removed);
        CHECK_INT(flag_of("sda"), 0);
        CHECK_EVENTS("applied sda 1 -> 0\nchanged sda\n");
        CHECK_INT(reset_override(m, "sda", &removed), 0);
        CHECK(!removed);
        /* The replies to names that are not disks: nothing is written. */
        CHECK(!manager_find_device(m, "sdz"));
        CHECK(!manager_find_device(m, "../sda"));
        CHECK_EVENTS("");

        /* A "change" uevent of sda: only sda is re-read, and put right. */
        put("sda", "queue/stable_writes", "1\n");
        put("vdb", "queue/stable_writes", "1\n"); /* no event of its own: not looked at */
        CHECK_INT(manager_reconcile_disks(m, (char *[]){ (char *) "sda", NULL }), 0);
        CHECK_INT(flag_of("sda"), 0);
        CHECK_INT(flag_of("vdb"), 1);
        CHECK_EVENTS("applied sda 1 -> 0\n");
        /* Apply now (stablepagesctl apply): the disk named, then the others. */
        CHECK_INT(manager_apply_device(m, "vdb", &res), 0);
        CHECK(res.changed);
        apply_result_done(&res);
        CHECK_INT(flag_of("vdb"), 0);
        CHECK_EVENTS("applied vdb 1 -> 0\n");

        /* Policy=observe: nothing is written any more. */
        set_config("[Manager]\nPolicy=observe\n");
        CHECK_INT(manager_reload(m, NULL), 0);
        CHECK_EVENTS("changed md0\nchanged sda\nchanged vdb\nchanged zram0\nreloaded\n");
        put("sda", "queue/stable_writes", "1\n");
        CHECK_INT(manager_reconcile(m), 0);
        CHECK_INT(flag_of("sda"), 1);
        CHECK_EVENTS("changed sda\n");
        /* A configuration with errors is refused, the one in force kept. */
        set_config("[Manager]\nPolicy=fastest\n");
        CHECK_INT(manager_reload(m, NULL), -EINVAL);
        CHECK_INT(m->engine.config.policy, POLICY_OBSERVE);
        CHECK_EVENTS("");

        /* zram0 goes away: removed, and no longer published. */
        tree_rm(root, "sys/block/zram0");
        CHECK_INT(manager_reconcile(m), 0);
        CHECK_EVENTS("removed zram0\n");
        CHECK_INT(manager_n_devices(m), 3);
        j = published("zram0");
        CHECK(!j);
        CHECK_PUBLISHED("vdb", "\"need\": \"none\"");

        m = manager_free(m);
        events = strv_free(events);
        fake_engine_done(&fe);
        return tests_finish();
}
