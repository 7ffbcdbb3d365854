/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stall observatory's pure helpers: histogram buckets, percentiles, windows (subtract),
 * command lists, bdi names, tracefs lines, caller classification, kallsyms names; and the
 * probe in forced mode "unavailable", which must refuse to report figures. No BPF, no root. */
#include <stdlib.h>
#include <sys/sysmacros.h>

#include "stall-probe.h"
#include "tests.h"

static void test_buckets(void) {
        CHECK_INT(stall_hist_bucket(0), 0);
        CHECK_INT(stall_hist_bucket(1), 0);
        CHECK_INT(stall_hist_bucket(2), 1);
        CHECK_INT(stall_hist_bucket(3), 1);
        CHECK_INT(stall_hist_bucket(4), 2);
        CHECK_INT(stall_hist_bucket(1023), 9);
        CHECK_INT(stall_hist_bucket(1024), 10);
        CHECK_INT(stall_hist_bucket(100000), 16);
        CHECK_INT(stall_hist_bucket(UINT64_MAX), STALL_HIST_BUCKETS - 1);

        CHECK_INT(stall_hist_bucket_lower_usec(0), 0);
        CHECK_INT(stall_hist_bucket_upper_usec(0), 1);
        CHECK_INT(stall_hist_bucket_lower_usec(10), 1024);
        CHECK_INT(stall_hist_bucket_upper_usec(10), 2047);
        CHECK(stall_hist_bucket_upper_usec(STALL_HIST_BUCKETS - 1) == UINT64_MAX);
        for (unsigned i = 0; i < STALL_HIST_BUCKETS; i++) {
                CHECK_INT(stall_hist_bucket(stall_hist_bucket_lower_usec(i)), i);
                if (i < STALL_HIST_BUCKETS - 1) {
                        CHECK_INT(stall_hist_bucket(stall_hist_bucket_upper_usec(i)), i);
                        CHECK(stall_hist_bucket_upper_usec(i) + 1 == stall_hist_bucket_lower_usec(i + 1));
                }
        }
}

static void test_percentile(void) {
        StallStats s = { .has_durations = true };
        uint64_t v = 0;

        CHECK_INT(stall_stats_percentile(&s, 0.5, &v), -ENODATA);
        CHECK_INT(stall_stats_percentile(&s, 0.0, &v), -EINVAL);
        CHECK_INT(stall_stats_percentile(&s, 1.5, &v), -EINVAL);

        /* 10 waits of 50 us, 10 of 100 ms: p50 is the 10th (50 us, bucket 5: 32..63),
         * p99 the 20th (100 ms, bucket 16, capped at max 100000). */
        for (int i = 0; i < 10; i++)
                stall_stats_add_sample(&s, 50, "fast");
        for (int i = 0; i < 10; i++)
                stall_stats_add_sample(&s, 100000, "slow");
        CHECK_INT(s.count, 20);
        CHECK_INT(s.sum_usec, 10 * 50 + 10 * 100000);
        CHECK_INT(s.max_usec, 100000);
        CHECK_INT(stall_stats_percentile(&s, 0.5, &v), 0);
        CHECK_INT(v, 63);
        CHECK_INT(stall_stats_percentile(&s, 0.51, &v), 0);
        CHECK_INT(v, 100000);
        CHECK_INT(stall_stats_percentile(&s, 0.99, &v), 0);
        CHECK_INT(v, 100000);
        CHECK_INT(stall_stats_percentile(&s, 1.0, &v), 0);
        CHECK_INT(v, 100000);

        /* The bound: never below the true quantile, at most twice it (for waits >= 1 us). */
        srand(1);
        for (int round = 0; round < 50; round++) {
                StallStats r = { .has_durations = true };
                uint64_t vals[101];
                int n = 1 + rand() % 101;

                for (int i = 0; i < n; i++) {
                        vals[i] = 1 + (uint64_t) rand() % 2000000;
                        stall_stats_add_sample(&r, vals[i], NULL);
                }
                for (int i = 1; i < n; i++) /* insertion sort */
                        for (int j = i; j > 0 && vals[j - 1] > vals[j]; j--) {
                                uint64_t t = vals[j];
                                vals[j] = vals[j - 1];
                                vals[j - 1] = t;
                        }
                CHECK_INT(stall_stats_percentile(&r, 0.5, &v), 0);
                uint64_t truth = vals[(n + 1) / 2 - 1]; /* ceil(n/2)-th */
                CHECK(v >= truth);
                CHECK(v <= 2 * truth);
        }

        s.has_durations = false;
        CHECK_INT(stall_stats_percentile(&s, 0.5, &v), -EOPNOTSUPP);
}

static void test_comms(void) {
        StallStats s = {};
        char name[16];

        stall_stats_add_comm(&s, "a", 1);
        stall_stats_add_comm(&s, "b", 5);
        stall_stats_add_comm(&s, "a", 10);
        stall_stats_add_comm(&s, "z", 0); /* ignored */
        CHECK_INT(s.n_comms, 2);
        CHECK_STR(s.comms[0].comm, "a");
        CHECK_INT(s.comms[0].count, 11);
        CHECK_STR(s.comms[1].comm, "b");

        for (int i = 0; i < 20; i++) {
                snprintf(name, sizeof(name), "c%d", i);
                stall_stats_add_comm(&s, name, 2 + (uint64_t) i);
        }
        CHECK_INT(s.n_comms, STALL_TOP_COMMS);
        CHECK_STR(s.comms[0].comm, "c19");
        for (size_t i = 1; i < s.n_comms; i++)
                CHECK(s.comms[i - 1].count >= s.comms[i].count);
        /* A name longer than TASK_COMM_LEN-1 is cut, never overflows. */
        stall_stats_add_comm(&s, "a-very-long-command-name", 1000);
        CHECK_STR(s.comms[0].comm, "a-very-long-com");
}

static void test_merge_subtract(void) {
        StallStats before = {
                .devnum = makedev(7, 0), .bdi = "7:0", .has_durations = true, .classified = true
        };
        StallStats now, d, other;

        stall_stats_add_sample(&before, 100, "w");
        before.sync_count = 1;
        before.sync_sum_usec = 10;
        now = before;
        stall_stats_add_sample(&now, 5000, "w");
        stall_stats_add_sample(&now, 6000, "x");
        now.sync_count = 3;
        now.sync_sum_usec = 30;

        CHECK_INT(stall_stats_subtract(&now, &before, &d), 0);
        CHECK_INT(d.count, 2);
        CHECK_INT(d.sum_usec, 11000);
        CHECK_INT(d.hist[stall_hist_bucket(100)], 0);
        CHECK_INT(d.hist[stall_hist_bucket(5000)], 2);
        CHECK_INT(d.max_usec, 6000); /* min(now max 6000, bucket bound 8191) */
        CHECK_INT(d.sync_count, 2);
        CHECK_INT(d.sync_sum_usec, 20);
        CHECK(d.has_durations && d.classified);
        CHECK_INT(d.n_comms, 2);
        CHECK_INT(d.comms[0].count, 1);
        CHECK_INT(d.comms[1].count, 1);
        uint64_t v;
        CHECK_INT(stall_stats_percentile(&d, 0.99, &v), 0);
        CHECK_INT(v, 6000);

        /* The window's max is bounded by its highest bucket, not by an older, larger max. */
        StallStats big = before;
        stall_stats_add_sample(&big, 900000, "w");
        StallStats later = big;
        stall_stats_add_sample(&later, 300, "w");
        CHECK_INT(stall_stats_subtract(&later, &big, &d), 0);
        CHECK_INT(d.count, 1);
        CHECK_INT(d.max_usec, 511);

        /* A reset in between: counters went backwards; the result is everything since. */
        StallStats fresh = { .devnum = makedev(7, 0), .bdi = "7:0", .has_durations = true };
        stall_stats_add_sample(&fresh, 42, "w");
        CHECK_INT(stall_stats_subtract(&fresh, &now, &d), 1);
        CHECK_INT(d.count, 1);
        CHECK_INT(d.sum_usec, 42);

        other = now;
        other.devnum = makedev(8, 0);
        CHECK_INT(stall_stats_subtract(&now, &other, &d), -EINVAL);

        StallStats m = before;
        stall_stats_merge(&m, &now);
        CHECK_INT(m.count, before.count + now.count);
        CHECK_INT(m.sync_count, 4);
        CHECK_INT(m.max_usec, 6000);
        CHECK_INT(m.comms[0].count, 3); /* w: 1 + 2 */
}

/* Shadow waits: all counted, a sample timed; the percentiles are the sample's, and a window
 * subtracts both. */
static void test_shadows(void) {
        StallStats before = { .devnum = makedev(9, 1), .bdi = "9:1", .has_shadows = true }, now, d, m;
        uint64_t v;

        CHECK_INT(stall_stats_shadow_percentile(&before, 0.99, &v), -ENODATA);
        before.shadow_count = 500; /* counted, none timed yet: no percentile */
        CHECK_INT(stall_stats_shadow_percentile(&before, 0.99, &v), -ENODATA);
        before.shadow_timed = 2;
        before.shadow_sum_usec = 200;
        before.shadow_max_usec = 100;
        before.shadow_hist[stall_hist_bucket(100)] = 2;
        /* 2 timed of 500: the p50 and p99 are the sample's, not ranks among the 500 */
        CHECK_INT(stall_stats_shadow_percentile(&before, 0.5, &v), 0);
        CHECK_INT(v, 100);
        CHECK_INT(stall_stats_shadow_percentile(&before, 0.99, &v), 0);
        CHECK_INT(v, 100);

        now = before;
        now.shadow_count = 1500;
        now.shadow_timed = 4;
        now.shadow_sum_usec = 200 + 2 * 40000;
        now.shadow_max_usec = 40000;
        now.shadow_hist[stall_hist_bucket(40000)] = 2;
        /* 4 timed: 2 of 100 us, 2 of 40 ms; the p50 is the second, whatever the 1,500 counted */
        CHECK_INT(stall_stats_shadow_percentile(&now, 0.5, &v), 0);
        CHECK_INT(v, 127);
        CHECK_INT(stall_stats_subtract(&now, &before, &d), 0);
        CHECK(d.has_shadows);
        CHECK_INT(d.shadow_count, 1000);
        CHECK_INT(d.shadow_timed, 2);
        CHECK_INT(d.shadow_sum_usec, 80000);
        CHECK_INT(stall_stats_shadow_percentile(&d, 0.5, &v), 0);
        CHECK_INT(v, 40000); /* min(max 40000, bucket bound 65535) */

        /* Fewer timed than before: a reset, the result is everything since. */
        StallStats fresh = now;
        fresh.shadow_timed = 1;
        CHECK_INT(stall_stats_subtract(&fresh, &now, &d), 1);
        CHECK_INT(d.shadow_timed, 1);

        m = before;
        stall_stats_merge(&m, &now);
        CHECK_INT(m.shadow_count, 2000);
        CHECK_INT(m.shadow_timed, 6);
        CHECK_INT(m.shadow_max_usec, 40000);

        before.has_shadows = false;
        CHECK_INT(stall_stats_shadow_percentile(&before, 0.5, &v), -EOPNOTSUPP);
}

static void test_bdi_names(void) {
        dev_t d = 0;

        CHECK_INT(stall_parse_bdi_name("7:0", &d), 0);
        CHECK(d == makedev(7, 0));
        CHECK_INT(stall_parse_bdi_name("259:12", &d), 0);
        CHECK(d == makedev(259, 12));
        CHECK_INT(stall_parse_bdi_name("0:53", &d), 0); /* NFS: the superblock's s_dev */
        CHECK(d == makedev(0, 53));
        CHECK_INT(stall_parse_bdi_name("btrfs-1", &d), -EINVAL);
        CHECK_INT(stall_parse_bdi_name("(unknown)", &d), -EINVAL);
        CHECK_INT(stall_parse_bdi_name("", &d), -EINVAL);
        CHECK_INT(stall_parse_bdi_name(NULL, &d), -EINVAL);
        CHECK_INT(stall_parse_bdi_name("7:", &d), -EINVAL);
        CHECK_INT(stall_parse_bdi_name("7:0 ", &d), -EINVAL);
        CHECK_INT(stall_parse_bdi_name("-7:0", &d), -EINVAL);
        CHECK_INT(stall_parse_bdi_name("7:0:1", &d), -EINVAL);
}

static void test_trace_lines(void) {
        char comm[STALL_BPF_COMM_LEN], bdi[STALL_BPF_BDI_LEN];
        const char *sym = NULL;
        uint64_t lost = 0;

        CHECK_INT(stall_parse_trace_line("    stall-writer-1708    [001] .....  2078.022716: "
                                         "folio_wait_writeback: bdi 7:0: ino=12 index=0",
                                         comm, bdi, &lost, &sym),
                  STALL_TRACE_EVENT);
        CHECK_STR(comm, "stall-writer");
        CHECK_STR(bdi, "7:0");

        /* record-tgid format, a comm with spaces and dashes, a bdi that is not MAJ:MIN */
        CHECK_INT(stall_parse_trace_line("  my cool-app-12 (   10) [000] d..1. 1.000000: "
                                         "folio_wait_writeback: bdi btrfs-1: ino=257 index=3",
                                         comm, bdi, &lost, &sym),
                  STALL_TRACE_EVENT);
        CHECK_STR(comm, "my cool-app");
        CHECK_STR(bdi, "btrfs-1");

        CHECK_INT(stall_parse_trace_line("  <...>-99 [003] ..... 5.5: wait_on_page_writeback: "
                                         "bdi 8:16: ino=1 index=2",
                                         comm, bdi, &lost, &sym),
                  STALL_TRACE_EVENT);
        CHECK_STR(comm, "<...>");
        CHECK_STR(bdi, "8:16");

        CHECK_INT(stall_parse_trace_line("CPU:1 [LOST 17 EVENTS]", comm, bdi, &lost, &sym),
                  STALL_TRACE_LOST);
        CHECK_INT(lost, 17);

        CHECK_INT(stall_parse_trace_line(" => __filemap_fdatawait_range", comm, bdi, &lost, &sym),
                  STALL_TRACE_FRAME);
        CHECK_STR(sym, "__filemap_fdatawait_range");

        CHECK_INT(stall_parse_trace_line("    stall-writer-1708    [001] .....  2078.022728: <stack trace>",
                                         comm, bdi, &lost, &sym),
                  STALL_TRACE_OTHER);
        CHECK_INT(stall_parse_trace_line("  x-1 [000] ..... 1.0: writeback_dirty_folio: bdi 7:0: ino=1",
                                         comm, bdi, &lost, &sym),
                  STALL_TRACE_OTHER);
        CHECK_INT(stall_parse_trace_line("", comm, bdi, &lost, &sym), STALL_TRACE_OTHER);
        CHECK_INT(stall_parse_trace_line("garbage: folio_wait_writeback: bdi 7:0: ino=1 index=0", comm, bdi,
                                         &lost, &sym),
                  STALL_TRACE_OTHER);

        /* a header without "-<pid>" before "[cpu]", or without "[cpu]"; a bdi name that is
         * empty or longer than the probe keeps: not events */
        CHECK_INT(
                stall_parse_trace_line("  writer-12x [001] ..... 1.0: folio_wait_writeback: bdi 7:0: ino=1",
                                       comm, bdi, &lost, &sym),
                STALL_TRACE_OTHER);
        CHECK_INT(stall_parse_trace_line("  writer-12 ..... 1.0: folio_wait_writeback: bdi 7:0: ino=1", comm,
                                         bdi, &lost, &sym),
                  STALL_TRACE_OTHER);
        CHECK_INT(stall_parse_trace_line("  writer-12 [001] ..... 1.0: folio_wait_writeback: bdi : ino=1",
                                         comm, bdi, &lost, &sym),
                  STALL_TRACE_OTHER);
        char line[256];
        snprintf(line, sizeof line, "  w-1 [001] ..... 1.0: folio_wait_writeback: bdi %0*d: ino=1",
                 STALL_BPF_BDI_LEN, 7);
        CHECK_INT(stall_parse_trace_line(line, comm, bdi, &lost, &sym), STALL_TRACE_OTHER);
        snprintf(line, sizeof line, "  w-1 [001] ..... 1.0: folio_wait_writeback: bdi %0*d: ino=1",
                 STALL_BPF_BDI_LEN - 1, 7);
        CHECK_INT(stall_parse_trace_line(line, comm, bdi, &lost, &sym), STALL_TRACE_EVENT);
        CHECK_INT(strlen(bdi), STALL_BPF_BDI_LEN - 1);

        /* a command longer than the probe keeps is cut; a bdi name holding ": ino=" ends at the
         * last one */
        CHECK_INT(
                stall_parse_trace_line("  a-very-long-command-name-1 [001] ..... 1.0: folio_wait_writeback: "
                                       "bdi x: ino=y: ino=1 index=0",
                                       comm, bdi, &lost, &sym),
                STALL_TRACE_EVENT);
        CHECK_INT(strlen(comm), STALL_BPF_COMM_LEN - 1);
        CHECK_STR(bdi, "x: ino=y");
}

static void test_classify(void) {
        CHECK_INT(stall_classify_caller("folio_wait_writeback"), STALL_KIND_SKIP);
        CHECK_INT(stall_classify_caller("folio_wait_stable"), STALL_KIND_SKIP);
        CHECK_INT(stall_classify_caller("bpf_trampoline_6442491512+0x4d/0x1000 [bpf]"), STALL_KIND_SKIP);
        CHECK_INT(stall_classify_caller("__filemap_get_folio"), STALL_KIND_STABLE);
        CHECK_INT(stall_classify_caller("ext4_page_mkwrite"), STALL_KIND_STABLE);
        CHECK_INT(stall_classify_caller("btrfs_page_mkwrite [btrfs]"), STALL_KIND_STABLE);
        CHECK_INT(stall_classify_caller("__filemap_fdatawait_range"), STALL_KIND_SYNC);
        CHECK_INT(stall_classify_caller("filemap_fdatawait_range_keep_errors"), STALL_KIND_SYNC);
        CHECK_INT(stall_classify_caller("mpage_prepare_extent_to_map"), STALL_KIND_SYNC);
        CHECK_INT(stall_classify_caller("extent_write_cache_pages [btrfs]"), STALL_KIND_SYNC);
        CHECK_INT(stall_classify_caller("writeback_iter"), STALL_KIND_SYNC);
        CHECK_INT(stall_classify_caller("truncate_inode_partial_folio"), STALL_KIND_OTHER);
        CHECK_INT(stall_classify_caller("__migrate_folio.isra.0"), STALL_KIND_OTHER);
        CHECK_INT(stall_classify_caller("shrink_folio_list"), STALL_KIND_OTHER);
        CHECK_INT(stall_classify_caller("migrate_task_rq_fair"), STALL_KIND_STABLE);
        CHECK_INT(stall_classify_caller(""), STALL_KIND_STABLE);
        CHECK_INT(stall_classify_caller(NULL), STALL_KIND_STABLE);
        /* the tracepoint's glue: with a second probe on it (another stall probe, bpftrace,
         * perf), __traceiter_* lies between the program and folio_wait_writeback, and it is
         * no caller (measured on 6.18: every fsync wait counted as a stable-pages wait) */
        CHECK_INT(stall_classify_caller("__traceiter_folio_wait_writeback+0x31/0x50"), STALL_KIND_SKIP);
        CHECK_INT(stall_classify_caller("__bpf_trace_writeback_folio_template+0x11/0x20"), STALL_KIND_SKIP);
        CHECK_INT(stall_classify_caller("bpf_trace_run2+0x103/0x1c0"), STALL_KIND_SKIP);
}

static char *write_temp(const char *content) {
        char *path = strdup("/tmp/test-stalls-XXXXXX");
        int fd = mkstemp(path);

        CHECK(fd >= 0);
        CHECK(write(fd, content, strlen(content)) == (ssize_t) strlen(content));
        close(fd);
        return path;
}

static void test_kallsyms(void) {
        char names[4][STALL_BPF_SYMBOL_LEN];
        uint64_t ips[4] = {
                0xffffffff815a43a0ULL, /* inside __filemap_fdatawait_range */
                0xffffffff815a4400ULL, /* the return address of a call ending it: one byte before */
                0xffffffffc0001010ULL, /* a module's function */
                0xffffffff80000000ULL, /* before every symbol */
        };
        char *p;

        p = write_temp("ffffffff81000000 T _stext\n"
                       "ffffffff815a4380 t __filemap_fdatawait_range\n"
                       "ffffffff815a4400 T filemap_fdatawait_range\n"
                       "ffffffff815b2700 T folio_wait_writeback\n"
                       "ffffffffc0001000 t ext4_writepages\t[ext4]\n");
        CHECK_INT(stall_kallsyms_lookup(p, ips, 4, names), 0);
        CHECK_STR(names[0], "__filemap_fdatawait_range+0x20");
        CHECK_STR(names[1], "__filemap_fdatawait_range+0x80");
        CHECK_STR(names[2], "ext4_writepages+0x10 [ext4]");
        CHECK_STR(names[3], "");
        /* what the names classify as, the way the probe uses them */
        CHECK_INT(stall_classify_caller(names[0]), STALL_KIND_SYNC);
        CHECK_INT(stall_classify_caller(names[2]), STALL_KIND_SYNC);
        CHECK_INT(stall_classify_caller("folio_wait_stable+0x1c/0x40"), STALL_KIND_SKIP);
        CHECK_INT(stall_classify_caller("ext4_page_mkwrite+0x2b1/0x5e0 [ext4]"), STALL_KIND_STABLE);
        CHECK_INT(stall_classify_caller("truncate_inode_pages_range+0x1a/0x400"), STALL_KIND_OTHER);
        unlink(p);
        free(p);

        p = write_temp(
                "0000000000000000 T folio_wait_writeback\n0000000000000000 T __filemap_fdatawait_range\n");
        CHECK_INT(stall_kallsyms_lookup(p, ips, 4, names), -EPERM);
        unlink(p);
        free(p);

        CHECK_INT(stall_kallsyms_lookup("/nonexistent/kallsyms", ips, 4, names), -ENOENT);
}

static void test_unavailable(void) {
        _cleanup_stall_probe_free_ StallProbe *p = NULL;
        StallStats s;
        StallStats *list = NULL;
        size_t n = 0;

        setenv("STABLEPAGES_STALLS_FORCE_UNAVAILABLE", "1", 1);
        CHECK_INT(stall_probe_new(&p), 0);
        unsetenv("STABLEPAGES_STALLS_FORCE_UNAVAILABLE");
        CHECK_INT(stall_probe_mode(p), STALL_PROBE_UNAVAILABLE);
        CHECK_CONTAINS(stall_probe_mode_reason(p), "STABLEPAGES_STALLS_FORCE_UNAVAILABLE");
        CHECK_INT(stall_probe_read(p, makedev(7, 0), &s), -EOPNOTSUPP);
        CHECK_INT(stall_probe_list(p, &list, &n), -EOPNOTSUPP);
        CHECK_INT(stall_probe_reset(p, 0), -EOPNOTSUPP);
        CHECK_INT(stall_probe_poll(p), 0);
        CHECK_INT(stall_probe_lost(p), 0);
        CHECK_STR(stall_probe_mode_to_string(STALL_PROBE_UNAVAILABLE), "unavailable");
        CHECK_STR(stall_probe_mode_to_string(STALL_PROBE_BPF), "bpf");
        CHECK_STR(stall_probe_mode_to_string(STALL_PROBE_TRACEFS), "tracefs");
        CHECK(stall_probe_mode_to_string(_STALL_PROBE_MODE_MAX) == NULL);
}

int main(void) {
        test_buckets();
        test_percentile();
        test_comms();
        test_merge_subtract();
        test_shadows();
        test_bdi_names();
        test_trace_lines();
        test_classify();
        test_kallsyms();
        test_unavailable();
        return tests_finish();
}
