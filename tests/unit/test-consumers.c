/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/consumers.c: what every consumer of a disk took, on sysfs trees captured in guests
 * (dm-integrity in bitmap mode on Debian's 6.1.176, whose kernel declares nothing; on 6.1.192
 * and 6.12.117, whose kernels declare the need at the add) with the disk's flag history:
 *   - added with 0, then set to 1 (the udev rule on 6.1.176): the page cache took 0 at the
 *     add, a hazard, whatever the flag says now; a filesystem mounted after took 1;
 *   - added with 1, then set to 0 (forced): the page cache keeps 1, no hazard; a swap area
 *     activated after took 0, a hazard;
 *   - present before anything saw it (first sight "later"): assumed, said so; a consumer that
 *     started before the daemon saw it is dated by a history that never moved since the add;
 *   - no record: unknown, no hazard claimed either way;
 *   - kernels whose block device page cache never takes the flag (6.1 before 6.1.72, 6.2 to
 *     6.6.3), and loop and zram devices, whose page cache the kernel fixes at their creation;
 *   - the disks stacked on one, the JSON and the summary of status. */
#include <sys/stat.h>

#include "consumers.h"
#include "fake-sysfs.h"
#include "history.h"

#define T0 UINT64_C(1700000000000000)

static char *tmp;

/* A copy of the sysfs tree of fixture in tmp/NAME, with the runtime dir tmp/NAME-run. */
static char *copy_fixture(const char *fixture, const char *name) {
        _cleanup_free_ char *cmd =
                strdup_printf("cp -a '%s/%s/sys' '%s/%s'", FIXTURES_DIR, fixture, tmp, name);
        CHECK(cmd && system(cmd) == 0);
        return tree_path(tmp, name);
}

static void set_flag(const char *root, const char *disk, int v) {
        _cleanup_free_ char *rel = strdup_printf("block/%s/queue/stable_writes", disk);
        tree_put(root, rel, v ? "1\n" : "0\n");
}

/* The history of disk under run: "first=FIRST" then the changes given as "V USEC WRITER" lines. */
static void write_history(const char *run, const char *root, const char *disk, const char *first,
                          const char *changes) {
        _cleanup_free_ char *seq_rel = strdup_printf("block/%s/diskseq", disk), *seq = NULL,
                            *seq_path = tree_path(root, seq_rel), *rel = strdup_printf("history/%s", disk);
        CHECK_INT(read_full_file(seq_path, 4096, &seq, NULL), 0);
        _cleanup_free_ char *text = strdup_printf("version=1\ndisk=%s\ndiskseq=%s\ndevnum=0:0\nfirst=%s\n%s",
                                                  disk, strstrip(seq), first, changes ?: "");
        tree_put(run, rel, text);
}

/* An engine on the tree root (a copy of fixture's sys) with fixture's udev database. */
static int load(Engine *e, const char *fixture, const char *root, const char *run, const char *kernel) {
        _cleanup_free_ char *udev = strdup_printf("%s/%s/run/udev/data", FIXTURES_DIR, fixture);
        EngineOptions o = {
                .sysfs_root = root,
                .udev_data_dir = udev,
                .config_file = "/nonexistent/stablepages.conf",
                .dropin_dir = "/nonexistent/stablepages.conf.d",
                .runtime_dir = run,
                .state_dir = run,
                .kernel_release = kernel,
        };
        int r = engine_init(e, &o);
        if (r >= 0)
                r = engine_load_config(e);
        if (r >= 0)
                r = engine_scan(e);
        return r;
}

static const Consumer *find(const DeviceConsumers *c, ConsumerKind kind, const char *name) {
        for (size_t i = 0; i < c->n; i++)
                if (c->items[i].kind == kind && (!name || streq(c->items[i].name, name)))
                        return &c->items[i];
        return NULL;
}

/* 6.1.176: dm-integrity B added with 0 (the kernel declares nothing), then the rule set 1. */
static void test_added_0_then_set_1(void) {
        _cleanup_free_ char *root = copy_fixture("vm-6.1.0-50-dm-integrity-bitmap", "a"),
                            *run = tree_path(tmp, "a-run");
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(device_consumers_done) DeviceConsumers c = {};

        set_flag(root, "dm-0", 1);
        write_history(run, root, "dm-0", "0 add 1700000000000000 udev-applier",
                      "change=1 1700000000000100 udev-applier\n");
        CHECK_INT(load(&e, "vm-6.1.0-50-dm-integrity-bitmap", root, run, "6.1.176"), 0);
        EngineDevice *d = engine_find_disk(&e, "dm-0");
        CHECK(d);
        if (!d)
                return;
        CHECK_INT(d->class.need, NEED_REQUIRED);
        CHECK(d->class.in_force); /* what starts now takes */
        ConsumerMount mounts[] = {
                { .disk = "dm-0",
                  .target = "/mnt/t",
                  .fstype = "ext4",
                  .effective = true,
                  .origin = EFFECTIVE_OBSERVED,
                  .since_usec = T0 + 200 },
                { .disk = "dm-0",
                  .target = "/mnt/old",
                  .fstype = "ext4",
                  .effective = true,
                  .origin = EFFECTIVE_ASSUMED,
                  .since_usec = T0 + 300 },
        };
        ConsumerInputs in = { .mounts = mounts, .n_mounts = 2 };
        CHECK_INT(consumers_of(&e, d, &in, &c), 0);

        const Consumer *p = find(&c, CONSUMER_PAGE_CACHE, "/dev/dm-0");
        CHECK(p);
        if (p) {
                CHECK_INT(p->captured, 0);
                CHECK(!p->in_force);
                CHECK_INT(p->origin, CAPTURE_HISTORY);
                CHECK_INT(p->since_usec, T0);
                CHECK(p->hazard);
                CHECK_CONTAINS(p->note, "raw buffered writes to /dev/dm-0 go through a page cache that runs "
                                        "without stable writes (the kernel's flag was 0 at its add");
                CHECK_CONTAINS(p->note, "set to 1 at");
                CHECK_CONTAINS(p->note, "but dm-0 needs them (need required");
                CHECK_CONTAINS(p->note, "O_DIRECT");
                CHECK_CONTAINS(p->note, "made on it now, which takes the flag as it is now (on)");
        }
        const Consumer *m = find(&c, CONSUMER_FILESYSTEM, "/mnt/t");
        CHECK(m && m->captured == 1 && m->in_force && !m->hazard && m->origin == CAPTURE_OBSERVED);
        /* The flag is on, but the page cache runs without: shadow waits are wanted. */
        CHECK(disk_wants_shadows(d, &c));
        CHECK(!disk_wants_shadows(d, NULL));
        /* Mounted before the daemon saw it, and the flag moved since the add: assumed, said so. */
        m = find(&c, CONSUMER_FILESYSTEM, "/mnt/old");
        CHECK(m && m->captured == 1 && m->origin == CAPTURE_ASSUMED);
        if (m)
                CHECK_CONTAINS(m->note, "the flag moved since the disk was first seen");
        CHECK_INT(c.hazards, 1);

        _cleanup_free_ char *summary = consumers_summary(&c);
        CHECK_STR(summary, "cache:off!");

        /* loop0 below: its page cache is the kernel's at creation; dm-0 is stacked on it. */
        _cleanup_(device_consumers_done) DeviceConsumers l = {};
        d = engine_find_disk(&e, "loop0");
        CHECK(d);
        if (!d)
                return;
        CHECK_INT(consumers_of(&e, d, NULL, &l), 0);
        p = find(&l, CONSUMER_PAGE_CACHE, "/dev/loop0");
        CHECK(p && p->captured == 0 && p->origin == CAPTURE_KERNEL && !p->hazard);
        if (p)
                CHECK_CONTAINS(p->note, "loop_add() creates a loop device without stable writes");
        /* dm-0 stacked on loop0: what dm-0 took at its own add (0), its flag now 1. */
        p = find(&l, CONSUMER_HOLDER, "dm-0");
        CHECK(p && p->captured == 0 && p->origin == CAPTURE_HISTORY && !p->hazard);
        if (p)
                CHECK_CONTAINS(p->note, "off at its own add (the kernel's flag was 0 at its add");
        if (p)
                CHECK_CONTAINS(p->note, "its flag now on, what a consumer of it starting now takes");
}

/* 6.1.192 and 6.12.117: added with 1 (the kernel declares it), then forced to 0. */
static void test_added_1_then_set_0(const char *fixture, const char *kernel) {
        _cleanup_free_ char *name = strdup_printf("b-%s", kernel), *root = copy_fixture(fixture, name),
                            *run_rel = strdup_printf("%s-run", name), *run = tree_path(tmp, run_rel);
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(device_consumers_done) DeviceConsumers c = {};

        set_flag(root, "dm-0", 0);
        write_history(run, root, "dm-0", "1 add 1700000000000000 udev-applier",
                      "change=0 1700000000000100 stablepagesd\n");
        CHECK_INT(load(&e, fixture, root, run, kernel), 0);
        EngineDevice *d = engine_find_disk(&e, "dm-0");
        CHECK(d);
        if (!d)
                return;
        CHECK_INT(d->class.need, NEED_REQUIRED);
        CHECK(!d->class.in_force);
        ConsumerSwap swaps[] = {
                { .disk = "dm-0",
                  .path = "/dev/dm-0",
                  .captured = false,
                  .origin = EFFECTIVE_OBSERVED,
                  .since_usec = T0 + 200 },
        };
        ConsumerInputs in = { .swaps = swaps, .n_swaps = 1 };
        CHECK_INT(consumers_of(&e, d, &in, &c), 0);

        const Consumer *p = find(&c, CONSUMER_PAGE_CACHE, NULL);
        CHECK(p && p->captured == 1 && p->in_force && !p->hazard && p->origin == CAPTURE_HISTORY);
        if (p) {
                CHECK_CONTAINS(p->note, "on: the kernel's flag was 1 at its add");
                CHECK_CONTAINS(p->note, "set to 0 at");
        }
        const Consumer *s = find(&c, CONSUMER_SWAP, "/dev/dm-0");
        CHECK(s && s->captured == 0 && s->hazard && streq(s->what, "partition"));
        if (s)
                CHECK_CONTAINS(s->note,
                               "swap area /dev/dm-0 on dm-0 runs without stable writes (taken at swapon), "
                               "but dm-0 needs them (need required");
        CHECK_INT(c.hazards, 1);
        _cleanup_free_ char *summary = consumers_summary(&c);
        CHECK_STR(summary, "cache:on swap:off!");
        CHECK(disk_wants_shadows(d, NULL)); /* the flag is off */
}

/* Seen first after its add (the daemon started later, the rule did not run): assumed. */
static void test_present_before(void) {
        _cleanup_free_ char *root = copy_fixture("vm-6.12-dm-integrity-bitmap", "c"),
                            *run = tree_path(tmp, "c-run");
        ConsumerMount mounts[] = {
                { .disk = "dm-0",
                  .target = "/srv",
                  .fstype = "xfs",
                  .effective = true,
                  .origin = EFFECTIVE_ASSUMED,
                  .since_usec = T0 + 50 },
        };
        ConsumerInputs in = { .mounts = mounts, .n_mounts = 1 };

        for (int at_add = 0; at_add <= 1; at_add++) {
                _cleanup_(engine_done) Engine e = {};
                _cleanup_(device_consumers_done) DeviceConsumers c = {};

                write_history(run, root, "dm-0",
                              at_add ? "1 add 1700000000000000 udev-applier"
                                     : "1 later 1700000000000000 stablepagesd",
                              NULL);
                CHECK_INT(load(&e, "vm-6.12-dm-integrity-bitmap", root, run, "6.12.117"), 0);
                EngineDevice *d = engine_find_disk(&e, "dm-0");
                CHECK(d);
                if (!d)
                        return;
                CHECK_INT(consumers_of(&e, d, &in, &c), 0);
                const Consumer *p = find(&c, CONSUMER_PAGE_CACHE, NULL),
                               *m = find(&c, CONSUMER_FILESYSTEM, "/srv");
                CHECK(p && p->captured == 1 && !p->hazard);
                CHECK(m && m->captured == 1 && !m->hazard);
                if (!p || !m)
                        continue;
                if (at_add) {
                        /* The flag never moved since the add: whenever it was mounted, it took 1. */
                        CHECK_INT(p->origin, CAPTURE_HISTORY);
                        CHECK_INT(m->origin, CAPTURE_HISTORY);
                        CHECK_CONTAINS(m->note, "the flag has not moved since the disk's add");
                } else {
                        CHECK_INT(p->origin, CAPTURE_ASSUMED);
                        CHECK_CONTAINS(p->note, "assumed from its flag when first seen (1 at");
                        CHECK_CONTAINS(p->note, "by stablepagesd): the disk was added before");
                        CHECK_INT(m->origin, CAPTURE_ASSUMED);
                        CHECK_CONTAINS(m->note, "but the disk was added before");
                }
        }
}

/* No history: nothing says what the page cache took. */
static void test_no_record(void) {
        _cleanup_free_ char *root = tree_path(FIXTURES_DIR, "vm-6.1.0-50-dm-integrity-bitmap/sys"),
                            *run = tree_path(tmp, "d-run");
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(device_consumers_done) DeviceConsumers c = {};
        char *buf = NULL;
        size_t size = 0;

        CHECK_INT(load(&e, "vm-6.1.0-50-dm-integrity-bitmap", root, run, "6.1.176"), 0);
        EngineDevice *d = engine_find_disk(&e, "dm-0");
        CHECK(d);
        if (!d)
                return;
        CHECK_INT(consumers_of(&e, d, NULL, &c), 0);
        const Consumer *p = find(&c, CONSUMER_PAGE_CACHE, NULL);
        CHECK(p && p->captured == -1 && !p->in_force && !p->hazard && p->origin == CAPTURE_UNKNOWN);
        if (p)
                CHECK_CONTAINS(p->note, "unknown: no record of the flag at the disk's add");
        CHECK_INT(c.hazards, 0);

        FILE *f = open_memstream(&buf, &size);
        JsonWriter w;
        CHECK(f);
        if (!f)
                return;
        json_init(&w, f, false);
        json_object_begin(&w);
        consumers_json(&c, &w);
        json_object_end(&w);
        fclose(f);
        CHECK_CONTAINS(
                buf, "\"kind\":\"page-cache\",\"name\":\"/dev/dm-0\",\"type\":null,\"captured\":\"unknown\","
                     "\"in_force\":null,\"origin\":\"unknown\",\"since_usec\":null");
        free(buf);
}

/* Kernels whose page cache never takes the flag, and the bounds of those that take it at the add. */
static void test_kernel_bounds(void) {
        CHECK_INT(page_cache_capture(KERNEL_VERSION(5, 4, 0)), PAGE_CACHE_EACH_STORE);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(5, 10, 0)), PAGE_CACHE_NEVER);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(5, 15, 200)), PAGE_CACHE_NEVER);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(6, 1, 71)), PAGE_CACHE_NEVER);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(6, 1, 72)), PAGE_CACHE_AT_ADD);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(6, 1, 176)), PAGE_CACHE_AT_ADD);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(6, 2, 0)), PAGE_CACHE_NEVER);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(6, 6, 3)), PAGE_CACHE_NEVER);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(6, 6, 4)), PAGE_CACHE_AT_ADD);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(6, 7, 0)), PAGE_CACHE_AT_ADD);
        CHECK_INT(page_cache_capture(KERNEL_VERSION(6, 12, 117)), PAGE_CACHE_AT_ADD);

        /* On 6.1.71 the page cache of the required dm-0 runs without, whatever its history. */
        _cleanup_free_ char *root = copy_fixture("vm-6.1-dm-integrity-bitmap", "e"),
                            *run = tree_path(tmp, "e-run");
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(device_consumers_done) DeviceConsumers c = {};
        write_history(run, root, "dm-0", "1 add 1700000000000000 udev-applier", NULL);
        CHECK_INT(load(&e, "vm-6.1-dm-integrity-bitmap", root, run, "6.1.71"), 0);
        EngineDevice *d = engine_find_disk(&e, "dm-0");
        CHECK(d);
        if (!d)
                return;
        CHECK_INT(consumers_of(&e, d, NULL, &c), 0);
        const Consumer *p = find(&c, CONSUMER_PAGE_CACHE, NULL);
        CHECK(p && p->captured == 0 && p->hazard && p->origin == CAPTURE_KERNEL);
        if (p) {
                CHECK_CONTAINS(p->note,
                               "raw buffered writes to /dev/dm-0 never wait for writeback on this kernel");
                CHECK_CONTAINS(p->note, "kernel 6.7, 6.6.4, 6.1.72 or later");
        }
}

/* zram adds its disks with stable writes: its page cache took them, whatever the history. */
static void test_zram(void) {
        _cleanup_free_ char *root = tree_path(FIXTURES_DIR, "vm-6.12-zram/sys"),
                            *run = tree_path(tmp, "f-run");
        _cleanup_(engine_done) Engine e = {};
        _cleanup_(device_consumers_done) DeviceConsumers c = {};

        CHECK_INT(load(&e, "vm-6.12-zram", root, run, "6.12.117"), 0);
        EngineDevice *d = engine_find_disk(&e, "zram0");
        CHECK(d);
        if (!d)
                return;
        CHECK_INT(consumers_of(&e, d, NULL, &c), 0);
        const Consumer *p = find(&c, CONSUMER_PAGE_CACHE, "/dev/zram0");
        CHECK(p && p->captured == 1 && p->in_force && !p->hazard && p->origin == CAPTURE_KERNEL);
        if (p)
                CHECK_CONTAINS(p->note, "zram_add() sets stable writes before it adds the disk");
        /* Required and in force for every consumer: no shadow waits. */
        CHECK_INT(d->class.need, NEED_REQUIRED);
        CHECK(!disk_wants_shadows(d, &c));
        /* A disk that needs none: never, whatever its flag. */
        EngineDevice *loop = engine_find_disk(&e, "loop0");
        CHECK(loop && loop->class.need == NEED_NONE && !loop->class.in_force);
        if (loop)
                CHECK(!disk_wants_shadows(loop, NULL));
}

int main(void) {
        tmp = tree_new();
        test_added_0_then_set_1();
        test_added_1_then_set_0("vm-6.1-dm-integrity-bitmap", "6.1.192");
        test_added_1_then_set_0("vm-6.12-dm-integrity-bitmap", "6.12.117");
        test_present_before();
        test_no_record();
        test_kernel_bounds();
        test_zram();
        tree_free(tmp);
        return tests_finish();
}
