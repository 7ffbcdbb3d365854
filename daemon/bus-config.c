/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Manager's GetConfig: the configuration in force, each key with where it comes from. */
#include <systemd/sd-bus.h>

#include "bus-internal.h"
#include "util.h"

/* Appends the entry e as "(ssssa(su))". */
static int append_entry(sd_bus_message *reply, BusStrings *strings, const ConfigEntry *e) {
        int r = sd_bus_message_open_container(reply, 'r', "ssssa(su)");
        if (r >= 0)
                r = sd_bus_message_append(reply, "ssss", bus_string(strings, e->section), e->key,
                                          bus_string(strings, e->value), e->note ?: "");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(su)");
        for (size_t i = 0; r >= 0 && i < e->n_sources; i++)
                r = sd_bus_message_append(reply, "(su)", bus_string(strings, e->sources[i].file),
                                          e->sources[i].line);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

int method_get_config(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        const Config *c = &b->manager->engine.config;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(bus_strings_done) BusStrings strings = {};
        ConfigEntry *entries = NULL;
        size_t n = 0;
        int r;

        r = config_entries(c, &entries, &n);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = bus_append_strv_escaped(reply, c->files);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssssa(su))");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = append_entry(reply, &strings, &entries[i]);
        config_entries_free(entries, n);
        return bus_reply_send_array(reply, &strings, r);
}
