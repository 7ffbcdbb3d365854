/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Table-driven tests of daemon/core/config*.c and device-match.c: each case writes a main file and drop-ins
 * into a mkdtemp() directory, loads them, and compares the configuration and every diagnostic (level, file,
 * line, text). Unreadable files are made with dangling symlinks, symlink loops and directories, not chmod
 * 000, which root ignores. */

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "config-in-force.h"
#include "config-show.h"
#include "config.h"
#include "fake-sysfs.h"
#include "tests.h"
#include "util.h"

/* The longest line, without its newline. */
#define LINE_MAX_LEN CONFIG_LINE_MAX
#define FILE_MAX (1024 * 1024)

typedef enum FileKind {
        FILE_TEXT,    /* data, NUL-terminated */
        FILE_BYTES,   /* data, size bytes */
        FILE_SYMLINK, /* a symlink to data */
        FILE_DIR,     /* a directory */
        FILE_FILLER,  /* size bytes of comment lines */
} FileKind;

typedef struct FileSpec {
        const char *name; /* "main" for the main file, else a drop-in name */
        FileKind kind;
        const char *data;
        size_t size;
} FileSpec;

#define TEXT(n, d)                                                                                          \
        { n, FILE_TEXT, d, 0 }
#define BYTES(n, d)                                                                                         \
        { n, FILE_BYTES, d, sizeof(d) - 1 }

typedef struct ExpectDiag {
        DiagLevel level;
        const char *file; /* "main" or a drop-in name */
        unsigned line;
        const char *text; /* a substring of the message */
} ExpectDiag;

#define ERR(f, l, t)                                                                                        \
        { DIAG_ERROR, f, l, t }
#define WARN(f, l, t)                                                                                       \
        { DIAG_WARNING, f, l, t }

typedef struct Case {
        const char *name;
        FileSpec files[6];
        ExpectDiag diags[8];
        void (*check)(const Config *c);
} Case;

/* ---- checks of the loaded configuration ---- */

static void check_defaults(const Config *c) {
        CHECK_INT(c->policy, POLICY_BALANCED);
        CHECK(c->devices == NULL);
        CHECK_INT(c->apply_mounted, APPLY_MOUNTED_NEXT_MOUNT);
        CHECK_INT(c->rescan_usec, 60 * USEC_PER_SEC);
        CHECK_INT(c->stall_budget_usec, 100 * USEC_PER_MSEC);
        CHECK_INT(c->stall_window_usec, 300 * USEC_PER_SEC);
        CHECK_INT(c->stall_calm_usec, 1800 * USEC_PER_SEC);
        CHECK_INT(c->stall_min_waits, 10);
        CHECK(c->metrics_file == NULL);
        CHECK_INT(c->metrics_interval_usec, 15 * USEC_PER_SEC);
        CHECK(c->never_remount == NULL);
        CHECK_INT(c->n_rules, 0);
}

static void check_strv(char *const *l, const char *const *expected) {
        size_t n = 0;

        while (expected[n])
                n++;
        CHECK_INT(strv_length(l), n);
        for (size_t i = 0; i < n && i < strv_length(l); i++)
                CHECK_STR(l[i], expected[i]);
}

static void check_all_keys(const Config *c) {
        CHECK_INT(c->policy, POLICY_INTEGRITY);
        check_strv(c->devices, (const char *[]){ "sd*", "nvme[0-3]n1", "vd?", NULL });
        CHECK_INT(c->apply_mounted, APPLY_MOUNTED_REMOUNT_IDLE);
        CHECK_INT(c->rescan_usec, 0);
        CHECK_INT(c->stall_budget_usec, 250 * USEC_PER_MSEC);
        CHECK_INT(c->stall_window_usec, 60 * USEC_PER_SEC);
        CHECK_INT(c->stall_calm_usec, 604800 * USEC_PER_SEC);
        CHECK_INT(c->stall_min_waits, 3);
        CHECK_STR(c->metrics_file, "/run/stablepages/metrics.prom");
        CHECK_INT(c->metrics_interval_usec, 3600 * USEC_PER_SEC);
        check_strv(c->never_remount, (const char *[]){ "/srv", "/var/lib/db", "/", NULL });
        CHECK_INT(c->n_rules, 2);
        if (c->n_rules == 2) {
                CHECK_INT(c->rules[0].match.kind, MATCH_PROPERTY);
                CHECK_STR(c->rules[0].match.pattern, "WDC_WD10_WX11");
                CHECK_INT(c->rules[0].stable_writes, SETTING_OFF);
                CHECK_INT(c->rules[0].force, 1);
                CHECK_INT(c->rules[0].line, 14);
                CHECK_CONTAINS(c->rules[0].file, "/stablepages.conf");
                CHECK_INT(c->rules[1].match.kind, MATCH_DEVNUM);
                CHECK_INT(c->rules[1].match.devnum, makedev(7, 0));
                CHECK_INT(c->rules[1].stable_writes, SETTING_AUTO);
                CHECK_INT(c->rules[1].force, 0);
                CHECK_INT(c->rules[1].line, 17);
        }
}

static void check_devices_appended(const Config *c) {
        check_strv(c->devices, (const char *[]){ "sd*", "nvme*", "vd*", NULL });
}

static void check_devices_reset(const Config *c) {
        check_strv(c->devices, (const char *[]){ "vdb", NULL });
        check_strv(c->never_remount, (const char *[]){ "/home", NULL });
}

static void check_devices_reset_to_all(const Config *c) {
        CHECK(c->devices == NULL);
        CHECK(c->never_remount == NULL);
        CHECK(c->metrics_file == NULL);
        CHECK_INT(c->policy, POLICY_BALANCED);
        CHECK_INT(c->rescan_usec, 60 * USEC_PER_SEC);
}

static void check_devices_partly_bad(const Config *c) {
        check_strv(c->devices, (const char *[]){ "sdb", NULL });
}

static void check_devices_all_bad(const Config *c) {
        /* Never widened to "all disks" by a typo: an empty, non-NULL list. */
        CHECK(c->devices != NULL);
        CHECK_INT(strv_length(c->devices), 0);
        CHECK(!config_device_is_managed(c, "sda"));
}

static void check_never_remount_normalized(const Config *c) {
        check_strv(c->never_remount, (const char *[]){ "/srv/data", "/var", NULL });
}

static void check_latency_rescan_5(const Config *c) {
        CHECK_INT(c->policy, POLICY_LATENCY);
        CHECK_INT(c->rescan_usec, 5 * USEC_PER_SEC);
}

static void check_valid_lines_applied(const Config *c) {
        /* Every case with bad lines also has these valid ones around them. */
        CHECK_INT(c->policy, POLICY_LATENCY);
        CHECK_INT(c->rescan_usec, 30 * USEC_PER_SEC);
}

static void check_rescan_30_only(const Config *c) {
        CHECK_INT(c->policy, POLICY_BALANCED);
        CHECK_INT(c->rescan_usec, 30 * USEC_PER_SEC);
}

static void check_integrity(const Config *c) {
        CHECK_INT(c->policy, POLICY_INTEGRITY);
}

static bool endswith_str(const char *s, const char *suffix) {
        return s && strlen(s) >= strlen(suffix) && streq(s + strlen(s) - strlen(suffix), suffix);
}

/* "FILE:LINE" (the file's base name) of the i-th source of the [Manager] key, or NULL. */
static const char *source_of(const Config *c, const char *key, size_t i) {
        static char buf[256];

        for (size_t k = 0; k < c->n_sources; k++)
                if (c->sources[k].rule == CONFIG_SOURCE_MANAGER && streq(c->sources[k].key, key) &&
                    i-- == 0) {
                        snprintf(buf, sizeof buf, "%s:%u", strrchr(c->sources[k].file, '/') + 1,
                                 c->sources[k].line);
                        return buf;
                }
        return NULL;
}

static void check_dropin_order(const Config *c) {
        CHECK_INT(c->policy, POLICY_INTEGRITY);                /* 20-b.conf beats 10-a.conf */
        CHECK_INT(c->rescan_usec, 10 * USEC_PER_SEC);          /* 10-a.conf beats the main file */
        CHECK_INT(c->stall_calm_usec, 7 * USEC_PER_SEC);       /* only in the main file */
        CHECK_INT(c->apply_mounted, APPLY_MOUNTED_NEXT_MOUNT); /* x.conf.bak, .hidden.conf */
        check_strv(c->devices, (const char *[]){ "sda", "sdb", NULL });
        /* What show-config says: the files read, in order, and where each key comes from. */
        CHECK_INT(strv_length(c->files), 3);
        if (strv_length(c->files) == 3) {
                CHECK(endswith_str(c->files[0], "/stablepages.conf"));
                CHECK(endswith_str(c->files[1], "/conf.d/10-a.conf"));
                CHECK(endswith_str(c->files[2], "/conf.d/20-b.conf"));
        }
        CHECK_STR(source_of(c, "Policy", 0), "20-b.conf:2");
        CHECK_STR(source_of(c, "RescanSec", 0), "10-a.conf:3");
        CHECK_STR(source_of(c, "StallCalmSec", 0), "stablepages.conf:4");
        CHECK_STR(source_of(c, "Devices", 0), "stablepages.conf:5");
        CHECK_STR(source_of(c, "Devices", 1), "10-a.conf:4");
        CHECK(!source_of(c, "Devices", 2));
        CHECK(!source_of(c, "ApplyMounted", 0));
}

static void check_merged_managers(const Config *c) {
        CHECK_INT(c->policy, POLICY_OBSERVE);
        CHECK_INT(c->rescan_usec, 20 * USEC_PER_SEC);
        CHECK_INT(c->stall_budget_usec, 5 * USEC_PER_MSEC);
}

static void check_device_rules(const Config *c) {
        CHECK_INT(c->n_rules, 4);
        if (c->n_rules != 4)
                return;
        CHECK_INT(c->rules[0].match.kind, MATCH_PROPERTY);
        CHECK_STR(c->rules[0].match.key, "ID_FS_UUID");
        CHECK_STR(c->rules[0].match.pattern, "01234567-89ab-cdef-0123-456789abcdef");
        CHECK_INT(c->rules[0].stable_writes, SETTING_ON);
        CHECK_INT(c->rules[0].force, -1);
        CHECK_INT(c->rules[0].line, 1);
        CHECK_INT(c->rules[1].match.kind, MATCH_NAME_GLOB);
        CHECK_STR(c->rules[1].match.pattern, "loop[0-3]");
        CHECK_INT(c->rules[1].stable_writes, _SETTING_INVALID); /* bad value ignored */
        CHECK_INT(c->rules[1].force, -1);                       /* a kernel name: ignored */
        CHECK_INT(c->rules[1].line, 3);
        CHECK_INT(c->rules[2].match.kind, MATCH_DEVNUM);
        CHECK_INT(c->rules[2].line, 9);
        CHECK_INT(c->rules[2].stable_writes, SETTING_AUTO);
        CHECK_INT(c->rules[3].match.kind, MATCH_NAME_GLOB);
        CHECK_STR(c->rules[3].match.pattern, "zram0");
        CHECK_INT(c->rules[3].stable_writes, _SETTING_INVALID); /* reset by empty value */
        CHECK_INT(c->rules[3].force, 0);
        CHECK_CONTAINS(c->rules[3].file, "conf.d/50-dev.conf");
        CHECK_INT(c->rules[3].line, 2);
}

static void check_duplicate_devices(const Config *c) {
        DeviceIdentity id = { .name = "loop7",
                              .devnum = makedev(7, 7),
                              .loop_backing_file = "/srv/7.img",
                              .kind = DEVICE_KIND_LOOP };
        const DeviceRule *setting_rule = NULL, *force_rule = NULL;
        Setting setting;
        bool force;

        /* Three sections for loop7 in two files: each key from the last that sets it. */
        CHECK_INT(c->n_rules, 3);
        config_device_settings(c, &id, &setting, &force, &setting_rule, &force_rule);
        CHECK_INT(setting, SETTING_ON);
        CHECK(force);
        CHECK(setting_rule && strstr(setting_rule->file, "10-a.conf") && setting_rule->line == 1);
        CHECK(force_rule && force_rule->line == 1 && strstr(force_rule->file, "/stablepages.conf"));
}

static void check_max_line(const Config *c) {
        CHECK_INT(strv_length(c->never_remount), 1);
        if (c->never_remount)
                CHECK_INT(strlen(c->never_remount[0]), LINE_MAX_LEN - strlen("NeverRemount="));
        CHECK_INT(c->rescan_usec, 30 * USEC_PER_SEC);
}

/* The lines of long_paths (below), each longer than inih's line buffer, read whole. */
static char long_backing_file[LINE_MAX_LEN], long_never_remount[LINE_MAX_LEN];

static void check_long_paths(const Config *c) {
        CHECK_INT(c->n_rules, 1);
        if (c->n_rules == 1) {
                CHECK_INT(c->rules[0].match.kind, MATCH_PROPERTY);
                CHECK_STR(c->rules[0].match.key, "LOOP_BACKING_FILE");
                CHECK_STR(c->rules[0].match.pattern, long_backing_file);
                CHECK_INT(c->rules[0].stable_writes, SETTING_ON);
                CHECK_INT(c->rules[0].line, 3);
        }
        CHECK_INT(strv_length(c->never_remount), 1);
        if (c->never_remount)
                CHECK_STR(c->never_remount[0], long_never_remount);
        CHECK_INT(c->policy, POLICY_OBSERVE); /* only the last, valid Policy= line */
}

/* Devices= of long_devices_ok: 400 names on one line of 3,607 bytes. */
static void check_long_devices(const Config *c) {
        CHECK_INT(strv_length(c->devices), 400);
        if (strv_length(c->devices) == 400) {
                CHECK_STR(c->devices[0], "loop1000");
                CHECK_STR(c->devices[217], "loop1217");
                CHECK_STR(c->devices[399], "loop1399");
        }
}

/* ---- the cases ---- */

/* "[Manager]\nNeverRemount=/aaa...<tail>\nRescanSec=30\n" where the second line is len
 * bytes long and ends with tail. */
static char long_line_ok[LINE_MAX_LEN + 64], long_line_bad[LINE_MAX_LEN + 64],
        long_line_split[LINE_MAX_LEN + 64];

/* "[Manager]\nDevices=loop1000 loop1001 ...\n": n names on one line. */
static char long_devices_ok[LINE_MAX_LEN + 64], long_devices_bad[2 * LINE_MAX_LEN];

/* A 4,000-byte [Device LOOP_BACKING_FILE=...] header and a 4,000-byte NeverRemount= line whose
 * path holds '#' and ';' (not after whitespace: no comment), then a bad line: its number is
 * right after the long lines. */
static char long_paths[3 * LINE_MAX_LEN];

/* A value with a run of 300 ';' the parser cannot be handed in pieces. */
static char long_semicolons[512];

static void make_long_line(char *buf, size_t len, const char *tail) {
        size_t k = strlen("NeverRemount=/");

        strcpy(buf, "[Manager]\nNeverRemount=/");
        buf += strlen(buf);
        memset(buf, 'a', len - k - strlen(tail));
        strcpy(buf + len - k - strlen(tail), tail);
        strcat(buf, "\nRescanSec=30\n");
}

static void make_long_devices(char *buf, unsigned n) {
        strcpy(buf, "[Manager]\nDevices=");
        for (unsigned i = 0; i < n; i++)
                sprintf(buf + strlen(buf), "%sloop%u", i ? " " : "", 1000 + i);
        strcat(buf, "\n");
}

/* A path of len bytes: "/srv/" then components of "d#NNN;x" and 'b's. */
static void make_long_path(char *buf, size_t len) {
        strcpy(buf, "/srv");
        for (unsigned i = 0; strlen(buf) + 8 <= len; i++)
                sprintf(buf + strlen(buf), "/d#%03u;x", i % 1000);
        memset(buf + strlen(buf), 'b', len - strlen(buf));
        buf[len] = '\0';
}

static void make_long_lines(void) {
        make_long_line(long_line_ok, LINE_MAX_LEN, "");
        make_long_line(long_line_bad, LINE_MAX_LEN + 1, "");
        /* If this line were cut at the limit, its tail would apply. */
        make_long_line(long_line_split, LINE_MAX_LEN + strlen("Policy=latency"), "Policy=latency");
        make_long_devices(long_devices_ok, 400);
        make_long_devices(long_devices_bad, 500);
        /* "[Device LOOP_BACKING_FILE=" and "]": 4,000 bytes in all. */
        make_long_path(long_backing_file, 4000 - strlen("[Device LOOP_BACKING_FILE=]"));
        make_long_path(long_never_remount, 4000 - strlen("NeverRemount="));
        snprintf(long_paths, sizeof long_paths,
                 "[Manager]\nPolicy=observe\n[Device LOOP_BACKING_FILE=%s]\nStableWrites=on\n"
                 "[Manager]\nNeverRemount=%s\nPolicy=bogus\n",
                 long_backing_file, long_never_remount);
        strcpy(long_semicolons, "[Manager]\nNeverRemount=/x");
        memset(long_semicolons + strlen(long_semicolons), ';', 300);
        strcat(long_semicolons, "\nRescanSec=30\n");
}

static const Case cases[] = {
        { "defaults, no files", {}, {}, check_defaults },
        { "empty files", { TEXT("main", ""), TEXT("10-a.conf", "\n# nothing\n") }, {}, check_defaults },
        {
                "every key",
                { TEXT("main", "# comment\n"
                               "; comment\n"
                               "[Manager]\n"
                               "Policy=integrity\n"
                               "Devices=sd* nvme[0-3]n1\n"
                               "Devices = vd?\n"
                               "ApplyMounted=remount-idle\n"
                               "RescanSec=0\n"
                               "StallBudgetMSec=250\n"
                               "StallWindowSec=60\n"
                               "StallCalmSec=604800\n"
                               "StallMinWaits=3\n"
                               "MetricsFile=/run/stablepages/metrics.prom\n"
                               "[Device ID_SERIAL=WDC_WD10_WX11]\n"
                               "StableWrites=off\n"
                               "Force=yes\n"
                               "[Device 7:0]\n"
                               "StableWrites=auto\n"
                               "Force=no\n"
                               "[Manager]\n"
                               "MetricsIntervalSec=3600\n"
                               "NeverRemount=/srv /var/lib/db\n"
                               "NeverRemount=/\n") },
                {},
                check_all_keys,
        },
        { "Devices= appends",
          { TEXT("main", "[Manager]\nDevices=sd* nvme*\nDevices=vd*\n") },
          {},
          check_devices_appended },
        { "empty Devices= resets",
          { TEXT("main", "[Manager]\nDevices=sda\nDevices=\nDevices=vdb\n"
                         "NeverRemount=/srv\nNeverRemount=\nNeverRemount=/home\n") },
          {},
          check_devices_reset },
        { "empty values reset to defaults",
          { TEXT("main", "[Manager]\nDevices=sda\nDevices=\nNeverRemount=/a\nNeverRemount=\n"
                         "MetricsFile=/m\nMetricsFile=\nPolicy=observe\nPolicy=\n"
                         "RescanSec=5\nRescanSec=\n") },
          {},
          check_devices_reset_to_all },
        { "Devices= bad entries",
          { TEXT("main", "[Manager]\nDevices=/dev/sda sdb sd$\n") },
          { ERR("main", 2, "invalid Devices= entry \"/dev/sda\": use the kernel name"),
            ERR("main", 2, "invalid Devices= entry \"sd$\": expected a kernel name glob") },
          check_devices_partly_bad },
        { "Devices= all entries bad",
          { TEXT("main", "[Manager]\nDevices=/dev/sda\n") },
          { ERR("main", 2, "invalid Devices= entry \"/dev/sda\": use the kernel name (\"sda\")") },
          check_devices_all_bad },
        /* A Devices= line rejected before its value is read: fails closed, as an assignment
         * whose entries are all invalid (the bench's 1,024 names on one line once left the
         * daemon writing every disk of the machine). 500 names: 4,507 bytes. */
        { "over-long Devices= line",
          { TEXT("main", long_devices_bad) },
          { ERR("main", 2, "line is too long (4507 bytes, at most 4096)"),
            ERR("main", 2, "Devices= on this line cannot be read: the disks it lists are only observed") },
          check_devices_all_bad },
        /* Longer than inih's 200-byte buffer: read whole, cut only between names. */
        { "Devices= of 400 names", { TEXT("main", long_devices_ok) }, {}, check_long_devices },
        { "4,000-byte lines",
          { TEXT("main", long_paths) },
          { ERR("main", 7, "invalid Policy= value \"bogus\"") },
          check_long_paths },
        { "a value the parser cannot take in pieces",
          { TEXT("main", long_semicolons) },
          { ERR("main", 2, "NeverRemount=: the value has a run of blanks or of '#' and ';' too long") },
          check_rescan_30_only },
        { "Devices= line not UTF-8",
          { TEXT("main", "[Manager]\n  Devices = sd\xe9\n") },
          { ERR("main", 2, "line is not valid UTF-8"),
            ERR("main", 2, "Devices= on this line cannot be read") },
          check_devices_all_bad },
        { "unreadable Devices= line after a good one",
          { TEXT("main", "[Manager]\nDevices=sdb\nDevices=sd\x1b\n") },
          { ERR("main", 3, "control character"), ERR("main", 3, "Devices= on this line cannot be read") },
          check_devices_partly_bad },
        { "NeverRemount= normalized",
          { TEXT("main", "[Manager]\nNeverRemount=//srv/./data/ /var relative /a/../b /var/\n") },
          { ERR("main", 2, "invalid NeverRemount= entry \"relative\": not an absolute path"),
            ERR("main", 2, "invalid NeverRemount= entry \"/a/../b\": \"..\" is not allowed") },
          check_never_remount_normalized },
        { "bad values",
          { TEXT("main", "[Manager]\n"
                         "Policy=fast\n"
                         "Policy=latency\n"
                         "ApplyMounted=always\n"
                         "RescanSec=30\n"
                         "RescanSec=86401\n"
                         "StallBudgetMSec=0\n"
                         "StallWindowSec=5min\n"
                         "MetricsFile=metrics.prom\n") },
          { ERR("main", 2,
                "invalid Policy= value \"fast\": expected observe, latency, balanced or integrity"),
            ERR("main", 4,
                "invalid ApplyMounted= value \"always\": expected next-mount or "
                "remount-idle"),
            ERR("main", 6,
                "invalid RescanSec= value \"86401\": expected a whole number of "
                "seconds from 0 to 86400"),
            ERR("main", 7,
                "invalid StallBudgetMSec= value \"0\": expected a whole number of "
                "milliseconds from 1 to 600000"),
            ERR("main", 8, "invalid StallWindowSec= value \"5min\""),
            ERR("main", 9, "invalid MetricsFile= value \"metrics.prom\": not an absolute path") },
          check_valid_lines_applied },
        { "more bad values",
          { TEXT("main", "[Manager]\n"
                         "StallCalmSec=-1\n"
                         "MetricsIntervalSec=3601\n"
                         "MetricsFile=/run/\n"
                         "Policy=latency\n"
                         "RescanSec=30\n") },
          { ERR("main", 2, "invalid StallCalmSec= value \"-1\""),
            ERR("main", 3,
                "invalid MetricsIntervalSec= value \"3601\": expected a whole number "
                "of seconds from 1 to 3600"),
            ERR("main", 4, "invalid MetricsFile= value \"/run/\": names a directory") },
          check_valid_lines_applied },
        { "unknown section reported once",
          { TEXT("main", "[Foo]\nBar=1\nBaz=2\n[Manager]\nPolicy=latency\nRescanSec=30\n") },
          { ERR("main", 1, "unknown section [Foo]") },
          check_valid_lines_applied },
        { "section names are case-sensitive",
          { TEXT("main", "[manager]\nPolicy=observe\n[Manager]\nPolicy=latency\nRescanSec=30\n") },
          { ERR("main", 1, "unknown section [manager] (section names are case-sensitive") },
          check_valid_lines_applied },
        { "malformed section header",
          { TEXT("main", "[Manager\nPolicy=observe\n[]\n[Manager] # x\n"
                         "[Manager]\nPolicy=latency\nRescanSec=30\n") },
          { ERR("main", 1, "malformed section header \"[Manager\""), ERR("main", 3, "unknown section []"),
            ERR("main", 4, "malformed section header \"[Manager] # x\"") },
          check_valid_lines_applied },
        { "line without =",
          { TEXT("main", "[Manager]\nPolicy=latency\nRescanSec 5\nRescanSec=30\nPolicy: observe\n") },
          { ERR("main", 3,
                "expected \"Key=value\", a [Section] header or a comment, got "
                "\"RescanSec 5\""),
            ERR("main", 5, "got \"Policy: observe\"") },
          check_valid_lines_applied },
        { "bad key names",
          { TEXT("main", "[Manager]\nPolicy=latency\n=5\nRescan Sec=5\nA:b=1\nRescanSec=30\n") },
          { ERR("main", 3, "missing key name before '='"), ERR("main", 4, "invalid key name \"Rescan Sec\""),
            ERR("main", 5, "invalid key name \"A:b\"") },
          check_valid_lines_applied },
        { "unknown key is a warning",
          { TEXT("main", "[Manager]\nPolicy=latency\nFoo=bar\npolicy=observe\nRescanSec=30\n"
                         "[Device sda]\nStableWrite=on\n") },
          { WARN("main", 3, "unknown key Foo= in [Manager]"), WARN("main", 4, "did you mean Policy=?"),
            WARN("main", 7, "unknown key StableWrite= in [Device]") },
          check_valid_lines_applied },
        { "key outside of any section",
          { TEXT("main", "Policy=observe\n[Manager]\nPolicy=latency\nRescanSec=30\n") },
          { ERR("main", 1, "Policy= outside of any section") },
          check_valid_lines_applied },
        { "inline comments are rejected",
          { TEXT("main", "[Manager]\nPolicy=observe ; for the db\nRescanSec=5 # five\n"
                         "Policy=latency\nRescanSec=30\nMetricsFile=/run/a;b\n") },
          { ERR("main", 2, "Policy=: inline comments are not supported (\"; for the db\")"),
            ERR("main", 3, "RescanSec=: inline comments are not supported") },
          check_valid_lines_applied },
        { "indented lines are not continuations",
          { TEXT("main", "[Manager]\nRescanSec=5\n    Policy=latency\n") },
          {},
          check_latency_rescan_5 },
        { "BOM and CRLF",
          { TEXT("main", "\xef\xbb\xbf[Manager]\r\nPolicy=latency\r\nRescanSec=30\r\n") },
          {},
          check_valid_lines_applied },
        { "NUL byte",
          { BYTES("main", "[Manager]\nPolicy=latency\nRescanSec=5\0junk\nRescanSec=30\n") },
          { ERR("main", 3, "line contains a NUL byte (at column 12)") },
          check_valid_lines_applied },
        { "NUL byte in a section header",
          { BYTES("main", "[Man\0ager]\nPolicy=observe\n[Manager]\nPolicy=latency\nRescanSec=30") },
          { ERR("main", 1, "NUL byte") },
          check_valid_lines_applied },
        { "non-UTF-8 bytes",
          { TEXT("main", "[Manager]\nPolicy=latency\nMetricsFile=/r\xe9sum\xe9\n"
                         "MetricsFile=/\xc0\xaf\n# \xed\xa0\x80 surrogate\n"
                         "MetricsFile=/caf\xc3\xa9\nRescanSec=30\n") },
          { ERR("main", 3, "line is not valid UTF-8 (byte 0xe9 at column 15)"),
            ERR("main", 4, "line is not valid UTF-8 (byte 0xc0 at column 14)"),
            ERR("main", 5, "line is not valid UTF-8 (byte 0xed at column 3)") },
          check_valid_lines_applied },
        { "control character",
          { TEXT("main", "[Manager]\nPolicy=latency\nRescanSec=\x1b[5\nRescanSec=30\n") },
          { ERR("main", 3, "control character (0x1b at column 11)") },
          check_valid_lines_applied },
        { "longest line", { TEXT("main", long_line_ok) }, {}, check_max_line },
        { "over-long line",
          { TEXT("main", long_line_bad), TEXT("10-a.conf", long_line_split) },
          { ERR("main", 2, "line is too long (4097 bytes, at most 4096)"),
            ERR("10-a.conf", 2, "line is too long (4110 bytes, at most 4096)") },
          check_rescan_30_only },
        { "file of exactly the maximum size",
          { { "main", FILE_FILLER, NULL, FILE_MAX }, TEXT("10-a.conf", "[Manager]\nRescanSec=30\n") },
          {},
          check_rescan_30_only },
        { "huge file",
          { { "main", FILE_FILLER, NULL, FILE_MAX + 1 },
            { "10-big.conf", FILE_FILLER, NULL, 4 * FILE_MAX },
            TEXT("20-a.conf", "[Manager]\nRescanSec=30\n") },
          { ERR("main", 0, "file is too large (1048577 bytes, at most 1048576)"),
            ERR("10-big.conf", 0, "file is too large") },
          check_rescan_30_only },
        { "unreadable drop-ins",
          { TEXT("main", "[Manager]\nPolicy=latency\n"),
            { "10-dangling.conf", FILE_SYMLINK, "does-not-exist.conf" },
            { "20-dir.conf", FILE_DIR },
            { "30-loop.conf", FILE_SYMLINK, "30-loop.conf" },
            { "40-chardev.conf", FILE_SYMLINK, "/dev/zero" },
            TEXT("50-ok.conf", "[Manager]\nRescanSec=30\n") },
          { ERR("10-dangling.conf", 0, "dangling symlink"), ERR("20-dir.conf", 0, "Is a directory"),
            ERR("30-loop.conf", 0, "Too many levels of symbolic links"),
            ERR("40-chardev.conf", 0, "not a regular file") },
          check_valid_lines_applied },
        { "values out of range",
          { TEXT("main", "[Manager]\n"
                         "RescanSec=99999999999999999999\n"
                         "StallBudgetMSec=600001\n"
                         "StallWindowSec=0\n"
                         "MetricsIntervalSec=0\n"
                         "StallCalmSec=604801\n"
                         "RescanSec=0x10\n"
                         "RescanSec=-9223372036854775808\n"
                         "Policy=latency\n"
                         "RescanSec=30\n") },
          { ERR("main", 2,
                "invalid RescanSec= value \"99999999999999999999\": expected a whole number of "
                "seconds from 0 to 86400"),
            ERR("main", 3, "invalid StallBudgetMSec= value \"600001\""),
            ERR("main", 4, "invalid StallWindowSec= value \"0\": expected a whole number of seconds from 1"),
            ERR("main", 5, "invalid MetricsIntervalSec= value \"0\""),
            ERR("main", 6, "invalid StallCalmSec= value \"604801\""),
            ERR("main", 7, "invalid RescanSec= value \"0x10\""),
            ERR("main", 8, "invalid RescanSec= value \"-9223372036854775808\"") },
          check_valid_lines_applied },
        { "duplicated [Device] sections",
          { TEXT("main", "[Device LOOP_BACKING_FILE=/srv/7.img]\nForce=yes\nStableWrites=off\n"
                         "[Device LOOP_BACKING_FILE=/srv/7.img]\nStableWrites=auto\n"),
            TEXT("10-a.conf", "[Device loop7]\nStableWrites=off\nStableWrites=on\n") },
          {},
          check_duplicate_devices },
        { "symlink loops among drop-ins",
          { TEXT("main", "[Manager]\nPolicy=latency\n"),
            { "10-a.conf", FILE_SYMLINK, "20-b.conf" },
            { "20-b.conf", FILE_SYMLINK, "10-a.conf" },
            { "30-up.conf", FILE_SYMLINK, "../conf.d/./30-up.conf" },
            TEXT("50-ok.conf", "[Manager]\nRescanSec=30\n") },
          { ERR("10-a.conf", 0, "cannot read: Too many levels of symbolic links"),
            ERR("20-b.conf", 0, "cannot read: Too many levels of symbolic links"),
            ERR("30-up.conf", 0, "cannot read: Too many levels of symbolic links") },
          check_valid_lines_applied },
        { "unreadable main file",
          { { "main", FILE_DIR }, TEXT("10-a.conf", "[Manager]\nRescanSec=30\n") },
          { ERR("main", 0, "Is a directory") },
          check_rescan_30_only },
        { "symlinks are followed, /dev/null masks",
          { TEXT("main", "[Manager]\nPolicy=observe\n"),
            { "10-link.conf", FILE_SYMLINK, "real.txt" },
            TEXT("real.txt", "[Manager]\nPolicy=integrity\n"),
            { "20-masked.conf", FILE_SYMLINK, "/dev/null" } },
          {},
          check_integrity },
        { "drop-in order",
          { TEXT("main", "[Manager]\nPolicy=latency\nRescanSec=99\nStallCalmSec=7\nDevices=sda\n"),
            TEXT("20-b.conf", "[Manager]\nPolicy=integrity\n"),
            TEXT("10-a.conf", "[Manager]\nPolicy=observe\nRescanSec=10\nDevices=sdb\n"),
            TEXT("x.conf.bak", "[Manager]\nApplyMounted=remount-idle\n"),
            TEXT(".hidden.conf", "[Manager]\nApplyMounted=remount-idle\n") },
          {},
          check_dropin_order },
        { "diagnostics name the drop-in",
          { TEXT("main", "[Manager]\nPolicy=latency\n"),
            TEXT("10-a.conf", "\n[Manager]\nRescanSec=x\nRescanSec=30\n") },
          { ERR("10-a.conf", 3, "invalid RescanSec= value \"x\"") },
          check_valid_lines_applied },
        { "duplicate [Manager] sections merge",
          { TEXT("main", "[Manager]\nPolicy=latency\nRescanSec=20\n[Manager]\nPolicy=observe\n"
                         "StallBudgetMSec=5\n") },
          {},
          check_merged_managers },
        { "[Device] sections",
          { TEXT("main", "[Device ID_FS_UUID=01234567-89ab-cdef-0123-456789abcdef]\n" /* 1 */
                         "StableWrites=on\n"
                         "[Device loop[0-3]]\n" /* 3 */
                         "StableWrites=maybe\n"
                         "Force=perhaps\n"
                         "Force=true\n"
                         "[Device /dev/sda]\n" /* 7 */
                         "StableWrites=off\n"
                         "[Device   8:16  ]\n" /* 9 */
                         "StableWrites=auto\n"
                         "[Device]\n" /* 11 */
                         "Force=yes\n"
                         "[Device id_wwn=x]\n" /* 13 */
                         "[Device 8:x]\n"),
            TEXT("50-dev.conf", "\n[Device zram0]\nStableWrites=on\nStableWrites=\nForce=no\n") },
          { ERR("main", 4, "invalid StableWrites= value \"maybe\": expected on, off or auto"),
            ERR("main", 5, "invalid Force= value \"perhaps\": expected a boolean"),
            ERR("main", 6,
                "Force=true in [Device loop[0-3]]: a kernel name goes to whichever disk takes it"),
            ERR("main", 7,
                "[Device /dev/sda]: invalid device match \"/dev/sda\": use the kernel "
                "name (\"sda\"), not a path"),
            ERR("main", 11, "[Device]: missing device match"),
            ERR("main", 13, "invalid udev property name \"id_wwn\""),
            ERR("main", 14, "invalid device number \"8:x\"") },
          check_device_rules },
};

/* ---- running a case ---- */

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        return remove(path) < 0 ? -errno : 0;
}

static void rm_rf(const char *dir) {
        CHECK(nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0);
}

static void write_bytes(const char *path, const char *data, size_t size) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        CHECK(fd >= 0);
        CHECK(write(fd, data, size) == (ssize_t) size);
}

static void write_filler(const char *path, size_t size) {
        _cleanup_free_ char *buf = malloc(size);

        CHECK(buf != NULL);
        if (!buf)
                return;
        memset(buf, '#', size);
        for (size_t i = 99; i < size; i += 100)
                buf[i] = '\n';
        write_bytes(path, buf, size);
}

static void make_file(const char *dir, const FileSpec *f) {
        _cleanup_free_ char *path = streq(f->name, "main") ? path_join(dir, "stablepages.conf")
                                                           : strdup_printf("%s/conf.d/%s", dir, f->name);

        switch (f->kind) {
        case FILE_TEXT:
                write_bytes(path, f->data, strlen(f->data));
                break;
        case FILE_BYTES:
                write_bytes(path, f->data, f->size);
                break;
        case FILE_SYMLINK:
                CHECK(symlink(f->data, path) == 0);
                break;
        case FILE_DIR:
                CHECK(mkdir(path, 0755) == 0);
                break;
        case FILE_FILLER:
                write_filler(path, f->size);
                break;
        }
}

static bool diag_matches(const ConfigDiag *d, const ExpectDiag *e) {
        const char *file = streq(e->file, "main") ? "/stablepages.conf" : e->file;
        size_t fl = strlen(file), dl = strlen(d->file);

        return d->level == e->level && d->line == e->line && dl >= fl && streq(d->file + dl - fl, file) &&
               strstr(d->message, e->text);
}

static void run_case(const Case *t) {
        char dir[] = "/tmp/test-config-XXXXXX";
        _cleanup_free_ char *main_file = NULL, *dropin_dir = NULL;
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {};
        size_t n_expected = 0;
        int failed_before = tests_failed;

        CHECK(mkdtemp(dir) != NULL);
        main_file = path_join(dir, "stablepages.conf");
        dropin_dir = path_join(dir, "conf.d");
        CHECK(mkdir(dropin_dir, 0755) == 0);
        for (size_t i = 0; i < ELEMENTSOF(t->files) && t->files[i].name; i++)
                make_file(dir, &t->files[i]);

        CHECK_INT(config_load(main_file, dropin_dir, &c, &diags), 0);

        for (size_t i = 0; i < ELEMENTSOF(t->diags) && t->diags[i].file; i++) {
                const ExpectDiag *e = &t->diags[i];
                bool found = false;

                n_expected++;
                for (size_t j = 0; j < diags.n && !found; j++)
                        found = diag_matches(&diags.items[j], e);
                if (!found) {
                        fprintf(stderr, "%s: missing %s at %s:%u: %s\n", t->name,
                                e->level == DIAG_ERROR ? "error" : "warning", e->file, e->line, e->text);
                        tests_failed++;
                }
        }
        CHECK_INT(diags.n, n_expected);
        if (t->check)
                t->check(&c);

        if (tests_failed != failed_before) {
                fprintf(stderr, "case \"%s\" failed; its diagnostics:\n", t->name);
                config_diags_print(&diags, stderr);
        }
        rm_rf(dir);
}

/* ---- matches ---- */

typedef struct MatchParseCase {
        const char *text;
        int ret;
        MatchKind kind;
        const char *key, *pattern, *formatted;
        unsigned major, minor;
        const char *error;
} MatchParseCase;

static const MatchParseCase match_parse_cases[] = {
        { "zram*", 0, MATCH_NAME_GLOB, NULL, "zram*", "zram*" },
        { "  loop[0-3] ", 0, MATCH_NAME_GLOB, NULL, "loop[0-3]", "loop[0-3]" },
        { "nvme0n1", 0, MATCH_NAME_GLOB, NULL, "nvme0n1", "nvme0n1" },
        { "7:0", 0, MATCH_DEVNUM, NULL, "7:0", "7:0", 7, 0 },
        { "259:12", 0, MATCH_DEVNUM, NULL, "259:12", "259:12", 259, 12 },
        { "ID_WWN=0x5000c500a1b2c3d4", 0, MATCH_PROPERTY, "ID_WWN", "0x5000c500a1b2c3d4",
          "ID_WWN=0x5000c500a1b2c3d4" },
        { "ID_FS_UUID = 0123*", 0, MATCH_PROPERTY, "ID_FS_UUID", "0123*", "ID_FS_UUID=0123*" },
        { "ID_SERIAL=Samsung SSD_*", 0, MATCH_PROPERTY, "ID_SERIAL", "Samsung SSD_*",
          "ID_SERIAL=Samsung SSD_*" },
        { "", -EINVAL, .error = "missing device match" },
        { "   ", -EINVAL, .error = "missing device match" },
        { "/dev/sda", -EINVAL, .error = "use the kernel name (\"sda\"), not a path" },
        { "sd a", -EINVAL, .error = "invalid device match \"sd a\"" },
        { "sda/sda1", -EINVAL, .error = "invalid device match" },
        { "7:", -EINVAL, .error = "invalid device number \"7:\"" },
        { "7:0:1", -EINVAL, .error = "invalid device number" },
        { "4096:0", -EINVAL, .error = "invalid device number" },
        { "id_wwn=1", -EINVAL, .error = "invalid udev property name \"id_wwn\"" },
        { "ID-WWN=1", -EINVAL, .error = "invalid udev property name" },
        { "=1", -EINVAL, .error = "invalid udev property name \"\"" },
        { "ID_WWN=", -EINVAL, .error = "empty value for udev property ID_WWN" },
};

static void test_match_parse(void) {
        for (size_t i = 0; i < ELEMENTSOF(match_parse_cases); i++) {
                const MatchParseCase *t = &match_parse_cases[i];
                _cleanup_free_ char *error = NULL, *formatted = NULL;
                DeviceMatch m = {};
                int r = device_match_parse(t->text, &m, &error);

                CHECK_INT(r, t->ret);
                if (r < 0) {
                        CHECK_CONTAINS(error, t->error);
                        continue;
                }
                CHECK(error == NULL);
                CHECK_INT(m.kind, t->kind);
                if (t->key)
                        CHECK_STR(m.key, t->key);
                else
                        CHECK(m.key == NULL);
                CHECK_STR(m.pattern, t->pattern);
                if (t->kind == MATCH_DEVNUM)
                        CHECK_INT(m.devnum, makedev(t->major, t->minor));
                formatted = device_match_to_string(&m);
                CHECK_STR(formatted, t->formatted);
                device_match_done(&m);
        }
}

typedef struct MatchTestCase {
        const char *match;
        const char *name;
        unsigned major, minor;
        const char *const *properties;
        bool expected;
} MatchTestCase;

/* sda with one partition sda1 carrying a filesystem: the properties of both. */
static const char *const sda_props[] = {
        "DEVTYPE=disk",
        "ID_WWN=0x5000c500a1b2c3d4",
        "ID_SERIAL=WDC_WD40EFRX_1234",
        "DEVTYPE=partition",
        "ID_FS_TYPE=ext4",
        "ID_FS_UUID=01234567-89ab-cdef-0123-456789abcdef",
        "ID_FS_UUID_ENC=01234567-89ab-cdef-0123-456789abcdef",
        NULL,
};

static const MatchTestCase match_test_cases[] = {
        { "zram*", "zram0", 252, 0, NULL, true },
        { "zram*", "zram", 252, 0, NULL, true },
        { "zram*", "loop0", 7, 0, NULL, false },
        { "loop[0-3]", "loop3", 7, 3, NULL, true },
        { "loop[0-3]", "loop4", 7, 4, NULL, false },
        { "loop[0-3]", "loop10", 7, 10, NULL, false },
        { "sd?", "sda", 8, 0, sda_props, true },
        { "sd?", "sdaa", 65, 160, NULL, false },
        { "7:0", "loop0", 7, 0, NULL, true },
        { "7:0", "loop1", 7, 1, NULL, false },
        { "8:0", "sda", 8, 0, sda_props, true },
        { "ID_WWN=0x5000c500a1b2c3d4", "sda", 8, 0, sda_props, true },
        { "ID_WWN=0x5000*", "sda", 8, 0, sda_props, true },
        { "ID_WWN=0x6000*", "sda", 8, 0, sda_props, false },
        { "ID_WWN=0x5000c500a1b2c3d4", "sdb", 8, 16, NULL, false },
        /* a property of a partition of the disk */
        { "ID_FS_UUID=01234567-89ab-cdef-0123-456789abcdef", "sda", 8, 0, sda_props, true },
        { "ID_FS_TYPE=ext4", "sda", 8, 0, sda_props, true },
        { "ID_FS_TYPE=xfs", "sda", 8, 0, sda_props, false },
        { "DEVTYPE=partition", "sda", 8, 0, sda_props, true },
        /* the key must match exactly, not as a prefix */
        { "ID_FS_UUID=01234567-89ab-cdef-0123-456789abcdef", "sda", 8, 0,
          (const char *const[]){ "ID_FS_UUID_ENC=01234567-89ab-cdef-0123-456789abcdef", NULL }, false },
        { "ID_FS=*", "sda", 8, 0, sda_props, false },
        { "ID_SERIAL=*1234", "sda", 8, 0, sda_props, true },
};

static void test_match_test(void) {
        for (size_t i = 0; i < ELEMENTSOF(match_test_cases); i++) {
                const MatchTestCase *t = &match_test_cases[i];
                DeviceMatch m = {};
                DeviceIdentity id = {
                        .name = t->name,
                        .devnum = makedev(t->major, t->minor),
                        .properties = (char *const *) t->properties,
                };

                CHECK_INT(device_match_parse(t->match, &m, NULL), 0);
                if (device_match_test(&m, &id) != t->expected) {
                        fprintf(stderr, "%s:%d: [Device %s] on %s: expected %s\n", __FILE__, __LINE__,
                                t->match, t->name, t->expected ? "match" : "no match");
                        tests_failed++;
                }
                device_match_done(&m);
        }
}

/* ---- settings and Devices= ---- */

static void test_device_settings(void) {
        static const char text[] = "[Device sd*]\n" /* 1 */
                                   "StableWrites=off\n"
                                   "[Device ID_SERIAL=WDC_WD40EFRX_1234]\n" /* 3 */
                                   "StableWrites=on\n"
                                   "Force=yes\n"
                                   "[Device sda]\n" /* 6 */
                                   "Force=no\n"
                                   "[Device ID_WWN=0x5000c500a1b2c3e5]\n" /* 8 */
                                   "Force=yes\n";
        static const char *const sdb_props[] = { "ID_WWN=0x5000c500a1b2c3e5", NULL };
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {};
        const DeviceRule *setting_rule, *force_rule;
        Setting setting;
        bool force;

        CHECK_INT(config_init_defaults(&c), 0);
        CHECK_INT(config_parse_buffer(&c, "mem", text, sizeof text - 1, &diags), 0);
        CHECK_INT(diags.n, 0);
        CHECK_INT(c.n_rules, 4);

        /* sda: sd* says off, its serial says on + force, sda says force=no */
        config_device_settings(&c, &(DeviceIdentity){ "sda", makedev(8, 0), (char *const *) sda_props },
                               &setting, &force, &setting_rule, &force_rule);
        CHECK_INT(setting, SETTING_ON);
        CHECK(!force);
        CHECK(setting_rule && setting_rule->line == 3);
        CHECK(force_rule && force_rule->line == 6);
        CHECK_STR(setting_rule ? setting_rule->file : NULL, "mem");

        /* sdb: only sd* and its WWN */
        config_device_settings(&c, &(DeviceIdentity){ "sdb", makedev(8, 16), (char *const *) sdb_props },
                               &setting, &force, &setting_rule, &force_rule);
        CHECK_INT(setting, SETTING_OFF);
        CHECK(force);
        CHECK(setting_rule && setting_rule->line == 1);
        CHECK(force_rule && force_rule->line == 8);

        /* vda: nothing */
        config_device_settings(&c, &(DeviceIdentity){ "vda", makedev(254, 0), NULL }, &setting, &force,
                               &setting_rule, &force_rule);
        CHECK_INT(setting, SETTING_AUTO);
        CHECK(!force);
        CHECK(setting_rule == NULL);
        CHECK(force_rule == NULL);

        /* optional outputs */
        config_device_settings(&c, &(DeviceIdentity){ "sdb", makedev(8, 16), NULL }, &setting, NULL, NULL,
                               NULL);
        CHECK_INT(setting, SETTING_OFF);
}

/* Force=yes binds to one disk itself, never to a slot, a name, a number, a pattern or what is on
 * a disk: such a line is an error with its file:line and forces nothing. */
static void test_force_bound_to_disk(void) {
        static const char text[] = "[Device zram*]\n" /* 1 */
                                   "StableWrites=off\n"
                                   "Force=yes\n"
                                   "[Device 252:0]\n" /* 4 */
                                   "Force=yes\n"
                                   "[Device ID_PATH=pci-0000:00:1f.2-ata-1]\n" /* 6 */
                                   "Force=yes\n"
                                   "[Device ID_FS_UUID=01234567-89ab-cdef-0123-456789abcdef]\n" /* 8 */
                                   "Force=yes\n"
                                   "[Device ID_SERIAL=WDC_*]\n" /* 10 */
                                   "Force=1\n"
                                   "[Device ID_SERIAL=WDC\\*1]\n" /* 12: exact, '*' escaped */
                                   "Force=no\n"
                                   "Force=yes\n"
                                   "[Device DM_UUID=CRYPT-LUKS2-abc]\n" /* 15 */
                                   "StableWrites=off\n"
                                   "Force=yes\n";
        static const char *const slot[] = { "ID_PATH=pci-0000:00:1f.2-ata-1",
                                            "ID_FS_UUID=01234567-89ab-cdef-0123-456789abcdef",
                                            "ID_SERIAL=WDC_other", NULL };
        static const char *const star[] = { "ID_SERIAL=WDC*1", NULL };
        static const char *const dm[] = { "DM_UUID=CRYPT-LUKS2-abc", NULL };
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {};
        const DeviceRule *force_rule;
        Setting setting;
        bool force;

        CHECK_INT(config_init_defaults(&c), 0);
        CHECK_INT(config_parse_buffer(&c, "mem", text, sizeof text - 1, &diags), 0);
        CHECK_INT(diags.n, 5);
        for (size_t i = 0; i < diags.n && i < 5; i++) {
                static const unsigned lines[] = { 3, 5, 7, 9, 11 };
                static const char *const why[] = {
                        "a kernel name goes to whichever disk takes it",
                        "a device number goes to whichever disk takes it",
                        "ID_PATH names a slot, which another disk plugged there matches too",
                        "ID_FS_UUID names no disk itself",
                        "a pattern can match other disks",
                };
                CHECK_INT(diags.items[i].level, DIAG_ERROR);
                CHECK_INT(diags.items[i].line, lines[i]);
                CHECK_CONTAINS(diags.items[i].message, why[i]);
                CHECK_CONTAINS(diags.items[i].message, "ignoring this line");
        }
        for (size_t i = 0; i < 5 && i < c.n_rules; i++)
                CHECK_INT(c.rules[i].force, -1);

        /* zram0 in the slot, with that filesystem and a serial the pattern matches: no force. */
        config_device_settings(&c,
                               &(DeviceIdentity){ "zram0", makedev(252, 0), (char *const *) slot,
                                                  .kind = DEVICE_KIND_ZRAM },
                               &setting, &force, NULL, &force_rule);
        CHECK_INT(setting, SETTING_OFF);
        CHECK(!force);
        CHECK(force_rule == NULL);
        /* The escaped '*' is the disk's own serial. */
        config_device_settings(&c, &(DeviceIdentity){ "sdc", makedev(8, 32), (char *const *) star },
                               &setting, &force, NULL, &force_rule);
        CHECK(force);
        CHECK(force_rule && force_rule->line == 12);
        /* DM_UUID names the dm device, not a disk below it that carries the same UUID. */
        config_device_settings(
                &c, &(DeviceIdentity){ "dm-0", makedev(253, 0), (char *const *) dm, .kind = DEVICE_KIND_DM },
                &setting, &force, NULL, NULL);
        CHECK_INT(setting, SETTING_OFF);
        CHECK(force);
        config_device_settings(
                &c, &(DeviceIdentity){ "sdd", makedev(8, 48), (char *const *) dm, .kind = DEVICE_KIND_SCSI },
                &setting, &force, NULL, NULL);
        CHECK_INT(setting, SETTING_OFF);
        CHECK(!force);
}

static void test_managed(void) {
        static const struct {
                const char *devices; /* Devices= value, NULL for none */
                const char *name;
                bool expected;
        } t[] = {
                { NULL, "sda", true },
                { NULL, "zram0", true },
                { "sd* nvme0n1", "sda", true },
                { "sd* nvme0n1", "nvme0n1", true },
                { "sd* nvme0n1", "nvme1n1", false },
                { "sd* nvme0n1", "vda", false },
                { "loop[0-3]", "loop2", true },
                { "loop[0-3]", "loop12", false },
                { "", "sda", true },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_(config_diags_done) ConfigDiags diags = {};
                _cleanup_(config_done) Config c = {};
                _cleanup_free_ char *text = NULL;

                CHECK_INT(config_init_defaults(&c), 0);
                if (t[i].devices) {
                        text = strdup_printf("[Manager]\nDevices=%s\n", t[i].devices);
                        CHECK_INT(config_parse_buffer(&c, "mem", text, strlen(text), &diags), 0);
                        CHECK_INT(diags.n, 0);
                }
                if (config_device_is_managed(&c, t[i].name) != t[i].expected) {
                        fprintf(stderr, "%s:%d: Devices=%s, %s: expected %s\n", __FILE__, __LINE__,
                                t[i].devices ?: "(unset)", t[i].name,
                                t[i].expected ? "managed" : "not managed");
                        tests_failed++;
                }
        }
}

/* ---- the rest of the API ---- */

static void test_strings(void) {
        for (PolicyMode m = 0; m < _POLICY_MODE_MAX; m++)
                CHECK_INT(policy_mode_from_string(policy_mode_to_string(m)), m);
        for (ApplyMounted a = 0; a < _APPLY_MOUNTED_MAX; a++)
                CHECK_INT(apply_mounted_from_string(apply_mounted_to_string(a)), a);
        for (Setting s = 0; s < _SETTING_MAX; s++)
                CHECK_INT(setting_from_string(setting_to_string(s)), s);
        CHECK_STR(policy_mode_to_string(POLICY_BALANCED), "balanced");
        CHECK_STR(apply_mounted_to_string(APPLY_MOUNTED_REMOUNT_IDLE), "remount-idle");
        CHECK_STR(setting_to_string(SETTING_OFF), "off");
        CHECK_INT(policy_mode_from_string("Balanced"), _POLICY_MODE_INVALID);
        CHECK_INT(policy_mode_from_string(NULL), _POLICY_MODE_INVALID);
        CHECK_INT(apply_mounted_from_string("remount"), _APPLY_MOUNTED_INVALID);
        CHECK_INT(setting_from_string("yes"), _SETTING_INVALID);
        CHECK(policy_mode_to_string(_POLICY_MODE_MAX) == NULL);
        CHECK(setting_to_string(_SETTING_INVALID) == NULL);
}

static void test_diags_print(void) {
        static const char text[] = "[Manager]\nPolicy=x\nFoo=1\n";
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *out = NULL;
        size_t size = 0;
        FILE *f;

        CHECK_INT(config_init_defaults(&c), 0);
        CHECK_INT(config_parse_buffer(&c, "a.conf", text, sizeof text - 1, &diags), 0);
        CHECK_INT(config_parse_file(&c, "/nonexistent/b.conf", &diags), 0);
        CHECK_INT(diags.n, 3);
        CHECK_INT(config_diags_errors(&diags), 2);

        f = open_memstream(&out, &size);
        CHECK(f != NULL);
        if (!f)
                return;
        config_diags_print(&diags, f);
        fclose(f);
        CHECK_STR(out, "a.conf:2: error: invalid Policy= value \"x\": expected observe, latency, "
                       "balanced or integrity; ignoring this line\n"
                       "a.conf:3: warning: unknown key Foo= in [Manager]; ignoring it\n"
                       "/nonexistent/b.conf: error: cannot read: No such file or directory; "
                       "ignoring this file\n");
}

static void test_buffer(void) {
        /* Not NUL-terminated, no final newline, a NUL byte, many bad lines. */
        static const char text[] = "[Manager]\nPolicy=latency\n\0\nRescanSec=30XXXX";
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *many = NULL;
        size_t n = 0;

        CHECK_INT(config_init_defaults(&c), 0);
        CHECK_INT(config_parse_buffer(&c, "mem", text, sizeof text - 1 - 4, &diags), 0);
        CHECK_INT(diags.n, 1);
        CHECK_INT(diags.n > 0 ? diags.items[0].line : 0, 3);
        check_valid_lines_applied(&c);

        /* At most 1000 problems per file are recorded, plus one line saying so. */
        config_diags_done(&diags);
        many = malloc(3000 * 4);
        CHECK(many != NULL);
        if (!many)
                return;
        for (size_t i = 0; i < 3000; i++) {
                memcpy(many + n, "xyz\n", 4);
                n += 4;
        }
        CHECK_INT(config_parse_buffer(&c, "many", many, n, &diags), 0);
        CHECK_INT(diags.n, 1001);
        CHECK_CONTAINS(diags.n > 0 ? diags.items[diags.n - 1].message : NULL, "too many problems");

        config_diags_done(&diags);
        CHECK_INT(config_parse_buffer(&c, NULL, NULL, 0, &diags), 0);
        CHECK_INT(diags.n, 0);
}

/* The shipped conf/stablepages.conf: it parses cleanly as shipped, and also with every
 * "#Key=" and "#[Section]" line uncommented, which proves that it shows the defaults, names
 * every [Manager] key, and that its [Device] examples are valid. Built when the build
 * passes -DSHIPPED_CONFIG="path". */
static void test_shipped_config(void) {
#ifdef SHIPPED_CONFIG
        _cleanup_free_ char *text = NULL, *active = NULL;
        size_t size = 0, n = 0, manager_keys = 0;
        bool in_examples = false;

        CHECK_INT(read_full_file(SHIPPED_CONFIG, 1024 * 1024, &text, &size), 0);
        if (!text)
                return;

        for (int pass = 0; pass < 2; pass++) {
                _cleanup_(config_diags_done) ConfigDiags diags = {};
                _cleanup_(config_done) Config c = {};
                const char *data = pass == 0 ? text : active;

                CHECK_INT(config_init_defaults(&c), 0);
                CHECK_INT(config_parse_buffer(&c, SHIPPED_CONFIG, data, strlen(data), &diags), 0);
                config_diags_print(&diags, stderr);
                CHECK_INT(diags.n, 0);
                CHECK_INT(c.policy, POLICY_BALANCED);
                CHECK(c.devices == NULL);
                CHECK_INT(c.apply_mounted, APPLY_MOUNTED_NEXT_MOUNT);
                CHECK_INT(c.rescan_usec, 60 * USEC_PER_SEC);
                CHECK_INT(c.stall_budget_usec, 100 * USEC_PER_MSEC);
                CHECK_INT(c.stall_window_usec, 300 * USEC_PER_SEC);
                CHECK_INT(c.stall_calm_usec, 1800 * USEC_PER_SEC);
                CHECK(c.metrics_file == NULL);
                CHECK_INT(c.metrics_interval_usec, 15 * USEC_PER_SEC);
                CHECK(c.never_remount == NULL);
                if (pass == 0) {
                        CHECK_INT(c.n_rules, 0);
                        /* Uncomment "#Key=" and "#[" lines for the second pass. */
                        active = malloc(size + 1);
                        CHECK(active != NULL);
                        if (!active)
                                return;
                        for (const char *p = text; *p;) {
                                size_t k = strcspn(p, "\n") + (p[strcspn(p, "\n")] ? 1 : 0);
                                size_t key = p[0] == '#' ? strspn(p + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                                         "abcdefghijklmnopqrstuvwxyz")
                                                         : 0;
                                bool uncomment =
                                        p[0] == '#' && (p[1] == '[' || (key > 0 && p[1 + key] == '='));

                                if (uncomment && p[1] == '[')
                                        in_examples = true;
                                else if (uncomment && !in_examples)
                                        manager_keys++;
                                memcpy(active + n, p + uncomment, k - uncomment);
                                n += k - uncomment;
                                p += k;
                        }
                        active[n] = '\0';
                } else
                        CHECK(c.n_rules > 0);
        }
        /* Every [Manager] key appears once, commented out. */
        CHECK_INT(manager_keys, 12);
#endif
}

/* The drop-in directory itself is a symlink loop, a file, or (as an unprivileged user)
 * unreadable; the main file is unreadable: each is reported, the rest applies. */
static int load_dir(const char *dir, Config *c, ConfigDiags *diags) {
        _cleanup_free_ char *main_file = path_join(dir, "stablepages.conf"),
                            *dropins = path_join(dir, "conf.d");
        return config_load(main_file, dropins, c, diags);
}

static bool has_diag(const ConfigDiags *d, const char *file_suffix, unsigned line, const char *text) {
        for (size_t i = 0; i < d->n; i++) {
                size_t fl = strlen(d->items[i].file), sl = strlen(file_suffix);
                if (d->items[i].level == DIAG_ERROR && d->items[i].line == line && fl >= sl &&
                    streq(d->items[i].file + fl - sl, file_suffix) && strstr(d->items[i].message, text))
                        return true;
        }
        config_diags_print(d, stderr);
        return false;
}

static int load_unreadable(void *userdata) {
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {};

        CHECK_INT(load_dir(userdata, &c, &diags), 0);
        CHECK_INT(diags.n, 2);
        CHECK(has_diag(&diags, "/stablepages.conf", 0, "cannot read: Permission denied"));
        CHECK(has_diag(&diags, "/conf.d", 0, "cannot read directory: Permission denied"));
        CHECK_INT(c.policy, POLICY_BALANCED);
        return tests_failed > 0 ? -EBADMSG : 0;
}

static void test_unusable_dropin_dir(void) {
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {};
        char *dir = tree_new();

        tree_put(dir, "stablepages.conf", "[Manager]\nPolicy=latency\nRescanSec=30\n");
        tree_symlink(dir, "conf.d", "conf.d");
        CHECK_INT(load_dir(dir, &c, &diags), 0);
        CHECK_INT(diags.n, 1);
        CHECK(has_diag(&diags, "/conf.d", 0, "cannot read directory: Too many levels of symbolic links"));
        check_valid_lines_applied(&c);
        config_done(&c);
        config_diags_done(&diags);

        tree_rm(dir, "conf.d");
        tree_put(dir, "conf.d", "a file");
        CHECK_INT(load_dir(dir, &c, &diags), 0);
        CHECK(has_diag(&diags, "/conf.d", 0, "cannot read directory: Not a directory"));
        check_valid_lines_applied(&c);
        config_done(&c);
        config_diags_done(&diags);

        /* The main file a symlink loop, as well. */
        tree_rm(dir, "stablepages.conf");
        tree_symlink(dir, "stablepages.conf", "stablepages.conf");
        CHECK_INT(load_dir(dir, &c, &diags), 0);
        CHECK(has_diag(&diags, "/stablepages.conf", 0, "cannot read: Too many levels of symbolic links"));
        config_done(&c);
        config_diags_done(&diags);

        /* Unreadable for the daemon's user: mode 000 (checked as nobody: root ignores it). */
        tree_rm(dir, "stablepages.conf");
        tree_rm(dir, "conf.d");
        tree_put(dir, "stablepages.conf", "[Manager]\nPolicy=latency\n");
        tree_put(dir, "conf.d/10-a.conf", "[Manager]\nPolicy=latency\n");
        tree_chmod(dir, "stablepages.conf", 0);
        tree_chmod(dir, "conf.d", 0);
        CHECK_INT(run_in_child(load_unreadable, dir, true), 0);
        tree_free(dir);
}

/* config_format() (the configuration in force as the daemon writes it for the applier): every
 * key under where it was read, each [Device] section after its file:line; reads back without a
 * diagnostic into the same settings. */
static void test_format(void) {
        static const char text[] = "[Manager]\n"
                                   "Policy=latency\n"
                                   "Devices=sd* nvme0n1\n"
                                   "NeverRemount=/srv//data/ /home\n"
                                   "MetricsFile=/run/m.prom\n"
                                   "StallBudgetMSec=250\n"
                                   "[Device ID_SERIAL=WDC\\*1]\n" /* 7 */
                                   "StableWrites=off\n"
                                   "Force=yes\n"
                                   "[Device 7:0]\n" /* 10 */
                                   "Need=required\n"
                                   "[Device zram*]\n"; /* 12 */
        _cleanup_(config_diags_done) ConfigDiags diags = {}, diags2 = {};
        _cleanup_(config_done) Config c = {}, c2 = {};
        _cleanup_free_ char *f = NULL, *f2 = NULL;

        CHECK_INT(config_init_defaults(&c), 0);
        CHECK_INT(config_parse_buffer(&c, "mem", text, sizeof text - 1, &diags), 0);
        CHECK_INT(diags.n, 0);
        f = config_format(&c);
        CHECK_CONTAINS(f, "[Manager]\n# mem:2\nPolicy=latency\n# mem:3\nDevices=sd* nvme0n1\n");
        CHECK_CONTAINS(f, "# default\nApplyMounted=next-mount\n");
        CHECK_CONTAINS(f, "# mem:4\nNeverRemount=/srv/data /home\n");
        CHECK_CONTAINS(
                f, "# mem:7\n[Device ID_SERIAL=WDC\\*1]\n# mem:8\nStableWrites=off\n# mem:9\nForce=yes\n");
        CHECK_CONTAINS(f, "# mem:10\n[Device 7:0]\n# mem:11\nNeed=required\n");
        CHECK_CONTAINS(f, "# mem:12\n[Device zram*]\n");
        CHECK_INT(config_init_defaults(&c2), 0);
        CHECK_INT(config_parse_buffer(&c2, "mem", f, strlen(f ?: ""), &diags2), 0);
        CHECK_INT(diags2.n, 0);
        CHECK_INT(c2.policy, POLICY_LATENCY);
        CHECK_INT(c2.n_rules, 3);
        CHECK_INT(c2.stall_budget_usec, 250 * USEC_PER_MSEC);
        CHECK(config_device_is_managed(&c2, "nvme0n1") && !config_device_is_managed(&c2, "loop0"));
        f2 = config_format(&c2);
        CHECK_CONTAINS(f2, "Devices=sd* nvme0n1\n");
        CHECK_CONTAINS(f2, "[Device ID_SERIAL=WDC\\*1]\n# mem:");

        /* A Devices= none of whose entries could be used manages no disk: so does ".". */
        config_done(&c2);
        config_diags_done(&diags2);
        CHECK_INT(config_init_defaults(&c2), 0);
        CHECK_INT(config_parse_buffer(&c2, "mem", "[Manager]\nDevices=/dev/sda\n", 28, &diags2), 0);
        free(f2);
        f2 = config_format(&c2);
        CHECK_CONTAINS(f2, "\nDevices=.\n");
        CHECK(!config_device_is_managed(&c2, "sda"));
}

/* The lock, held by a child that stands for the daemon until the pipe closes. */
static pid_t hold_lock(const char *runtime, int *ret_release) {
        int ready[2], release[2];
        char b;
        pid_t pid;

        CHECK(pipe(ready) == 0 && pipe(release) == 0);
        fflush(NULL);
        pid = fork();
        if (pid == 0) {
                int fd = config_in_force_lock(runtime, NULL);
                close(ready[0]);
                close(release[1]);
                if (fd < 0 || write(ready[1], "1", 1) != 1)
                        _exit(1);
                (void) read(release[0], &b, 1);
                _exit(0);
        }
        close(ready[1]);
        close(release[0]);
        CHECK(read(ready[0], &b, 1) == 1);
        close(ready[0]);
        *ret_release = release[1];
        return pid;
}

/* config_load_in_force(): the files, unless they have errors while a daemon holds the lock. */
static void test_in_force(void) {
        _cleanup_free_ char *runtime = NULL, *main_file = NULL, *dropins = NULL, *copy = NULL;
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {}, daemons = {};
        _cleanup_free_ char *note = NULL;
        char *dir = tree_new();
        int release = -1;
        pid_t pid;

        runtime = path_join(dir, "run");
        main_file = path_join(dir, "stablepages.conf");
        dropins = path_join(dir, "conf.d");
        copy = path_join(runtime, CONFIG_IN_FORCE_FILE);
        CHECK(mkdir(runtime, 0755) == 0);
        tree_put(dir, "stablepages.conf", "[Manager]\nPolicy=latency\nApplyMounted=sometimes\n");

        /* No daemon: the files without their bad line, as the daemon reads them at start. */
        CHECK_INT(config_load_in_force(main_file, dropins, runtime, &c, &diags, &note), 0);
        CHECK_INT(c.policy, POLICY_LATENCY);
        CHECK(note == NULL);
        CHECK_INT(config_diags_errors(&diags), 1);
        config_done(&c);
        config_diags_done(&diags);

        /* A daemon holds the lock and keeps "integrity" in force. */
        pid = hold_lock(runtime, &release);
        CHECK_INT(config_init_defaults(&daemons), 0);
        daemons.policy = POLICY_INTEGRITY;
        CHECK_INT(config_in_force_save(runtime, &daemons), 0);
        CHECK_INT(config_load_in_force(main_file, dropins, runtime, &c, &diags, &note), 0);
        CHECK_INT(c.policy, POLICY_INTEGRITY);
        CHECK_INT(config_diags_errors(&diags), 1); /* the files' errors are still reported */
        _cleanup_free_ char *want = strdup_printf("keeps in force, as it does (%s)", copy);
        CHECK_CONTAINS(note, want);
        _cleanup_free_ char *who = strdup_printf("stablepagesd (pid %d)", (int) pid);
        CHECK_CONTAINS(note, who);
        config_done(&c);
        config_diags_done(&diags);
        note = mfree(note);

        /* Files without errors: the files, whatever the daemon has. */
        tree_put(dir, "stablepages.conf", "[Manager]\nPolicy=latency\n");
        CHECK_INT(config_load_in_force(main_file, dropins, runtime, &c, &diags, &note), 0);
        CHECK_INT(c.policy, POLICY_LATENCY);
        CHECK(note == NULL);
        config_done(&c);
        config_diags_done(&diags);

        /* A copy that does not read cleanly is not used, and the note says why. */
        tree_put(dir, "stablepages.conf", "[Manager]\nPolicy=latency\nApplyMounted=sometimes\n");
        tree_put(dir, "run/" CONFIG_IN_FORCE_FILE, "[Manager]\nPolicy=integrity\nRescanSec=x\n");
        CHECK_INT(config_load_in_force(main_file, dropins, runtime, &c, &diags, &note), -EIO);
        CHECK_INT(c.policy, POLICY_LATENCY);
        CHECK_CONTAINS(note, "cannot be read from");
        config_done(&c);
        config_diags_done(&diags);
        note = mfree(note);

        /* The daemon gone: its lock with it, so its copy is no longer used. */
        CHECK_INT(config_in_force_save(runtime, &daemons), 0);
        close(release);
        CHECK(waitpid(pid, NULL, 0) == pid);
        CHECK_INT(config_load_in_force(main_file, dropins, runtime, &c, &diags, &note), 0);
        CHECK_INT(c.policy, POLICY_LATENCY);
        CHECK(note == NULL);
        tree_free(dir);
}

int main(void) {
        make_long_lines();
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                run_case(&cases[i]);
        test_match_parse();
        test_match_test();
        test_device_settings();
        test_force_bound_to_disk();
        test_managed();
        test_strings();
        test_diags_print();
        test_buffer();
        test_shipped_config();
        test_unusable_dropin_dir();
        test_format();
        test_in_force();
        return tests_finish();
}
