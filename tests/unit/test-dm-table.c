/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dm-table.c: device-mapper table lines (as the kernel prints them for DM_TABLE_STATUS and
 * dmsetup shows them) to facts, and the facts to the udev properties the rule records and
 * back. Keys in the table never reach the properties. */
#include "dm-table.h"
#include "tests.h"
#include "util.h"

/* Parses lines, formats the properties, parses them again: the same facts. */
static void round_trip(char **lines, const char *want_table, const char *want_targets) {
        _cleanup_(dm_table_done) DmTable t = {}, back = {};
        _cleanup_strv_free_ char **props = NULL;

        CHECK_INT(dm_table_from_lines(lines, &t), 0);
        CHECK_INT(dm_table_to_properties(&t, &props), 0);
        CHECK_STR(strv_find_value(props, DM_TABLE_PROPERTY), want_table);
        if (want_targets)
                CHECK_STR(strv_find_value(props, DM_TARGETS_PROPERTY), want_targets);
        else
                CHECK(!strv_find_value(props, DM_TARGETS_PROPERTY));
        CHECK_INT(dm_table_from_properties(props, &back), 0);
        CHECK_INT(back.count, t.count);
        CHECK_INT(back.n, t.n);
        for (size_t i = 0; i < t.n && i < back.n; i++) {
                _cleanup_free_ char *a = dm_target_to_string(&t.targets[i]);
                _cleanup_free_ char *b = dm_target_to_string(&back.targets[i]);
                CHECK_STR(a, b);
        }
}

static void test_lines(void) {
        /* captured: tests/fixtures/vm-6.1.0-50-dm-lvm-raid1-integrity/dm-tables */
        round_trip(
                (char *[]){ "0 129160 integrity 253:0 0 4 B 6 journal_sectors:880 interleave_sectors:32768 "
                            "buffer_sectors:128 sectors_per_bit:32768 bitmap_flush_interval:10000 "
                            "internal_hash:crc32c",
                            NULL },
                "1", "integrity,mode=B,hash=crc32c");
        round_trip((char *[]){ "0 129160 raid raid1 3 0 region_size 1024 2 - 253:1 - 253:3", NULL }, "1",
                   "raid,level=raid1");
        /* captured: vm-6.1-dm-crypt-integrity (the key is a keyring reference there) */
        round_trip((char *[]){ "0 91184 crypt capi:authenc(hmac(sha256),xts(aes))-plain64 "
                               ":96:logon:cryptsetup:c2052847-d0 0 253:0 0 1 integrity:32:aead",
                               NULL },
                   "1", "crypt,integrity=aead");
        round_trip(
                (char *[]){
                        "0 91184 integrity 7:0 32768 32 J 6 journal_sectors:968 interleave_sectors:32768 "
                        "buffer_sectors:128 journal_watermark:50 commit_time:10000 fix_padding",
                        NULL },
                "1", "integrity,mode=J");
        /* many segments of one kind are one target */
        round_trip(
                (char *[]){ "0 8 linear 7:0 0", "8 8 linear 7:1 0", "16 8 striped 2 8 7:0 8 7:1 8", NULL },
                "3", "linear striped");
        round_trip((char *[]){ NULL }, "0", NULL);
        /* a table too short to have a mode */
        round_trip((char *[]){ "0 8 integrity 7:0 0", NULL }, "1", "integrity,mode=?");
}

/* A keyed hash or a dm-crypt key in the table stays out of every fact. */
static void test_keys_never_copied(void) {
        _cleanup_(dm_table_done) DmTable t = {};
        _cleanup_strv_free_ char **props = NULL;

        CHECK_INT(
                dm_table_from_lines(
                        (char *[]){ "0 8 integrity 7:0 0 32 D 2 internal_hash:hmac(sha256):5eC12e7deadbeef "
                                    "journal_mac:hmac(sha256):5eC12e7cafe",
                                    "8 8 crypt aes-xts-plain64 5eC12e7a11ce 0 7:1 0 2 allow_discards "
                                    "integrity:28:hmac(sha256)",
                                    NULL },
                        &t),
                0);
        CHECK_INT(dm_table_to_properties(&t, &props), 0);
        STRV_FOREACH (p, props) {
                fprintf(stderr, "%s\n", *p);
                CHECK(!strstr(*p, "5eC12e7"));
        }
        CHECK_STR(strv_find_value(props, DM_TARGETS_PROPERTY),
                  "integrity,mode=D,hash=hmac(sha256) crypt,integrity=hmac(sha256)");
}

/* What the udev database may hold: ours, older or newer writers', or garbage. */
static void test_properties(void) {
        static const struct {
                const char *table, *targets;
                int r;
                const char *first; /* the first target, as a string */
        } cases[] = {
                { NULL, "linear", -ENODATA, NULL },
                { "1", "integrity,mode=B,hash=crc32c", 0, "integrity,mode=B,hash=crc32c" },
                { "0", NULL, 0, NULL },
                { "x", "linear", -EINVAL, NULL },
                { "-1", "linear", -EINVAL, NULL },
                { "1", NULL, -EINVAL, NULL },          /* a target count without targets */
                { "0", "linear", -EINVAL, NULL },      /* targets without a count */
                { "1", "linear zero", -EINVAL, NULL }, /* more kinds than targets */
                { "1", ",mode=B", -EINVAL, NULL },     /* no type */
                { "1", "integrity,mode=BB", -EINVAL, NULL },
                { "1", "integrity,mode", -EINVAL, NULL },
                { "1", "integrity,mode=B,future=1", 0, "integrity,mode=B" }, /* unknown keys ignored */
                { "2", "  linear   crypt,integrity=aead ", 0, "linear" },
                { "1", "in/teg rity", -EINVAL, NULL },
                { "1", "lin/ear", 0, "lin_ear" }, /* never more than a word */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_strv_free_ char **props = NULL;
                _cleanup_(dm_table_done) DmTable t = {};

                fprintf(stderr, "properties %s / %s\n", cases[i].table ?: "(none)",
                        cases[i].targets ?: "(none)");
                CHECK_INT(strv_extend(&props, "DM_NAME=x"), 0);
                if (cases[i].table)
                        CHECK_INT(strv_extendf(&props, "%s=%s", DM_TABLE_PROPERTY, cases[i].table), 0);
                if (cases[i].targets)
                        CHECK_INT(strv_extendf(&props, "%s=%s", DM_TARGETS_PROPERTY, cases[i].targets), 0);
                CHECK_INT(dm_table_from_properties(props, &t), cases[i].r);
                if (cases[i].r == 0 && cases[i].first) {
                        CHECK(t.n > 0);
                        _cleanup_free_ char *s = t.n > 0 ? dm_target_to_string(&t.targets[0]) : NULL;
                        CHECK_STR(s, cases[i].first);
                }
        }
}

int main(void) {
        test_lines();
        test_keys_never_copied();
        test_properties();
        return tests_finish();
}
