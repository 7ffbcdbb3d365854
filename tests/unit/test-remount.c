/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure safety checks of the unmount + mount cycle (daemon/core/remount-check.c) on mount
 * tables written as /proc/PID/mountinfo text: what is refused and why, the options a
 * filesystem is mounted again with, propagation, swap files, loop devices, unit names; the
 * directories a mount point may lie below (remount_check_dir); whether a mount unit's files mount
 * what is mounted (remount_check_unit_file); the journal of cycles in flight
 * (daemon/core/remount-journal.c): its text both ways with the disk's and the filesystem's
 * identity, an earlier version's, hostile and broken journals, its files, the filesystem UUID
 * from a udev database. */
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "remount-check.h"
#include "remount-journal.h"
#include "tests.h"
#include "util.h"

/* A table like this machine's (ext4 root on vda, loop filesystems under /tmp, btrfs). */
static const char MOUNTINFO[] =
        "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n"
        "22 27 0:21 / /proc rw,relatime shared:2 - proc proc rw\n"
        "40 27 254:1 / /usr rw,relatime shared:3 - ext4 /dev/vdb rw\n"
        "41 27 254:2 / /boot rw,relatime shared:4 - ext4 /dev/vdc rw\n"
        "48 27 7:200 / /tmp/t/idle rw,nosuid,relatime shared:10 - ext4 /dev/loop200 rw,errors=remount-ro\n"
        "49 27 7:201 / /tmp/t/bound rw,relatime shared:11 - ext4 /dev/loop201 rw\n"
        "50 27 7:201 /sub /tmp/t/bind rw,relatime shared:11 - ext4 /dev/loop201 rw\n"
        "51 27 7:202 / /tmp/t/parent rw,relatime - xfs /dev/loop202 "
        "rw,inode64,logbufs=8,logbsize=32k,noquota\n"
        "52 51 0:50 / /tmp/t/parent/sub rw,relatime - tmpfs tmpfs rw,size=1024k\n"
        "53 27 0:40 / /tmp/t/btrfs rw,relatime master:7 - btrfs /dev/loop203 "
        "rw,discard=async,space_cache=v2,subvolid=5,subvol=/\n"
        "54 27 7:204 / /tmp/t/twice rw,relatime - ext4 /dev/loop204 rw\n"
        "55 27 7:204 / /tmp/t/twice2 rw,relatime - ext4 /dev/loop204 rw\n"
        "56 27 7:205 / /tmp/t/over rw,relatime unbindable - ext4 /dev/loop205 rw\n"
        "57 56 0:51 / /tmp/t/over rw,relatime - tmpfs tmpfs rw\n"
        "58 27 7:206 / /tmp/my\\040disk rw,noexec,relatime - ext4 /dev/loop206 rw\n";

static struct libmnt_table *table_from_text(const char *text) {
        char path[] = "/tmp/test-remount.XXXXXX";
        int fd = mkstemp(path);
        struct libmnt_table *t = NULL;

        if (fd < 0)
                return NULL;
        if (write(fd, text, strlen(text)) == (ssize_t) strlen(text))
                t = mnt_new_table_from_file(path);
        close(fd);
        unlink(path);
        return t;
}

/* Runs the table check for mount id; returns the reason (owned) or NULL when it passes. */
static char *table_reason(struct libmnt_table *t, int id) {
        RemountPlan p = {};
        char *reason = NULL;

        if (remount_plan_from_table(t, id, 0, &p) < 0)
                return strdup("no such mount");
        if (remount_check_table(t, &p, &reason) == 0)
                reason = NULL;
        remount_plan_done(&p);
        return reason;
}

static void test_plan(struct libmnt_table *t) {
        RemountPlan p = {};
        char *options;

        CHECK_INT(remount_plan_from_table(t, 48, 0, &p), 0);
        CHECK_INT(p.parent_id, 27);
        CHECK_INT(p.devnum, makedev(7, 200));
        CHECK_INT(p.source_devnum, makedev(7, 200));
        CHECK_STR(p.source, "/dev/loop200");
        CHECK_STR(p.target, "/tmp/t/idle");
        CHECK_STR(p.fstype, "ext4");
        CHECK_STR(p.root, "/");
        CHECK_STR(p.vfs_options, "rw,nosuid,relatime");
        CHECK_STR(p.fs_options, "rw,errors=remount-ro");
        CHECK_INT(p.propagation, MS_SHARED);
        CHECK_INT(p.peer_group, 10);
        options = remount_plan_options(&p);
        CHECK_STR(options, "rw,nosuid,relatime,errors=remount-ro");
        free(options);
        remount_plan_done(&p);

        /* btrfs: the superblock's anonymous device is not the block device. */
        CHECK_INT(remount_plan_from_table(t, 53, makedev(7, 203), &p), 0);
        CHECK_INT(p.devnum, makedev(0, 40));
        CHECK_INT(p.source_devnum, makedev(7, 203));
        CHECK_INT(p.propagation, MS_SLAVE);
        CHECK_INT(p.peer_group, 0);
        options = remount_plan_options(&p);
        CHECK_STR(options, "rw,relatime,discard=async,space_cache=v2,subvolid=5,subvol=/");
        free(options);
        remount_plan_done(&p);

        CHECK_INT(remount_plan_from_table(t, 51, 0, &p), 0);
        CHECK_INT(p.propagation, 0);
        options = remount_plan_options(&p);
        CHECK_STR(options, "rw,relatime,inode64,logbufs=8,logbsize=32k,noquota");
        free(options);
        remount_plan_done(&p);

        /* Escaped target. */
        CHECK_INT(remount_plan_from_table(t, 58, 0, &p), 0);
        CHECK_STR(p.target, "/tmp/my disk");
        remount_plan_done(&p);

        CHECK_INT(remount_plan_from_table(t, 999, 0, &p), -ENOENT);
}

static void test_table(struct libmnt_table *t) {
        char *r;

        CHECK(!(r = table_reason(t, 48))); /* idle, alone */
        free(r);
        CHECK(!(r = table_reason(t, 53)));
        free(r);
        CHECK(!(r = table_reason(t, 58)));
        free(r);

        /* A bind mount of a directory of the filesystem: another root, same superblock. */
        r = table_reason(t, 49);
        CHECK_CONTAINS(r, "its directory /sub is bind-mounted on /tmp/t/bind");
        free(r);
        /* ... and from the bind mount's side: the original is another mount. */
        r = table_reason(t, 50);
        CHECK_CONTAINS(r, "the filesystem is also mounted on /tmp/t/bound");
        free(r);
        /* The same device mounted twice: one superblock, two mounts. */
        r = table_reason(t, 54);
        CHECK_CONTAINS(r, "also mounted on /tmp/t/twice2");
        free(r);
        /* Submounts. */
        r = table_reason(t, 51);
        CHECK_CONTAINS(r, "it has a submount on /tmp/t/parent/sub");
        free(r);
        r = table_reason(t, 56);
        CHECK_CONTAINS(r, "another filesystem is mounted over it on /tmp/t/over");
        free(r);
        /* The root has submounts anyway (and is refused by its name first). */
        r = table_reason(t, 27);
        CHECK_CONTAINS(r, "submount");
        free(r);
}

static void test_target(void) {
        char *never[] = { (char *) "/srv", (char *) "/tmp/t/idle", NULL };
        char *r = NULL;

        CHECK_INT(remount_check_target("/", NULL, &r), 1);
        CHECK_CONTAINS(r, "/ is never unmounted (the root filesystem)");
        free(r);
        CHECK_INT(remount_check_target("/usr", NULL, &r), 1);
        CHECK_CONTAINS(r, "/usr is never unmounted");
        free(r);
        CHECK_INT(remount_check_target("/boot", never, &r), 1);
        free(r);
        CHECK_INT(remount_check_target("/tmp/t/idle", never, &r), 1);
        CHECK_CONTAINS(r, "listed in NeverRemount=");
        free(r);
        r = NULL;
        CHECK_INT(remount_check_target("/srv/data", never, &r), 0); /* only the path itself */
        CHECK_INT(remount_check_target("/usrx", never, &r), 0);
        CHECK_INT(remount_check_target("/boot/efi", NULL, &r), 0);
        CHECK(!r);

        CHECK_INT(remount_check_fstype("fuseblk", &r), 1);
        free(r);
        r = NULL;
        CHECK_INT(remount_check_fstype("ext4", &r), 0);
        CHECK(!r);
}

static void test_swaps_loops(void) {
        const char *swaps = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
                            "/dev/zram0                              partition\t4194300\t\t0\t\t100\n"
                            "/tmp/t/idle/swap\\040file                file\t\t65532\t\t0\t\t-2\n";
        char *r = NULL;

        CHECK_INT(remount_check_swaps(swaps, "/tmp/t/idle", &r), 1);
        CHECK_CONTAINS(r, "active swap file /tmp/t/idle/swap file");
        free(r);
        r = NULL;
        CHECK_INT(remount_check_swaps(swaps, "/tmp/t/idl", &r), 0); /* a prefix is not a parent */
        CHECK_INT(remount_check_swaps(swaps, "/tmp/t/other", &r), 0);
        CHECK_INT(remount_check_swaps("Filename Type Size Used Priority\n", "/", &r), 0);
        CHECK_INT(remount_check_swaps("", "/x", &r), 0);
        CHECK(!r);

        CHECK_INT(remount_check_loop_backing("loop7", "/tmp/t/idle/img", "/tmp/t/idle", &r), 1);
        CHECK_CONTAINS(r, "backing file of /dev/loop7");
        free(r);
        r = NULL;
        CHECK_INT(remount_check_loop_backing("loop7", "/tmp/t/idle2/img", "/tmp/t/idle", &r), 0);
        CHECK_INT(remount_check_loop_backing("loop7", "", "/tmp/t/idle", &r), 0);
        CHECK_INT(remount_check_loop_autoclear("/dev/loop7", 0, &r), 0);
        CHECK(!r);
        CHECK_INT(remount_check_loop_autoclear("/dev/loop7", 1, &r), 1);
        CHECK_CONTAINS(r, "autoclear");
        free(r);
}

static void test_options(void) {
        CHECK(remount_options_equal("rw,relatime,errors=remount-ro", "errors=remount-ro,rw,relatime"));
        CHECK(!remount_options_equal("rw,relatime", "rw,noatime"));
        CHECK(!remount_options_equal("rw,relatime", "rw,relatime,nosuid"));
        CHECK(!remount_options_equal("rw,errors=remount-ro", "rw,errors=panic"));
        CHECK(remount_options_equal("", ""));
        CHECK(remount_options_equal("context=\"system_u:object_r:x,y\",rw",
                                    "rw,context=\"system_u:object_r:x,y\""));
}

/* reason is NULL (the check passed); else it is printed and freed. */
#define CHECK_PASSES(reason)                                                                                \
        do {                                                                                                \
                char *_r = (reason);                                                                        \
                if (_r) {                                                                                   \
                        fprintf(stderr, "%s:%d: refused: %s\n", __FILE__, __LINE__, _r);                    \
                        tests_failed++;                                                                     \
                        free(_r);                                                                           \
                }                                                                                           \
        } while (0)

/* reason (freed) says needle. */
#define CHECK_REFUSED(reason, needle)                                                                       \
        do {                                                                                                \
                char *_r = (reason);                                                                        \
                CHECK_CONTAINS(_r, needle);                                                                 \
                free(_r);                                                                                   \
        } while (0)

/* The refusal of a unit's files against mount id of t (what resolves to source_devnum
 * unless what_devnum says otherwise), NULL when it mounts it as it is. */
static char *unit_reason(struct libmnt_table *t, int id, dev_t source, const char *text, dev_t what_devnum) {
        RemountPlan p = {};
        RemountUnitFile u = {};
        char *reason = NULL;
        int r;

        if (remount_plan_from_table(t, id, source, &p) < 0)
                return strdup("no such mount");
        r = remount_unit_file_parse(text, &u, &reason);
        if (r == 0)
                r = remount_check_unit_file(&p, "x.mount", &u, what_devnum ?: source, &reason);
        if (r == 0)
                reason = NULL;
        remount_unit_file_done(&u);
        remount_plan_done(&p);
        return reason;
}

static void test_unit_files(struct libmnt_table *t) {
        dev_t idle = makedev(7, 200), myd = makedev(7, 206);

        /* /tmp/t/idle: rw,nosuid,relatime; superblock rw,errors=remount-ro. A generated fstab
         * unit that says so, with its userspace options and a drop-in overriding Options=. */
        static const char fragment[] = "# Automatically generated by systemd-fstab-generator\n\n"
                                       "[Unit]\nDocumentation=man:fstab(5)\nOptions=ignored\n\n"
                                       "[Mount]\nWhat=/dev/disk/by-uuid/5b9a\nWhere=/tmp/t/idle\n"
                                       "Type=ext4\nOptions=defaults,nosuid,errors=remount-ro,nofail,"
                                       "x-systemd.device-timeout=3\n";
        CHECK_PASSES(unit_reason(t, 48, idle, fragment, 0));
        /* Another device there than the unit mounts: a hand mount over an fstab mount point. */
        CHECK_REFUSED(
                unit_reason(t, 48, idle, fragment, makedev(254, 16)),
                "its unit x.mount would mount /dev/disk/by-uuid/5b9a (254:16), not /dev/loop200 (7:200)");
        CHECK_REFUSED(unit_reason(t, 48, idle, "[Mount]\nWhere=/tmp/t/idle\n", 0),
                      "would mount nothing (it has no What=)");
        /* nosuid given at run time (or lost from the unit): the unit would mount it without. */
        CHECK_REFUSED(unit_reason(t, 48, idle, "[Mount]\nWhat=/dev/loop200\nOptions=errors=remount-ro\n", 0),
                      "would mount it without nosuid, it is mounted with it now");
        /* /tmp/my disk: rw,noexec,relatime, superblock rw; a unit with nodev, with noatime, another type. */
        CHECK_REFUSED(unit_reason(t, 58, myd, "[Mount]\nWhat=/dev/loop206\nOptions=noexec,nodev\n", 0),
                      "would mount it with nodev, it is mounted without it now");
        CHECK_REFUSED(unit_reason(t, 58, myd, "[Mount]\nWhat=/dev/loop206\nOptions=noexec,noatime\n", 0),
                      "would mount it with noatime, it is mounted with relatime");
        CHECK_REFUSED(unit_reason(t, 58, myd, "[Mount]\nWhat=/dev/loop206\nType=xfs\nOptions=noexec\n", 0),
                      "would mount it as xfs, it is ext4");
        CHECK_PASSES(unit_reason(t, 58, myd,
                                 "[Mount]\nWhat=/dev/loop206\nType=auto\nOptions=rw,noexec,relatime\n", 0));
        /* A filesystem option its superblock does not show, and sync (a superblock flag). */
        CHECK_REFUSED(
                unit_reason(t, 58, myd, "[Mount]\nWhat=/dev/loop206\nOptions=noexec,data=journal\n", 0),
                "would mount it with data=journal, which its filesystem does not show now (rw)");
        CHECK_REFUSED(unit_reason(t, 58, myd, "[Mount]\nWhat=/dev/loop206\nOptions=noexec,sync\n", 0),
                      "would mount it with sync, it is mounted without it now");
        /* Drop-ins: later files override, an empty assignment resets; a continued line. */
        RemountUnitFile u = {};
        char *why = NULL;
        CHECK_INT(remount_unit_file_parse("[Mount]\nWhat=/dev/a\nOptions=ro\n", &u, &why), 0);
        CHECK_INT(remount_unit_file_parse("[Mount]\n  Options = nosuid,\\\nnodev  \nWhat=\n", &u, &why), 0);
        CHECK(!u.what);
        CHECK_STR(u.options, "nosuid, nodev");
        /* A specifier is not evaluated here: refused with its name; "%%" is a percent sign. */
        CHECK_INT(remount_unit_file_parse("[Mount]\nWhat=/dev/disk/by-label/a%%b\n", &u, &why), 0);
        CHECK_STR(u.what, "/dev/disk/by-label/a%b");
        CHECK_INT(remount_unit_file_parse("[Mount]\nWhat=/dev/%I\n", &u, &why), 1);
        CHECK_CONTAINS(why, "its What=/dev/%I uses a specifier (%I)");
        free(why);
        remount_unit_file_done(&u);
}

static void test_propagation(void) {
        unsigned long s[3];

        CHECK_INT(remount_propagation_steps(MS_SHARED, MS_SHARED, s), 0);
        CHECK_INT(remount_propagation_steps(0, 0, s), 0);
        CHECK_INT(remount_propagation_steps(0, MS_SHARED, s), 1); /* private under a shared parent */
        CHECK_INT(s[0], MS_PRIVATE);
        CHECK_INT(remount_propagation_steps(MS_SHARED, 0, s), 1);
        CHECK_INT(s[0], MS_SHARED);
        CHECK_INT(remount_propagation_steps(MS_SHARED, MS_SHARED | MS_SLAVE, s), 2);
        CHECK_INT(s[0], MS_PRIVATE);
        CHECK_INT(s[1], MS_SHARED);
        CHECK_INT(remount_propagation_steps(MS_SLAVE, MS_SHARED, s), 1);
        CHECK_INT(s[0], MS_SLAVE);
        CHECK_INT(remount_propagation_steps(MS_SLAVE | MS_SHARED, MS_SHARED, s), 2);
        CHECK_INT(s[0], MS_SLAVE);
        CHECK_INT(s[1], MS_SHARED);
        CHECK_INT(remount_propagation_steps(MS_UNBINDABLE, MS_SHARED, s), 1);
        CHECK_INT(s[0], MS_UNBINDABLE);

        CHECK_INT(remount_optional_field("shared:5 master:3", "shared"), 5);
        CHECK_INT(remount_optional_field("shared:5 master:3", "master"), 3);
        CHECK_INT(remount_optional_field("master:12 propagate_from:2", "shared"), 0);
        CHECK_INT(remount_optional_field(NULL, "shared"), 0);

        CHECK_INT(remount_propagation_from_fields("shared:5 master:3"), MS_SHARED | MS_SLAVE);
        CHECK_INT(remount_propagation_from_fields("master:3"), MS_SLAVE);
        CHECK_INT(remount_propagation_from_fields("unbindable"), MS_UNBINDABLE);
        CHECK_INT(remount_propagation_from_fields(""), 0);
        CHECK_INT(remount_propagation_from_fields(NULL), 0);
}

static void test_unit_names(void) {
        static const struct {
                const char *path, *unit;
        } cases[] = {
                { "/", "-.mount" },
                { "/srv", "srv.mount" },
                { "/srv/data/", "srv-data.mount" },
                { "//srv//./data", "srv-data.mount" },
                { "/home/my disk", "home-my\\x20disk.mount" },
                { "/var/lib/a-b", "var-lib-a\\x2db.mount" },
                { "/.hidden/x.y", "\\x2ehidden-x.y.mount" },
                { "/mnt/ä", "mnt-\\xc3\\xa4.mount" },
        };
        char *u = NULL;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                CHECK_INT(remount_unit_name_from_path(cases[i].path, &u), 0);
                CHECK_STR(u, cases[i].unit);
                free(u);
                u = NULL;
        }
        CHECK_INT(remount_unit_name_from_path("relative", &u), -EINVAL);
        CHECK_INT(remount_unit_name_from_path("/a/../b", &u), -EINVAL);
}

static void test_dirs(void) {
        static const struct {
                uid_t uid;
                mode_t mode;
                uid_t child_uid;
                const char *reason; /* a part of the refusal, NULL: allowed */
        } cases[] = {
                { 0, S_IFDIR | 0755, 0, NULL },
                { 0, S_IFDIR | 0700, 1000, NULL }, /* root's: whoever owns the child */
                { 0, S_IFDIR | 01777, 0, NULL },   /* /tmp, with a child of root's */
                { 0, S_IFDIR | 01777, 1000, "belongs to UID 1000, who could rename it" },
                { 0, S_IFDIR | 01777, (uid_t) -1, "cannot be seen while it is mounted" },
                { 0, S_IFDIR | 0777, 0, "writable by every user (mode 0777)" },
                { 0, S_IFDIR | 0775, 0, "writable by its group (mode 0775)" },
                { 1000, S_IFDIR | 0755, 0, "/srv/p belongs to UID 1000, who could replace cyc" },
                { 0, S_IFLNK | 0777, 0, "is not a directory" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *reason = NULL;
                int r = remount_check_dir("/srv/p", cases[i].uid, cases[i].mode, "cyc", cases[i].child_uid,
                                          &reason);
                CHECK_INT(r, cases[i].reason ? 1 : 0);
                if (cases[i].reason)
                        CHECK(reason && strstr(reason, cases[i].reason));
                free(reason);
        }
}

static void test_journal(struct libmnt_table *t) {
        RemountJournal j = { .old_flag = 1,
                             .new_flag = 0,
                             .stage = REMOUNT_STAGE_MOUNTING_NEW,
                             .parent_dev = makedev(254, 0),
                             .parent_ino = 1234567890123ULL,
                             .sb_ino = 74714,
                             .unit_file = true };
        RemountJournal back = {};
        char *text, *bad = NULL;

        CHECK_INT(remount_plan_from_table(t, 58, makedev(7, 206), &j.plan), 0); /* "/tmp/my disk" */
        j.disk = strdup("loop206");
        j.unit = strdup("tmp-my\\x20disk.mount");
        j.diskseq = 4711;
        j.fs_uuid = strdup("5b9a1e0c-7d3f-4c2a-9e61-0b5e2f8a7c11");
        text = remount_journal_format(&j);
        CHECK(text && strstr(text, "target=/tmp/my\\040disk\n") && strstr(text, "stage=mounting-new\n") &&
              strstr(text, "diskseq=4711\n"));
        CHECK_INT(remount_journal_parse(text, &back, &bad), 0);
        CHECK(back.identified && back.diskseq == 4711);
        CHECK_STR(back.fs_uuid, "5b9a1e0c-7d3f-4c2a-9e61-0b5e2f8a7c11");
        CHECK_STR(back.plan.target, "/tmp/my disk");
        CHECK_STR(back.unit, "tmp-my\\x20disk.mount");
        CHECK_STR(back.disk, "loop206");
        CHECK_STR(back.plan.vfs_options, "rw,noexec,relatime");
        CHECK_INT(back.plan.id, 58);
        CHECK_INT(back.plan.parent_id, 27);
        CHECK(back.plan.source_devnum == makedev(7, 206));
        CHECK(back.parent_dev == makedev(254, 0) && back.parent_ino == 1234567890123ULL &&
              back.sb_ino == 74714);
        CHECK(back.unit_file && back.old_flag == 1 && back.new_flag == 0);
        CHECK_INT(back.stage, REMOUNT_STAGE_MOUNTING_NEW);
        CHECK_INT(remount_journal_mount_flag(&back), 0);
        back.stage = REMOUNT_STAGE_MOUNTING_OLD;
        CHECK_INT(remount_journal_mount_flag(&back), 1);
        back.stage = REMOUNT_STAGE_MOUNTED;
        CHECK_INT(remount_journal_mount_flag(&back), 0);
        /* Mounted again after the fallback: the old state, also once read back. */
        back.stage = REMOUNT_STAGE_MOUNTED_OLD;
        CHECK_INT(remount_journal_mount_flag(&back), 1);
        free(text);
        text = remount_journal_format(&back);
        remount_journal_done(&back);
        CHECK(text && strstr(text, "stage=mounted-old\n"));
        CHECK_INT(remount_journal_parse(text, &back, &bad), 0);
        CHECK_INT(back.stage, REMOUNT_STAGE_MOUNTED_OLD);
        CHECK(remount_journal_fell_back(&back) && remount_journal_mount_flag(&back) == 1);
        remount_journal_done(&back);

        /* A newline or a backslash in a path cannot add or change a field. */
        free(j.plan.target);
        j.plan.target = strdup("/srv/x\nstage=prepared\\");
        free(text);
        text = remount_journal_format(&j);
        CHECK_INT(remount_journal_parse(text, &back, NULL), 0);
        CHECK_STR(back.plan.target, "/srv/x\nstage=prepared\\");
        CHECK_INT(back.stage, REMOUNT_STAGE_MOUNTING_NEW);
        remount_journal_done(&back);

        /* Broken journals are refused, with the line. */
        static const char *const broken[] = {
                "version=2\n",  "stage=somewhere\n", "mount_id=-3\n",
                "old_flag=2\n", "parent_ino=-1\n",   "no equals sign\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(broken); i++) {
                char *copy = strdup_printf("%s%s", text, broken[i]);
                CHECK_INT(remount_journal_parse(copy, &back, &bad), -EBADMSG);
                CHECK(bad && strneq(bad, broken[i], strlen(bad)));
                free(bad);
                bad = NULL;
                free(copy);
        }
        CHECK_INT(remount_journal_parse("version=1\ntarget=/x\n", &back, &bad), -EBADMSG);
        CHECK_STR(bad, "a required field is missing");
        free(bad);
        /* Unknown keys (a newer version) are ignored. */
        char *newer = strdup_printf("%sfuture_key=1\n", text);
        CHECK_INT(remount_journal_parse(newer, &back, NULL), 0);
        remount_journal_done(&back);
        free(newer);
        /* A journal of the version before says nothing of the disk's identity: read, but not
         * identified; diskseq=0 (a kernel without) is an identity all the same. */
        char *older = strdup(text);
        char *at = strstr(older, "diskseq=");
        memmove(at, strchr(at, '\n') + 1, strlen(strchr(at, '\n') + 1) + 1);
        at = strstr(older, "fs_uuid=");
        memmove(at, strchr(at, '\n') + 1, strlen(strchr(at, '\n') + 1) + 1);
        CHECK_INT(remount_journal_parse(older, &back, NULL), 0);
        CHECK(!back.identified && back.diskseq == 0 && !back.fs_uuid);
        remount_journal_done(&back);
        free(older);
        char *noseq = strdup_printf("%sdiskseq=0\nfs_uuid=\n", text);
        CHECK_INT(remount_journal_parse(noseq, &back, NULL), 0);
        CHECK(back.identified && back.diskseq == 0 && !back.fs_uuid);
        remount_journal_done(&back);
        free(noseq);

        /* Files: saved, listed, loaded, locked, removed. */
        char dir[] = "/tmp/test-remount-journal.XXXXXX";
        char **list = NULL, *path;
        CHECK(mkdtemp(dir));
        path = remount_journal_path(dir, "/srv/my data");
        CHECK(path && strstr(path, "/cycles/srv-my\\x20data.mount"));
        CHECK_INT(remount_journal_save(path, &j), 0);
        CHECK_INT(remount_journal_list(dir, &list), 0);
        CHECK(strv_length(list) == 1 && streq(list[0], path));
        CHECK_INT(remount_journal_load(list[0], &back), 0);
        CHECK_STR(back.disk, "loop206");
        remount_journal_done(&back);
        int fd = remount_journal_lock(path);
        CHECK(fd >= 0);
        list = strv_free(list);
        CHECK_INT(remount_journal_list(dir, &list), 0); /* the lock file is not a journal */
        CHECK(strv_length(list) == 1);
        close(fd);
        CHECK_INT(remount_journal_remove(path), 0);
        CHECK_INT(remount_journal_load(path, &back), -ENOENT);
        list = strv_free(list);
        CHECK_INT(remount_journal_list(dir, &list), 0);
        CHECK(!list);
        /* Set aside: out of cycles/ (no replay finds it), its lock gone. */
        char *aside = NULL, *lock = strdup_printf("%s.lock", path);
        CHECK_INT(remount_journal_save(path, &j), 0);
        fd = remount_journal_lock(path);
        CHECK(fd >= 0);
        close(fd);
        CHECK_INT(remount_journal_set_aside(path, dir, &aside), 0);
        CHECK(aside && strstr(aside, "/cycles-refused/srv-my\\x20data.mount."));
        CHECK_INT(remount_journal_load(aside, &back), 0);
        CHECK_STR(back.disk, "loop206");
        remount_journal_done(&back);
        CHECK(access(path, F_OK) < 0 && access(lock, F_OK) < 0);
        list = strv_free(list);
        CHECK_INT(remount_journal_list(dir, &list), 0);
        CHECK(!list);
        char *refused = strdup_printf("%s/cycles-refused", dir);
        CHECK(unlink(aside) == 0 && rmdir(refused) == 0);
        free(refused);
        free(aside);
        free(lock);
        /* The filesystem UUID from a udev database (E: lines); none without an entry. */
        char *udev = strdup_printf("%s/udev", dir), *entry = strdup_printf("%s/b7:206", udev), *uuid = NULL;
        CHECK(mkdir(udev, 0755) == 0);
        const char *db = "S:disk/by-uuid/abc\nE:ID_FS_TYPE=ext4\nE:ID_FS_UUID=abc-1\nG:x\n";
        CHECK_INT(write_file_atomic(entry, db, strlen(db), 0644), 0);
        CHECK_INT(remount_fs_uuid(udev, makedev(7, 206), &uuid), 1);
        CHECK_STR(uuid, "abc-1");
        free(uuid);
        CHECK_INT(remount_fs_uuid(udev, makedev(7, 207), &uuid), 0);
        CHECK(!uuid);
        CHECK_INT(remount_fs_uuid("", makedev(7, 206), &uuid), 0);
        CHECK(unlink(entry) == 0 && rmdir(udev) == 0);
        free(entry);
        free(udev);
        char *cycles = strdup_printf("%s/cycles", dir);
        CHECK(rmdir(cycles) == 0 && rmdir(dir) == 0);
        free(cycles);
        free(path);
        free(text);
        remount_journal_done(&j);
}

int main(void) {
        struct libmnt_table *t = table_from_text(MOUNTINFO);

        CHECK(t);
        if (t) {
                test_plan(t);
                test_table(t);
                test_journal(t);
                test_unit_files(t);
                mnt_unref_table(t);
        }
        test_target();
        test_swaps_loops();
        test_options();
        test_propagation();
        test_unit_names();
        test_dirs();
        return tests_finish();
}
