/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration parser: the input is one configuration file. Every rule it yields
 * formats back to a match that parses to the same rule, the whole formats back to a
 * configuration that reads without a diagnostic into the same settings, and the result is
 * used the way the engine uses it. */

#include <sys/sysmacros.h>

#include "config-show.h"
#include "config.h"
#include "fuzz.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_(config_done) Config c = {};
        char *const props[] = { (char *) "ID_WWN=0x5000c500a1b2c3d4", (char *) "ID_FS_UUID=0123-4567",
                                (char *) "ID_SERIAL=Samsung_SSD_1", NULL };
        const DeviceIdentity ids[] = {
                { .name = "sda", .devnum = makedev(8, 0), .properties = props },
                { .name = "zram0", .devnum = makedev(252, 0) },
                { .name = "loop7", .devnum = makedev(7, 7) },
        };
        unsigned lines = 1;

        fuzz_check_escaping(data, size);

        if (size > 256 * 1024) /* the parser's limit is 1 MiB; keep runs fast */
                return 0;
        FUZZ_ASSERT(config_init_defaults(&c) == 0);
        if (config_parse_buffer(&c, "fuzz.conf", (const char *) data, size, &diags) < 0)
                return 0;

        for (size_t i = 0; i < size; i++)
                lines += data[i] == '\n';
        for (size_t i = 0; i < diags.n; i++) {
                FUZZ_ASSERT(diags.items[i].message && diags.items[i].file);
                FUZZ_ASSERT(diags.items[i].line <= lines);
        }
        FUZZ_ASSERT(config_diags_errors(&diags) <= diags.n);
        config_diags_print(&diags, fuzz_null());

        FUZZ_ASSERT(c.policy >= 0 && c.policy < _POLICY_MODE_MAX);
        FUZZ_ASSERT(c.apply_mounted >= 0 && c.apply_mounted < _APPLY_MOUNTED_MAX);
        FUZZ_ASSERT(c.rescan_usec <= 86400 * USEC_PER_SEC);
        FUZZ_ASSERT(c.stall_budget_usec >= USEC_PER_MSEC && c.stall_budget_usec <= 600000 * USEC_PER_MSEC);
        FUZZ_ASSERT(c.metrics_interval_usec >= USEC_PER_SEC);
        STRV_FOREACH (p, c.never_remount)
                FUZZ_ASSERT((*p)[0] == '/' && !strstr(*p, "/../") && !strstr(*p, "//"));
        if (c.metrics_file)
                FUZZ_ASSERT(c.metrics_file[0] == '/');

        for (size_t i = 0; i < c.n_rules; i++) {
                const DeviceRule *r = &c.rules[i];
                _cleanup_free_ char *text = device_match_to_string(&r->match), *again = NULL, *error = NULL;
                DeviceMatch m = {};

                FUZZ_ASSERT(text);
                FUZZ_ASSERT(r->line >= 1 && r->line <= lines);
                FUZZ_ASSERT(r->stable_writes == _SETTING_INVALID ||
                            (r->stable_writes >= 0 && r->stable_writes < _SETTING_MAX));
                FUZZ_ASSERT(r->force >= -1 && r->force <= 1);
                /* What stablepagesctl and the messages print parses back to the same match. */
                FUZZ_ASSERT(device_match_parse(text, &m, &error) == 0);
                FUZZ_ASSERT(m.kind == r->match.kind && m.devnum == r->match.devnum);
                again = device_match_to_string(&m);
                FUZZ_ASSERT(again && streq(again, text));
                device_match_done(&m);
        }

        /* The configuration in force as the daemon writes it (config_format()) reads back
         * without a diagnostic into the same settings: it formats to the same text. */
        _cleanup_free_ char *formatted = config_format(&c), *reformatted = NULL;
        _cleanup_(config_diags_done) ConfigDiags diags2 = {};
        _cleanup_(config_done) Config c2 = {};
        FUZZ_ASSERT(formatted);
        FUZZ_ASSERT(config_init_defaults(&c2) == 0);
        FUZZ_ASSERT(config_parse_buffer(&c2, "fuzz.conf", formatted, strlen(formatted), &diags2) == 0);
        FUZZ_ASSERT(diags2.n == 0);
        FUZZ_ASSERT(c2.n_rules == c.n_rules);
        reformatted = config_format(&c2);
        FUZZ_ASSERT(reformatted);
        /* Only the "# FILE:LINE" comments differ: each names where the section was read. */
        for (const char *a = formatted, *b = reformatted; a && b;) {
                const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
                FUZZ_ASSERT(!ea == !eb);
                if (!ea)
                        break;
                FUZZ_ASSERT((a[0] == '#' && b[0] == '#') || (ea - a == eb - b && memcmp(a, b, ea - a) == 0));
                a = ea + 1;
                b = eb + 1;
        }

        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                const DeviceRule *sr = NULL, *fr = NULL;
                Setting setting;
                bool force;

                config_device_settings(&c, &ids[i], &setting, &force, &sr, &fr);
                FUZZ_ASSERT(setting >= 0 && setting < _SETTING_MAX);
                FUZZ_ASSERT(!sr || (sr >= c.rules && sr < c.rules + c.n_rules));
                (void) config_device_is_managed(&c, ids[i].name);
        }

        /* show-config's text is a configuration that reads without an error, to the same
         * values. */
        ConfigEntry *entries = NULL;
        size_t n = 0;
        if (config_entries(&c, &entries, &n) < 0)
                return 0;
        _cleanup_free_ char *shown = NULL;
        size_t shown_size = 0;
        FILE *f = open_memstream(&shown, &shown_size);
        FUZZ_ASSERT(f);
        config_show_text(f, true, c.files, entries, n);
        FUZZ_ASSERT(fclose(f) == 0);
        config_entries_free(entries, n);
        _cleanup_(config_diags_done) ConfigDiags diags_again = {};
        _cleanup_(config_done) Config c_again = {};
        FUZZ_ASSERT(config_init_defaults(&c_again) == 0);
        if (config_parse_buffer(&c_again, "shown.conf", shown, shown_size, &diags_again) < 0)
                return 0;
        FUZZ_ASSERT(config_diags_errors(&diags_again) == 0);
        FUZZ_ASSERT(c_again.policy == c.policy && c_again.apply_mounted == c.apply_mounted);
        FUZZ_ASSERT(c_again.rescan_usec == c.rescan_usec &&
                    c_again.stall_window_usec == c.stall_window_usec);
        FUZZ_ASSERT(c_again.n_rules == c.n_rules);
        FUZZ_ASSERT(strv_length(c_again.never_remount) == strv_length(c.never_remount));
        /* Every disk stays every disk; a Devices= that fails closed (no disk) shows as ".",
         * a glob no kernel name matches. */
        FUZZ_ASSERT(!c_again.devices == !c.devices);
        FUZZ_ASSERT(!c.devices ||
                    (c.devices[0] ? strv_length(c_again.devices) == strv_length(c.devices)
                                  : strv_length(c_again.devices) == 1 && streq(c_again.devices[0], ".")));
        FUZZ_ASSERT(!!c_again.metrics_file == !!c.metrics_file);
        return 0;
}
