/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Remounter's queue (daemon/remount.c) with a fake host and a fake child, without root and
 * without mounting anything: a request waits while another cycle runs, one cycle at a time;
 * what is refused (NeverRemount=, a disk the daemon leaves alone) or has nothing to do is
 * concluded without a child; a cycle that is done, fails, or whose process dies; a filesystem
 * left unmounted holds its disk and is mounted back by a replay; ApplyMounted=remount-idle
 * passes over what failed or was refused. Checked: the results the requester gets, what the
 * host is told (RemountHost) and in which order, the pending reasons, the journal.
 *
 * The host is this file: its disks, the tracked mounts and a mountinfo text. The child is
 * forked as the daemon forks it, but runs __wrap_remount_job_run() (linked with
 * --wrap=remount_job_run), which reports what the test chose for its mount point. */
#include <poll.h>
#include <sys/sysmacros.h>

#include "fake-engine.h"
#include "remount.h"
#include "told.h"

static char *root, *child_log, *go_file;
static char **told; /* what the host was told, in order */

/* --- the fake child ------------------------------------------------------------------------ */

typedef enum ChildPlay {
        PLAY_DONE,      /* unmounted and mounted again with the new state */
        PLAY_WAIT_DONE, /* the same, once the test creates go_file */
        PLAY_RESTORED,  /* the mount with the new state failed: mounted with the old one */
        PLAY_DIE,       /* exits before its report, nothing touched */
        PLAY_UNMOUNTED, /* no mount worked: left unmounted (a replay then mounts it: done) */
} ChildPlay;

static const struct {
        const char *target;
        ChildPlay play;
} plays[] = {
        { "/stablepages-test/a", PLAY_WAIT_DONE }, { "/stablepages-test/e", PLAY_RESTORED },
        { "/stablepages-test/f", PLAY_DIE },       { "/stablepages-test/g", PLAY_UNMOUNTED },
        { "/stablepages-test/b", PLAY_DONE },
};

void __wrap_remount_job_run(const RemountJob *j, RemountReport *ret);

/* In the cycle's child: logs what it was given to child_log, plays its part, fills *ret. */
void __wrap_remount_job_run(const RemountJob *j, RemountReport *ret) {
        const char *target = j->journal->plan.target;
        ChildPlay play = PLAY_DONE;
        FILE *f;

        for (size_t i = 0; i < ELEMENTSOF(plays); i++)
                if (streq(plays[i].target, target))
                        play = plays[i].play;
        f = fopen(child_log, "ae");
        if (f) {
                fprintf(f, "%s%s need=%s force=%d journal=%s flag-fd=%s new=%d options=%s\n", target,
                        j->replay ? " replay" : "", need_to_string(j->need), j->force,
                        access(j->journal_path, F_OK) == 0 ? "saved" : "missing",
                        j->disk_fd >= 0 ? "open" : "none", j->journal->new_flag, j->options);
                fclose(f);
        }
        if (play == PLAY_WAIT_DONE)
                for (int i = 0; i < 1000 && access(go_file, F_OK) < 0; i++)
                        (void) poll(NULL, 0, 10);
        if (play == PLAY_DIE)
                _exit(3);

        *ret = (RemountReport){ .outcome = REMOUNT_DONE, .flag_written = -1, .effective = -1 };
        strcpy(ret->via, "the fake child");
        if (play == PLAY_UNMOUNTED && !j->replay) {
                ret->outcome = REMOUNT_UNMOUNTED;
                ret->error = EINVAL;
                ret->flag_written = j->journal->new_flag;
                strcpy(ret->message, "mounting it failed: Invalid argument");
                return;
        }
        if (play == PLAY_RESTORED) {
                ret->outcome = REMOUNT_RESTORED;
                ret->new_id = 300;
                ret->effective = j->journal->old_flag;
                ret->flag_written = j->journal->old_flag;
                ret->mounted = true;
                strcpy(ret->message, "mounting with the new state failed: Invalid argument");
                return;
        }
        ret->new_id = 200;
        ret->effective = j->journal->new_flag;
        ret->flag_written = j->journal->new_flag;
        ret->mounted = true;
        strcpy(ret->message, j->replay ? "mounted it back" : "unmounted and mounted it again");
}

/* --- the fake host ------------------------------------------------------------------------- */

static const RemountDisk disks[] = {
        /* managed, stable writes now off, the filesystems on them mounted with them on */
        { .name = "sdx", .diskseq = 10, .need = NEED_NONE, .managed = true, .flag = 0, .reason = "latency" },
        { .name = "sdz", .diskseq = 11, .need = NEED_NONE, .managed = true, .flag = 0, .reason = "latency" },
        { .name = "sdw", .diskseq = 12, .need = NEED_NONE, .managed = true, .flag = 0, .reason = "latency" },
        { .name = "sdv", .diskseq = 13, .need = NEED_NONE, .managed = true, .flag = 0, .reason = "latency" },
        { .name = "sdu", .diskseq = 14, .need = NEED_NONE, .managed = true, .flag = 0, .reason = "latency" },
        /* left alone */
        { .name = "sdy",
          .diskseq = 15,
          .need = NEED_NONE,
          .managed = false,
          .flag = 1,
          .reason = "Policy=observe" },
};

static TrackedMount mounts[] = {
        { .id = 100, .disk = (char *) "sdx", .target = (char *) "/stablepages-test/a" },
        { .id = 101, .disk = (char *) "sdx", .target = (char *) "/stablepages-test/never" },
        { .id = 102, .disk = (char *) "sdx", .target = (char *) "/stablepages-test/c" },
        { .id = 103, .disk = (char *) "sdy", .target = (char *) "/stablepages-test/d" },
        { .id = 104, .disk = (char *) "sdz", .target = (char *) "/stablepages-test/e" },
        { .id = 105, .disk = (char *) "sdw", .target = (char *) "/stablepages-test/f" },
        { .id = 106, .disk = (char *) "sdv", .target = (char *) "/stablepages-test/g" },
        { .id = 107, .disk = (char *) "sdu", .target = (char *) "/stablepages-test/b" },
};

static MountTracker tracker = { .mounts = mounts, .n = ELEMENTSOF(mounts) };

static const RemountDisk *disk_of(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(disks); i++)
                if (streq(disks[i].name, name))
                        return &disks[i];
        return NULL;
}

static TrackedMount *mount_of(const char *target) {
        for (size_t i = 0; i < ELEMENTSOF(mounts); i++)
                if (streq(mounts[i].target, target))
                        return &mounts[i];
        return NULL;
}

static int host_find_disk(void *userdata, const char *name, RemountDisk *ret) {
        const RemountDisk *d = disk_of(name);
        if (!d)
                return -ENODEV;
        *ret = *d;
        return 0;
}

static int host_apply(void *userdata, const char *disk, char **ret_message) {
        told_add(&told, "apply %s", disk);
        *ret_message = strdup_printf("%s: stable writes off, unchanged", disk);
        return 0;
}

static void host_mounted(void *userdata, int old_id, int new_id, const char *target, int effective) {
        TrackedMount *t = mount_of(target);

        told_add(&told, "mounted %s %d -> %d, effective %d", target, old_id, new_id, effective);
        CHECK(t && t->id == old_id);
        if (!t)
                return;
        /* as the Manager's tracker observes it, and its pending flag after */
        t->id = new_id;
        t->effective = effective > 0;
        t->pending = t->effective != (disk_of(t->disk)->flag > 0);
}

static void host_flag_written(void *userdata, const char *disk, int flag) {
        told_add(&told, "flag_written %s %d", disk, flag);
}

static void host_finished(void *userdata, const RemountResult *result) {
        told_add(&told, "finished %s %s%s", result->target, remount_outcome_to_string(result->outcome),
                 result->ok ? " ok" : "");
}

static void host_reconcile(void *userdata) {
        told_add(&told, "reconcile");
}

#define CHECK_TOLD(expected)                                                                                \
        do {                                                                                                \
                _cleanup_free_ char *_got = told_take(&told);                                               \
                CHECK_STR(_got, expected);                                                                  \
        } while (0)

/* --- requests ------------------------------------------------------------------------------ */

typedef struct Request {
        bool done;
        size_t n;
        char *results[8]; /* "TARGET OUTCOME [ok]: message[ | detail]" */
} Request;

static void request_done(Request *q) {
        for (size_t i = 0; i < q->n; i++)
                free(q->results[i]);
        *q = (Request){};
}

static void on_done(const RemountResult *results, size_t n, void *userdata) {
        Request *q = userdata;

        CHECK(!q->done); /* called once */
        q->done = true;
        CHECK(n <= ELEMENTSOF(q->results));
        for (size_t i = 0; i < n && i < ELEMENTSOF(q->results); i++)
                q->results[q->n++] = strdup_printf("%s %s%s: %s", results[i].target,
                                                   remount_outcome_to_string(results[i].outcome),
                                                   results[i].ok ? " ok" : "", results[i].message);
}

static int request(Remounter *r, const char *disk, Request *q) {
        return remount_request(r, disk_of(disk), on_done, q);
}

/* Runs the event loop until until(userdata), for 10 s at most (then a failed check). */
static void run_until(sd_event *e, bool (*until)(const void *), const void *userdata) {
        uint64_t end = now_usec_monotonic() + 10 * USEC_PER_SEC;

        while (!until(userdata) && now_usec_monotonic() < end)
                CHECK(sd_event_run(e, 20 * USEC_PER_MSEC) >= 0);
        CHECK(until(userdata));
}

/* Runs the event loop for usec: to see that nothing happens. */
static void run_for(sd_event *e, uint64_t usec) {
        uint64_t end = now_usec_monotonic() + usec;

        while (now_usec_monotonic() < end)
                CHECK(sd_event_run(e, 20 * USEC_PER_MSEC) >= 0);
}

static bool answered(const void *q) {
        return ((const Request *) q)->done;
}

static bool child_started(const void *unused) {
        struct stat st;
        return stat(child_log, &st) >= 0 && st.st_size > 0;
}

static bool told_at_least(const void *n) {
        return strv_length(told) >= *(const size_t *) n;
}

/* Requests the cycle of the one filesystem on disk and runs the event loop until the answer:
 * its result as on_done() wrote it, or NULL. */
static const char *request_one(Remounter *r, sd_event *e, const char *disk, Request *q) {
        CHECK_INT(request(r, disk, q), 0);
        run_until(e, answered, q);
        CHECK_INT(q->n, 1);
        return q->n > 0 ? q->results[0] : NULL;
}

static char *child_ran(void) {
        char *s = NULL;
        if (read_full_file(child_log, 1 << 16, &s, NULL) < 0)
                return strdup("");
        (void) truncate(child_log, 0);
        return s;
}

static bool journal_exists(const Engine *e, const char *target) {
        _cleanup_free_ char *p = remount_journal_path(e->runtime_dir, target);
        return p && access(p, F_OK) == 0;
}

static void collect_unmounted(const char *target, const char *disk, const char *reason, bool retrying,
                              void *userdata) {
        told_add(userdata, "%s on %s%s: %s", target, disk, retrying ? " (retrying)" : "", reason);
}

/* The filesystems left unmounted, one per line. */
static char *unmounted(const Remounter *r) {
        _cleanup_strv_free_ char **l = NULL;

        remount_foreach_unmounted(r, collect_unmounted, &l);
        return told_take(&l);
}

int main(void) {
        _cleanup_(engine_done) Engine e = {};
        _cleanup_free_ char *mountinfo = NULL, *s = NULL;
        sd_event *event = NULL;
        Remounter *r = NULL;
        Request q1 = {}, q2 = {}, q3 = {}, q4 = {}, q5 = {};
        char line[512], table[4096] = "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n";
        FakeEngine fe;

        (void) unsetenv("STABLEPAGES_TEST_REMOUNT_FAIL");
        (void) unsetenv("STABLEPAGES_TEST_REMOUNT_PAUSE");
        fake_engine_init(&fe);
        root = fe.root;
        mountinfo = tree_path(root, "mountinfo");
        child_log = tree_path(root, "child.log");
        go_file = tree_path(root, "go");
        tree_put(root, "etc/stablepages.conf", "[Manager]\nNeverRemount=/stablepages-test/never\n");
        /* Each disk has a sysfs directory (the child is handed it, pinned) and its filesystems
         * are in the mount table: ext4, mounted with stable writes on, now pending (off). */
        for (size_t i = 0; i < ELEMENTSOF(mounts); i++) {
                TrackedMount *t = &mounts[i];
                snprintf(line, sizeof line, "sys/block/%s/queue/stable_writes", t->disk);
                tree_put(root, line, "0\n");
                t->devnum = t->source_devnum = makedev(60, i + 1);
                t->fstype = (char *) "ext4";
                t->source = strdup_printf("/dev/%s%zu", t->disk, i + 1);
                CHECK(t->source);
                t->effective = true;
                t->pending = !streq(t->target, "/stablepages-test/c");
                t->reason = t->pending ? "takes effect at next mount" : "stable writes off, as decided";
                snprintf(line, sizeof line, "%d 27 60:%zu / %s rw,relatime - ext4 %s rw\n", t->id, i + 1,
                         t->target, t->source);
                strncat(table, line, sizeof table - strlen(table) - 1);
        }
        tree_put(root, "mountinfo", table);
        tracker.mountinfo = mountinfo;

        CHECK_INT(engine_init(&e, &fe.options), 0);
        CHECK_INT(engine_load_config(&e), 0);
        CHECK_INT(sd_event_new(&event), 0);
        CHECK_INT(remount_new(&(RemountHost){ .event = event,
                                              .engine = &e,
                                              .mounts = &tracker,
                                              .find_disk = host_find_disk,
                                              .apply = host_apply,
                                              .mounted = host_mounted,
                                              .flag_written = host_flag_written,
                                              .finished = host_finished,
                                              .reconcile = host_reconcile },
                              &r),
                  0);
        if (!r)
                return tests_finish();

        /* Queued: nothing happens before the event loop runs. */
        CHECK_INT(request(r, "sdx", &q1), 0);
        CHECK(!q1.done);
        CHECK_TOLD("");
        CHECK(!remount_holds(r, "sdx"));

        /* The cycle of /a runs (its child waits): it holds the disk, its journal is written
         * before the child starts; a request for another disk waits behind it. */
        run_until(event, child_started, NULL);
        CHECK(!q1.done);
        CHECK(remount_holds(r, "sdx"));
        CHECK(journal_exists(&e, "/stablepages-test/a"));
        CHECK_TOLD("apply sdx\n");
        CHECK_INT(request(r, "sdz", &q2), 0);
        run_for(event, 200 * USEC_PER_MSEC);
        CHECK(!q2.done);
        CHECK_TOLD("");
        s = child_ran();
        CHECK_STR(s, "/stablepages-test/a need=none force=0 journal=saved flag-fd=open new=0 "
                     "options=rw,relatime\n");
        s = mfree(s);

        /* /a is done; /never is refused and /c has nothing to do, without a child. */
        tree_put(root, "go", "");
        run_until(event, answered, &q1);
        CHECK_INT(q1.n, 3);
        CHECK_CONTAINS(q1.results[0],
                       "/stablepages-test/a done ok: /stablepages-test/a (ext4 on sdx): unmounted "
                       "and mounted again in ");
        CHECK_CONTAINS(q1.results[0], "in the fake child; stable writes now off, as decided");
        CHECK_CONTAINS(q1.results[1],
                       "/stablepages-test/never refused: /stablepages-test/never (ext4 on sdx): "
                       "not cycled: ");
        CHECK_CONTAINS(q1.results[1], "NeverRemount=");
        CHECK_CONTAINS(q1.results[2], "/stablepages-test/c nothing ok: ");
        CHECK_CONTAINS(q1.results[2], "nothing to do: stable writes off, as decided");
        CHECK(!journal_exists(&e, "/stablepages-test/a"));
        CHECK_INT(mount_of("/stablepages-test/a")->id, 200);
        CHECK(!mount_of("/stablepages-test/a")->pending);

        /* Then /e on sdz: its cycle fails (mounted again with the old state). */
        run_until(event, answered, &q2);
        CHECK(!remount_holds(r, "sdx"));
        CHECK(!remount_holds(r, "sdz"));
        CHECK_TOLD("flag_written sdx 0\n"
                   "mounted /stablepages-test/a 100 -> 200, effective 0\n"
                   "finished /stablepages-test/a done ok\n"
                   "reconcile\n"
                   "finished /stablepages-test/never refused\n"
                   "finished /stablepages-test/c nothing ok\n"
                   "apply sdz\n"
                   "flag_written sdz 1\n"
                   "mounted /stablepages-test/e 104 -> 300, effective 1\n"
                   "finished /stablepages-test/e restored\n"
                   "reconcile\n"
                   "reconcile\n");
        CHECK_INT(q2.n, 1);
        CHECK_CONTAINS(q2.results[0],
                       "/stablepages-test/e restored: /stablepages-test/e (ext4 on sdz): THE CYCLE "
                       "FAILED: mounting with the new state failed: Invalid argument (in the fake "
                       "child, ");
        CHECK_CONTAINS(q2.results[0], "it keeps its old state, takes effect at next mount");
        s = child_ran();
        CHECK_STR(s, "/stablepages-test/e need=none force=0 journal=saved flag-fd=open new=0 "
                     "options=rw,relatime\n");
        s = mfree(s);
        CHECK(!journal_exists(&e, "/stablepages-test/e"));
        /* The pending mounts say why they were not cycled. */
        remount_annotate(r, &tracker);
        CHECK_CONTAINS(mount_of("/stablepages-test/never")->reason,
                       "takes effect at next mount (not cycled: ");
        CHECK_CONTAINS(
                mount_of("/stablepages-test/e")->reason,
                "takes effect at next mount (the last cycle failed: mounting with the new state failed");

        /* A disk the daemon leaves alone: refused, nothing applied, no child. */
        CHECK_CONTAINS(request_one(r, event, "sdy", &q3),
                       "/stablepages-test/d refused: /stablepages-test/d (ext4 on sdy): not cycled: "
                       "the daemon leaves sdy alone (Policy=observe)");
        CHECK_TOLD("finished /stablepages-test/d refused\nreconcile\n");

        /* The cycle's process dies before it touched anything: failed, the disk released. */
        CHECK_CONTAINS(request_one(r, event, "sdw", &q4),
                       "/stablepages-test/f failed: /stablepages-test/f (ext4 on sdw): not cycled: "
                       "the process of its cycle died (status 3)");
        CHECK_TOLD("apply sdw\nfinished /stablepages-test/f failed\nreconcile\nreconcile\n");
        CHECK(!remount_holds(r, "sdw"));
        CHECK(!journal_exists(&e, "/stablepages-test/f"));
        s = child_ran();
        CHECK_STR(s, "/stablepages-test/f need=none force=0 journal=saved flag-fd=open new=0 "
                     "options=rw,relatime\n");
        s = mfree(s);

        /* Left unmounted: the requester hears it, the disk stays held and listed, the journal
         * stays; the replay mounts it back a second later. */
        CHECK_CONTAINS(request_one(r, event, "sdv", &q5),
                       "/stablepages-test/g unmounted: /stablepages-test/g (ext4 on sdv): NOT MOUNTED: "
                       "mounting it failed: Invalid argument (in the fake child); retrying in 1 s");
        CHECK(remount_holds(r, "sdv"));
        CHECK(journal_exists(&e, "/stablepages-test/g"));
        s = unmounted(r);
        CHECK_STR(s, "/stablepages-test/g on sdv (retrying): mounting it failed: Invalid argument\n");
        s = mfree(s);
        CHECK_TOLD("apply sdv\nflag_written sdv 0\nfinished /stablepages-test/g "
                   "unmounted\nreconcile\nreconcile\n");
        run_until(event, told_at_least, &(size_t){ 4 });
        CHECK(!remount_holds(r, "sdv"));
        CHECK(!journal_exists(&e, "/stablepages-test/g"));
        s = unmounted(r);
        CHECK_STR(s, "");
        s = mfree(s);
        s = told_take(&told);
        CHECK_CONTAINS(s, "flag_written sdv 0\n"
                          "mounted /stablepages-test/g 106 -> 200, effective 0\n"
                          "finished /stablepages-test/g done ok\n"
                          "reconcile\n");
        s = mfree(s);
        s = child_ran();
        CHECK_STR(s, "/stablepages-test/g need=none force=0 journal=saved flag-fd=open new=0 "
                     "options=rw,relatime\n"
                     "/stablepages-test/g replay need=none force=0 journal=saved flag-fd=open new=0 "
                     "options=rw,relatime\n");
        s = mfree(s);

        /* ApplyMounted=remount-idle: only /b is cycled; the failed /e, the refused /never and
         * the disk left alone wait. */
        remount_auto(r);
        run_until(event, told_at_least, &(size_t){ 6 });
        CHECK_TOLD("apply sdu\n"
                   "flag_written sdu 0\n"
                   "mounted /stablepages-test/b 107 -> 200, effective 0\n"
                   "finished /stablepages-test/b done ok\n"
                   "reconcile\n"
                   "reconcile\n");
        s = child_ran();
        CHECK_STR(s, "/stablepages-test/b need=none force=0 journal=saved flag-fd=open new=0 "
                     "options=rw,relatime\n");
        s = mfree(s);

        r = remount_free(r);
        sd_event_unref(event);
        for (size_t i = 0; i < ELEMENTSOF(mounts); i++)
                free(mounts[i].source);
        request_done(&q1);
        request_done(&q2);
        request_done(&q3);
        request_done(&q4);
        request_done(&q5);
        free(child_log);
        free(go_file);
        fake_engine_done(&fe);
        return tests_finish();
}
