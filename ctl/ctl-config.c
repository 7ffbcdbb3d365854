/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* show-config: the configuration in force, asked of the daemon, or read from the files. */
#include <assert.h>

#include "bus-api.h"
#include "config-show.h"
#include "ctl.h"
#include "log.h"
#include "util.h"

/* Reads one "(ssssa(su))" of GetConfig's reply into e. Returns > 0, 0 at the end of the array,
 * or -errno. */
static int read_entry(sd_bus_message *m, ConfigEntry *e) {
        const char *section, *key, *value, *note, *file;
        uint32_t line;
        int r;

        r = sd_bus_message_enter_container(m, 'r', "ssssa(su)");
        if (r <= 0)
                return r;
        r = sd_bus_message_read(m, "ssss", &section, &key, &value, &note);
        if (r < 0)
                return r;
        *e = (ConfigEntry){ .section = strdup(section),
                            .key = strdup(key),
                            .value = strdup(value),
                            .note = isempty(note) ? NULL : strdup(note) };
        if (!e->section || !e->key || !e->value || (!isempty(note) && !e->note))
                return -ENOMEM;
        r = sd_bus_message_enter_container(m, 'a', "(su)");
        while (r >= 0 && (r = sd_bus_message_read(m, "(su)", &file, &line)) > 0) {
                ConfigEntrySource *l = realloc(e->sources, sizeof(ConfigEntrySource) * (e->n_sources + 1));
                if (!l)
                        return -ENOMEM;
                e->sources = l;
                l[e->n_sources] = (ConfigEntrySource){ .file = strdup(file), .line = line };
                if (!l[e->n_sources++].file)
                        return -ENOMEM;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 1;
}

/* The daemon's configuration in force. Returns 0 or -errno (logged). */
static int daemon_config(sd_bus *bus, char ***ret_files, ConfigEntry **ret, size_t *ret_n) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ConfigEntry *entries = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "GetConfig", &error, &reply,
                               "");
        if (r < 0)
                return ctl_call_error("show-config", &error, r);
        r = sd_bus_message_read_strv(reply, ret_files);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ssssa(su))");
        while (r >= 0) {
                ConfigEntry *l = realloc(entries, sizeof(ConfigEntry) * (n + 1));
                if (!l) {
                        r = -ENOMEM;
                        break;
                }
                entries = l;
                r = read_entry(reply, &entries[n]);
                if (r != 0) /* a partly read entry is freed with the others */
                        n++;
                if (r <= 0)
                        break;
        }
        if (r < 0) {
                config_entries_free(entries, n);
                *ret_files = strv_free(*ret_files);
                return log_error_errno(r, "show-config: bad reply from stablepagesd: %m");
        }
        *ret = entries;
        *ret_n = n;
        return 0;
}

/* What the files say, as the daemon would read them (--config-dir=). Returns 0 or -errno
 * (logged). */
static int files_config(char ***ret_files, ConfigEntry **ret, size_t *ret_n) {
        _cleanup_(config_done) Config c = {};
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        int r;

        r = ctl_config_load(&c, &diags);
        if (r >= 0)
                r = config_entries(&c, ret, ret_n);
        if (r < 0)
                return log_error_errno(r, "show-config: %m");
        if (config_diags_errors(&diags) > 0)
                fprintf(stderr, "The files have errors, whose lines are left out: see stablepagesctl "
                                "check-config.\n");
        *ret_files = TAKE_PTR(c.files);
        return 0;
}

int verb_show_config(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_strv_free_ char **files = NULL;
        ConfigEntry *entries = NULL;
        size_t n = 0;
        bool daemon;
        int r;

        assert(argv);

        daemon = ctl_bus_open(&bus) >= 0 && ctl_daemon_running(bus);
        if (daemon)
                r = daemon_config(bus, &files, &entries, &n);
        else {
                fprintf(stderr, "stablepagesd is not running: reading the configuration files directly.\n");
                r = files_config(&files, &entries, &n);
        }
        if (r < 0)
                return r;
        if (arg_json != JSON_OFF) {
                JsonWriter w;
                ctl_json_begin(&w);
                config_show_json(&w, daemon, files, entries, n);
                ctl_json_end(&w);
        } else {
                ctl_pager_open();
                config_show_text(stdout, daemon, files, entries, n);
        }
        config_entries_free(entries, n);
        return 0;
}
