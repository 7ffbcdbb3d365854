/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* show-config: the configuration in force with the source of each key, as text or JSON
 * (config-show.h). */
#include "config-show.h"
#include "util.h"

/* The comment line above an entry: its sources ("default" without), and its note. */
static void comment(FILE *f, const ConfigEntry *e) {
        fputs("# ", f);
        if (e->n_sources == 0)
                fputs("default", f);
        for (size_t i = 0; i < e->n_sources; i++)
                fprintf(f, "%s%s:%u", i > 0 ? ", " : "", e->sources[i].file, e->sources[i].line);
        if (e->note)
                fprintf(f, ": %s", e->note);
        fputc('\n', f);
}

void config_show_text(FILE *f, bool daemon, char *const *files, const ConfigEntry *entries, size_t n) {
        const char *section = NULL;

        fprintf(f, "# %s\n",
                daemon ? "The configuration in force in stablepagesd (its last good one), read from:"
                       : "The configuration the files give (not stablepagesd's), read from:");
        if (strv_length(files) == 0)
                fputs("#   no file: every key at its default\n", f);
        for (size_t i = 0; files && files[i]; i++)
                fprintf(f, "#   %s\n", files[i]);
        for (size_t i = 0; i < n; i++) {
                const ConfigEntry *e = &entries[i];

                if (isempty(e->key)) { /* a [Device] section's header, where it is */
                        fputc('\n', f);
                        comment(f, e);
                        fprintf(f, "[%s]\n", e->section);
                        section = e->section;
                        continue;
                }
                if (!section || !streq(section, e->section)) {
                        fprintf(f, "\n[%s]\n", e->section);
                        section = e->section;
                }
                comment(f, e);
                fprintf(f, "%s=%s\n", e->key, e->value);
        }
}

static void sources_json(JsonWriter *w, const ConfigEntry *e) {
        json_key(w, "sources");
        json_array_begin(w);
        for (size_t i = 0; i < e->n_sources; i++) {
                json_object_begin(w);
                json_member_string(w, "file", e->sources[i].file);
                json_member_uint(w, "line", e->sources[i].line);
                json_object_end(w);
        }
        json_array_end(w);
}

void config_show_json(JsonWriter *w, bool daemon, char *const *files, const ConfigEntry *entries, size_t n) {
        bool open = false;

        json_object_begin(w);
        json_member_string(w, "from", daemon ? "stablepagesd" : "files");
        json_key(w, "files");
        json_strv(w, files);
        json_key(w, "sections");
        json_array_begin(w);
        for (size_t i = 0; i < n; i++) {
                const ConfigEntry *e = &entries[i];
                bool header = isempty(e->key);

                if (header || i == 0 || !streq(entries[i - 1].section, e->section)) {
                        if (open) {
                                json_array_end(w);
                                json_object_end(w);
                        }
                        json_object_begin(w);
                        json_member_string(w, "section", e->section);
                        json_key(w, "file");
                        json_string(w, header && e->n_sources > 0 ? e->sources[0].file : NULL);
                        json_key(w, "line");
                        if (header && e->n_sources > 0)
                                json_uint(w, e->sources[0].line);
                        else
                                json_null(w);
                        json_key(w, "keys");
                        json_array_begin(w);
                        open = true;
                }
                if (header)
                        continue;
                json_object_begin(w);
                json_member_string(w, "key", e->key);
                json_member_string(w, "value", e->value);
                json_member_string(w, "note", e->note);
                json_member_bool(w, "default", e->n_sources == 0);
                sources_json(w, e);
                json_object_end(w);
        }
        if (open) {
                json_array_end(w);
                json_object_end(w);
        }
        json_array_end(w);
        json_object_end(w);
}

char *config_format(const Config *c) {
        _cleanup_free_ char *text = NULL;
        ConfigEntry *entries = NULL;
        size_t n = 0, size = 0;
        FILE *f;

        if (config_entries(c, &entries, &n) < 0)
                return NULL;
        f = open_memstream(&text, &size);
        if (f)
                config_show_text(f, true, c->files, entries, n);
        config_entries_free(entries, n);
        if (!f || fclose(f) != 0)
                return NULL;
        return TAKE_PTR(text);
}
