/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration in force as entries: each key of [Manager] and of each [Device] section
 * with its value as a line would write it and the lines that set it (show-config, GetConfig). */
#include "config-items.h"
#include "util.h"

static void config_entry_done(ConfigEntry *e) {
        free(e->section);
        free(e->key);
        free(e->value);
        free(e->note);
        for (size_t k = 0; k < e->n_sources; k++)
                free(e->sources[k].file);
        free(e->sources);
}

void config_entries_free(ConfigEntry *entries, size_t n) {
        for (size_t i = 0; entries && i < n; i++)
                config_entry_done(&entries[i]);
        free(entries);
}

/* Appends an entry to *entries (*n of them), taking section, key, value and note. Returns the
 * entry, NULL on ENOMEM. */
static ConfigEntry *entries_add(ConfigEntry **entries, size_t *n, char *section, char *key, char *value,
                                char *note) {
        ConfigEntry *l = section && key && value ? realloc(*entries, sizeof(ConfigEntry) * (*n + 1)) : NULL;

        if (!l) {
                free(section);
                free(key);
                free(value);
                free(note);
                return NULL;
        }
        *entries = l;
        l[*n] = (ConfigEntry){ .section = section, .key = key, .value = value, .note = note };
        return &l[(*n)++];
}

/* Adds a source to e. Returns 0 or -ENOMEM. */
static int entry_add_source(ConfigEntry *e, const char *file, unsigned line) {
        ConfigEntrySource *l = realloc(e->sources, sizeof(ConfigEntrySource) * (e->n_sources + 1));
        char *f = strdup(file);

        if (!l || !f) {
                free(f);
                if (l)
                        e->sources = l;
                return -ENOMEM;
        }
        e->sources = l;
        l[e->n_sources++] = (ConfigEntrySource){ .file = f, .line = line };
        return 0;
}

/* Adds the sources of item in the section rule (or CONFIG_SOURCE_MANAGER) of c to e. Returns
 * how many, or -ENOMEM. */
static int entry_add_sources(ConfigEntry *e, const Config *c, const ConfigItem *item, size_t rule) {
        int n = 0;

        for (size_t i = 0; i < c->n_sources; i++) {
                const ConfigSource *src = &c->sources[i];
                if (src->rule != rule || !streq(src->key, item->key))
                        continue;
                if (entry_add_source(e, src->file, src->line) < 0)
                        return -ENOMEM;
                n++;
        }
        return n;
}

int config_entries(const Config *c, ConfigEntry **ret, size_t *ret_n) {
        ConfigEntry *entries = NULL, *e;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < config_items_n; i++) {
                const ConfigItem *item = &config_items[i];
                const char *note = NULL;

                if (item->section != SECTION_MANAGER)
                        continue;
                if (item->offset == offsetof(Config, devices))
                        note = !c->devices ? "all disks" : !c->devices[0] ? "no disk" : NULL;
                /* A Devices= that manages no disk (none of its entries could be used) reads "."
                 * (a valid glob no kernel name matches): an empty one would mean every disk. */
                e = entries_add(&entries, &n, strdup("Manager"), strdup(item->key),
                                note && streq(note, "no disk") ? strdup(".") : config_item_value(item, c),
                                note ? strdup(note) : NULL);
                r = e && (!note || e->note) ? entry_add_sources(e, c, item, CONFIG_SOURCE_MANAGER) : -ENOMEM;
        }
        for (size_t k = 0; r >= 0 && k < c->n_rules; k++) {
                const DeviceRule *rule = &c->rules[k];
                _cleanup_free_ char *match = device_match_to_string(&rule->match);

                e = match ? entries_add(&entries, &n, strdup_printf("Device %s", match), strdup(""),
                                        strdup(""), NULL)
                          : NULL;
                r = e ? entry_add_source(e, rule->file, rule->line) : -ENOMEM;
                for (size_t i = 0; r >= 0 && i < config_items_n; i++) {
                        const ConfigItem *item = &config_items[i];
                        size_t before = n;

                        if (item->section != SECTION_DEVICE)
                                continue;
                        e = entries_add(&entries, &n, strdup_printf("Device %s", match), strdup(item->key),
                                        config_item_value(item, rule), NULL);
                        r = e ? entry_add_sources(e, c, item, k) : -ENOMEM;
                        if (r == 0) { /* not set in this section: not shown */
                                config_entry_done(e);
                                n = before;
                        }
                }
        }
        if (r < 0) {
                config_entries_free(entries, n);
                return -ENOMEM;
        }
        *ret = entries;
        *ret_n = n;
        return 0;
}
