/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* show-config's formatting (daemon/core/config-show.c) of the entries of config_entries()
 * (config.c): where each key of the configuration in force comes from, defaults, lists added to
 * by several lines, lines rejected (they set nothing), a Devices= line that fails closed, and
 * [Device] sections; as text, which the configuration parser reads back to the same
 * configuration, and as JSON. */

#include "config-show.h"
#include "tests.h"
#include "util.h"

static const char main_conf[] = "[Manager]\n"
                                "Policy=latency\n"
                                "Devices=sd* nvme*\n"
                                "RescanSec=bogus\n"
                                "NeverRemount=/srv\n"
                                "NeverRemount=\n"
                                "NeverRemount=/data\n"
                                "[Device ID_SERIAL=Z]\n"
                                "StableWrites=off\n"
                                "Force=yes\n";
static const char dropin[] = "[Manager]\n"
                             "Devices=loop*\n"
                             "Policy=observe\n"
                             "[Device ID_SERIAL=X]\n"
                             "StableWrites=off\n"
                             "StableWrites=\n";

static const char expected_text[] =
        "# The configuration in force in stablepagesd (its last good one), read from:\n"
        "#   /etc/stablepages.conf\n"
        "#   /etc/stablepages.conf.d/50-a.conf\n"
        "\n"
        "[Manager]\n"
        "# /etc/stablepages.conf.d/50-a.conf:3\n"
        "Policy=observe\n"
        "# /etc/stablepages.conf:3, /etc/stablepages.conf.d/50-a.conf:2\n"
        "Devices=sd* nvme* loop*\n"
        "# default\n"
        "ApplyMounted=next-mount\n"
        "# default\n"
        "RescanSec=60\n"
        "# default\n"
        "StallBudgetMSec=100\n"
        "# default\n"
        "StallWindowSec=300\n"
        "# default\n"
        "StallCalmSec=1800\n"
        "# default\n"
        "StallMinWaits=10\n"
        "# default\n"
        "MirrorCheckSec=0\n"
        "# default\n"
        "MetricsFile=\n"
        "# default\n"
        "MetricsIntervalSec=15\n"
        "# /etc/stablepages.conf:6, /etc/stablepages.conf:7\n"
        "NeverRemount=/data\n"
        "\n"
        "# /etc/stablepages.conf:8\n"
        "[Device ID_SERIAL=Z]\n"
        "# /etc/stablepages.conf:9\n"
        "StableWrites=off\n"
        "# /etc/stablepages.conf:10\n"
        "Force=yes\n"
        "\n"
        "# /etc/stablepages.conf.d/50-a.conf:4\n"
        "[Device ID_SERIAL=X]\n"
        "# /etc/stablepages.conf.d/50-a.conf:6\n"
        "StableWrites=\n";

/* Parses the two files into *c, as config_load() would read them. */
static void load(Config *c, const char *main_text, const char *dropin_text) {
        _cleanup_(config_diags_done) ConfigDiags diags = {};

        CHECK_INT(config_init_defaults(c), 0);
        CHECK_INT(config_parse_buffer(c, "/etc/stablepages.conf", main_text, strlen(main_text), &diags), 0);
        if (dropin_text)
                CHECK_INT(config_parse_buffer(c, "/etc/stablepages.conf.d/50-a.conf", dropin_text,
                                              strlen(dropin_text), &diags),
                          0);
        CHECK_INT(strv_extend(&c->files, "/etc/stablepages.conf"), 0);
        if (dropin_text)
                CHECK_INT(strv_extend(&c->files, "/etc/stablepages.conf.d/50-a.conf"), 0);
}

/* What config_show_text() or config_show_json() writes for c. New string. */
static char *show(const Config *c, bool json, bool daemon) {
        ConfigEntry *entries = NULL;
        size_t n = 0, size = 0;
        char *text = NULL;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                abort();
        CHECK_INT(config_entries(c, &entries, &n), 0);
        if (json) {
                JsonWriter w;
                json_init(&w, f, false);
                config_show_json(&w, daemon, c->files, entries, n);
        } else
                config_show_text(f, daemon, c->files, entries, n);
        config_entries_free(entries, n);
        if (fclose(f) != 0)
                abort();
        return text;
}

static void test_text(void) {
        _cleanup_(config_done) Config c = {}, again = {};
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_free_ char *text = NULL, *text_again = NULL;

        load(&c, main_conf, dropin);
        text = show(&c, false, true);
        CHECK_STR(text, expected_text);

        /* The text is a configuration file: read back, it gives the same configuration. */
        CHECK_INT(config_init_defaults(&again), 0);
        CHECK_INT(config_parse_buffer(&again, "/etc/stablepages.conf", text, strlen(text), &diags), 0);
        CHECK_INT(diags.n, 0);
        CHECK_INT(again.policy, POLICY_OBSERVE);
        CHECK_INT(strv_length(again.devices), 3);
        CHECK_INT(again.n_rules, 2);
        CHECK_INT(strv_extend(&again.files, "/etc/stablepages.conf"), 0);
        CHECK_INT(strv_extend(&again.files, "/etc/stablepages.conf.d/50-a.conf"), 0);
        text_again = show(&again, false, true);
        /* The same keys and values; only the sources differ (one file now). */
        CHECK_CONTAINS(text_again, "\nPolicy=observe\n# /etc/stablepages.conf:");
        CHECK_CONTAINS(text_again, "\nDevices=sd* nvme* loop*\n");
        CHECK_CONTAINS(text_again, "\n[Device ID_SERIAL=X]\n# /etc/stablepages.conf:");
}

static void test_defaults_and_notes(void) {
        _cleanup_(config_done) Config c = {}, closed = {};
        _cleanup_free_ char *text = NULL, *text_closed = NULL;

        CHECK_INT(config_init_defaults(&c), 0);
        text = show(&c, false, false);
        CHECK_CONTAINS(text,
                       "# The configuration the files give (not stablepagesd's), read from:\n"
                       "#   no file: every key at its default\n\n[Manager]\n# default\nPolicy=balanced\n"
                       "# default: all disks\nDevices=\n");
        CHECK(!strstr(text, "[Device"));

        /* A Devices= line whose entries are all invalid manages no disk, not all of them: "." (a
         * glob no kernel name matches) says so and reads back the same. */
        load(&closed, "[Manager]\nDevices=/dev/sda\n", NULL);
        text_closed = show(&closed, false, true);
        CHECK_CONTAINS(text_closed, "\n# /etc/stablepages.conf:2: no disk\nDevices=.\n");
}

static void test_json(void) {
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *json = NULL;

        load(&c, "[Manager]\nPolicy=latency\n[Device 7:0]\nForce=no\n", NULL);
        json = show(&c, true, true);
        CHECK_CONTAINS(json,
                       "{\"from\":\"stablepagesd\",\"files\":[\"/etc/stablepages.conf\"],\"sections\":["
                       "{\"section\":\"Manager\",\"file\":null,\"line\":null,\"keys\":["
                       "{\"key\":\"Policy\",\"value\":\"latency\",\"note\":null,\"default\":false,"
                       "\"sources\":[{\"file\":\"/etc/stablepages.conf\",\"line\":2}]},"
                       "{\"key\":\"Devices\",\"value\":\"\",\"note\":\"all disks\",\"default\":true,"
                       "\"sources\":[]},");
        CHECK_CONTAINS(json, "]},{\"section\":\"Device 7:0\",\"file\":\"/etc/stablepages.conf\",\"line\":3,"
                             "\"keys\":[{\"key\":\"Force\",\"value\":\"no\",\"note\":null,\"default\":false,"
                             "\"sources\":[{\"file\":\"/etc/stablepages.conf\",\"line\":4}]}]}]}");
}

int main(void) {
        test_text();
        test_defaults_and_notes();
        test_json();
        return tests_finish();
}
