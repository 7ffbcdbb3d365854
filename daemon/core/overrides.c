/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The overrides of stablepagesctl set, pure: the runtime store, the drop-ins of stablepagesctl,
 * which override is in force for a disk, and the list of them all (overrides.h). */
#include <dirent.h>
#include <inttypes.h>

#include "engine.h"
#include "identity.h"
#include "log.h"
#include "overrides.h"
#include "util.h"

void runtime_overrides_done(RuntimeOverrides *o) {
        for (size_t i = 0; i < o->n; i++)
                free(o->items[i].disk);
        free(o->items);
        *o = (RuntimeOverrides){};
}

/* The entry keyed by diskseq, or by disk for an unbound one (diskseq 0). */
static RuntimeOverride *overrides_lookup(const RuntimeOverrides *o, uint64_t diskseq, const char *disk) {
        for (size_t i = 0; i < o->n; i++)
                if (o->items[i].diskseq == diskseq && (diskseq != 0 || streq(o->items[i].disk, disk)))
                        return &o->items[i];
        return NULL;
}

const RuntimeOverride *runtime_overrides_find(const RuntimeOverrides *o, uint64_t diskseq) {
        return diskseq == 0 ? NULL : overrides_lookup(o, diskseq, "");
}

/* Removes item, keeping the order of the others (the order of the file). */
static void overrides_delete(RuntimeOverrides *o, RuntimeOverride *item) {
        free(item->disk);
        memmove(item, item + 1, sizeof(RuntimeOverride) * (size_t) (o->items + --o->n - item));
}

int runtime_overrides_remove(RuntimeOverrides *o, uint64_t diskseq, const char *disk) {
        RuntimeOverride *found = overrides_lookup(o, diskseq, disk);
        if (!found)
                return 0;
        overrides_delete(o, found);
        return 1;
}

int runtime_overrides_set(RuntimeOverrides *o, uint64_t diskseq, const char *disk, Setting setting,
                          bool force) {
        RuntimeOverride *found;

        if (!device_name_is_valid(disk))
                return -EINVAL;
        if (setting == SETTING_AUTO && !force) {
                (void) runtime_overrides_remove(o, diskseq, disk);
                return 0;
        }
        found = overrides_lookup(o, diskseq, disk);
        if (!found) {
                _cleanup_free_ char *copy = strdup(disk);
                RuntimeOverride *m = copy ? realloc(o->items, sizeof(RuntimeOverride) * (o->n + 1)) : NULL;
                if (!m)
                        return -ENOMEM;
                o->items = m;
                found = &m[o->n++];
                *found = (RuntimeOverride){ .diskseq = diskseq, .disk = TAKE_PTR(copy) };
        } else if (!streq(found->disk, disk)) {
                char *copy = strdup(disk);
                if (!copy)
                        return -ENOMEM;
                free(found->disk);
                found->disk = copy;
        }
        found->setting = setting;
        found->force = force;
        return 0;
}

char *runtime_override_format(const RuntimeOverride *o, char buf[static 32]) {
        snprintf(buf, 32, "%s%s", setting_to_string(o->setting) ?: "?", o->force ? " (force)" : "");
        return buf;
}

int runtime_overrides_update(RuntimeOverrides *o, const DeviceTable *t, char ***ret_changes) {
        int bound = 0, r;

        for (size_t i = 0; i < o->n;) {
                RuntimeOverride *item = &o->items[i];
                const DeviceFacts *named = device_table_find(t, item->disk);
                char what[32];

                runtime_override_format(item, what);
                if (item->diskseq != 0) {
                        /* Still there; or a disk of that name whose diskseq is unknown: it may be it. */
                        if (device_table_find_diskseq(t, item->diskseq) || (named && named->diskseq == 0)) {
                                i++;
                                continue;
                        }
                        r = named ? strv_extendf(ret_changes,
                                                 "%s: runtime override %s dropped: the disk it was set on "
                                                 "(diskseq %" PRIu64 ") is gone; %s is another disk now "
                                                 "(diskseq %" PRIu64 ")",
                                                 item->disk, what, item->diskseq, item->disk, named->diskseq)
                                  : strv_extendf(ret_changes,
                                                 "%s: runtime override %s dropped: the disk it was set on "
                                                 "(diskseq %" PRIu64 ") is gone",
                                                 item->disk, what, item->diskseq);
                } else if (named && named->diskseq != 0 && !runtime_overrides_find(o, named->diskseq)) {
                        r = strv_extendf(
                                ret_changes,
                                "%s: runtime override %s, written by an earlier version and keyed by "
                                "the kernel name only, is now bound to the disk of that name "
                                "(diskseq %" PRIu64 ")",
                                item->disk, what, named->diskseq);
                        if (r < 0)
                                return r;
                        item->diskseq = named->diskseq;
                        bound++;
                        i++;
                        continue;
                } else
                        r = strv_extendf(
                                ret_changes,
                                "%s: runtime override %s, written by an earlier version and keyed by "
                                "the kernel name only, dropped: %s",
                                item->disk, what,
                                !named                ? "no disk has that name now"
                                : named->diskseq == 0 ? "the kernel gives that disk no diskseq to "
                                                        "bind it to"
                                                      : "that disk has a newer override");
                if (r < 0)
                        return r;
                overrides_delete(o, item);
        }
        return bound;
}

int state_load_overrides(const char *dir, RuntimeOverrides *ret) {
        _cleanup_free_ char *p = strdup_printf("%s/overrides", dir), *data = NULL;
        RuntimeOverrides o = {};
        char *save = NULL;
        size_t unbound = 0;

        if (!p)
                return -ENOMEM;
        int r = read_full_file(p, 1 << 20, &data, NULL);
        if (r == -ENOENT) {
                *ret = o;
                return 0;
        }
        if (r < 0)
                return r;
        unsigned line = 0;
        for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                char disk[80], setting[16], force[16] = "";
                unsigned long long seq = 0;
                int n, used = 0;

                line++;
                if (l[0] == '#')
                        continue;
                /* "diskseq=N disk setting [force]"; an earlier version wrote "disk setting [force]". */
                if (startswith(l, "diskseq=") &&
                    (l[8] < '0' || l[8] > '9' || sscanf(l, "diskseq=%llu%n", &seq, &used) != 1 || seq == 0 ||
                     (l[used] != ' ' && l[used] != '\t')))
                        used = -1;
                n = used < 0 ? 0 : sscanf(l + used, "%79s %15s %15s", disk, setting, force);
                Setting s = n >= 2 ? setting_from_string(setting) : _SETTING_INVALID;
                if (n < 2 || s < 0 || (n == 3 && !streq(force, "force"))) {
                        log_warning("%s:%u: ignoring malformed runtime override \"%s\"", p, line, l);
                        continue;
                }
                r = runtime_overrides_set(&o, seq, disk, s, n == 3);
                if (r == -ENOMEM) {
                        runtime_overrides_done(&o);
                        return r;
                }
                if (r < 0)
                        log_warning("%s:%u: ignoring override of invalid device \"%s\"", p, line, disk);
                else if (seq == 0)
                        unbound++;
        }
        if (unbound > 0)
                log_notice("%s: %zu runtime override(s) written by an earlier version are keyed by kernel "
                           "name only and apply to no disk until stablepagesd binds them to the disk of "
                           "that name when it starts",
                           p, unbound);
        *ret = o;
        return 0;
}

int state_save_overrides(const char *dir, const RuntimeOverrides *o) {
        _cleanup_free_ char *p = strdup_printf("%s/overrides", dir), *buf = NULL;
        size_t size = 0;
        FILE *f;

        if (!p)
                return -ENOMEM;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fputs("# stablepagesd runtime overrides: diskseq=N DISK on|off|auto [force], each bound to the "
              "disk\n"
              "# with that diskseq (this boot only); DISK is its kernel name, for people.\n",
              f);
        for (size_t i = 0; i < o->n; i++) {
                const RuntimeOverride *item = &o->items[i];
                if (item->diskseq != 0)
                        fprintf(f, "diskseq=%" PRIu64 " ", item->diskseq);
                fprintf(f, "%s %s%s\n", item->disk, setting_to_string(item->setting),
                        item->force ? " force" : "");
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        int r = mkdir_p(dir, 0755);
        if (r < 0)
                return r;
        return write_file_atomic(p, buf ?: "", size, 0644);
}

bool dropin_is_ours(const char *path) {
        const char *base = strrchr(path, '/');
        size_t n;

        base = base ? base + 1 : path;
        n = strlen(base);
        return startswith(base, DROPIN_PREFIX) && n > strlen(DROPIN_PREFIX) + 5 &&
               streq(base + n - 5, ".conf");
}

int dropins_matching(const char *dir, const DeviceIdentity *id, char ***ret_paths) {
        _cleanup_strv_free_ char **paths = NULL;
        DIR *d = opendir(dir);
        struct dirent *de;
        int r = 0;

        if (!d && errno != ENOENT)
                return -errno;
        while (d && (errno = 0, de = readdir(d))) {
                _cleanup_(config_done) Config c = {};
                _cleanup_(config_diags_done) ConfigDiags diags = {};
                _cleanup_free_ char *p = NULL;

                if (!dropin_is_ours(de->d_name))
                        continue;
                p = path_join(dir, de->d_name);
                if (!p || config_init_defaults(&c) < 0 || config_parse_file(&c, p, &diags) < 0) {
                        r = -ENOMEM;
                        break;
                }
                for (size_t i = 0; i < c.n_rules; i++)
                        if (device_match_test(&c.rules[i].match, id)) {
                                r = strv_extend(&paths, p);
                                break;
                        }
                if (r < 0)
                        break;
        }
        if (d && r == 0 && errno != 0)
                r = -errno;
        if (d)
                closedir(d);
        if (r < 0)
                return r;
        strv_sort(paths);
        *ret_paths = TAKE_PTR(paths);
        return (int) strv_length(*ret_paths);
}

int engine_describe_override(const Engine *e, EngineDevice *d, const RuntimeOverride *o,
                             const DeviceRule *force_rule) {
        const DeviceRule *rule = d->setting_rule ?: force_rule;

        if (o) {
                d->override_scope = "runtime";
                d->override_binding = strdup_printf("diskseq %" PRIu64, o->diskseq);
                d->override_source = path_join(e->runtime_dir, "overrides");
        } else if (rule) {
                d->override_scope = "config";
                d->override_binding = device_match_describe(&rule->match);
                d->override_source = strdup_printf("%s:%u", rule->file, rule->line);
        } else
                return 0;
        return d->override_binding && d->override_source ? 0 : -ENOMEM;
}

void override_entries_free(OverrideEntry *entries, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(entries[i].binding);
                free(entries[i].source);
        }
        free(entries);
}

static int override_entries_add(OverrideEntry **entries, size_t *n, const OverrideEntry *add) {
        OverrideEntry *m = realloc(*entries, sizeof(OverrideEntry) * (*n + 1));
        if (!m)
                return -ENOMEM;
        *entries = m;
        m[*n] = (OverrideEntry){ .disk = add->disk,
                                 .setting = add->setting,
                                 .force = add->force,
                                 .scope = add->scope,
                                 .binding = strdup(add->binding),
                                 .source = strdup(add->source) };
        (*n)++;
        return m[*n - 1].binding && m[*n - 1].source ? 0 : -ENOMEM;
}

int engine_list_overrides(const Engine *e, char *const *disks, OverrideEntry **ret, size_t *ret_n) {
        OverrideEntry *entries = NULL;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < e->table.n; i++) {
                const EngineDevice *d = &e->devices[i];
                if (!d->override_scope || (disks && !strv_contains(disks, d->facts->name)))
                        continue;
                r = override_entries_add(&entries, &n,
                                         &(OverrideEntry){ .disk = d->facts->name,
                                                           .setting = d->setting,
                                                           .force = d->force,
                                                           .scope = d->override_scope,
                                                           .binding = d->override_binding,
                                                           .source = d->override_source });
        }
        /* What stablepagesctl set kept for disks that are not here (unplugged, not attached). */
        for (size_t i = 0; r >= 0 && !disks && i < e->config.n_rules; i++) {
                const DeviceRule *rule = &e->config.rules[i];
                _cleanup_free_ char *binding = NULL, *source = NULL;
                bool present = false;

                if (!dropin_is_ours(rule->file))
                        continue;
                for (size_t j = 0; !present && j < e->table.n; j++) {
                        DeviceIdentity id = device_identity_of(&e->table.devices[j]);
                        present = device_match_test(&rule->match, &id);
                }
                if (present)
                        continue;
                binding = device_match_describe(&rule->match);
                source = strdup_printf("%s:%u", rule->file, rule->line);
                r = binding && source
                            ? override_entries_add(&entries, &n,
                                                   &(OverrideEntry){ .setting = rule->stable_writes >= 0
                                                                                        ? rule->stable_writes
                                                                                        : SETTING_AUTO,
                                                                     .force = rule->force > 0,
                                                                     .scope = "config",
                                                                     .binding = binding,
                                                                     .source = source })
                            : -ENOMEM;
        }
        if (r < 0) {
                override_entries_free(entries, n);
                return r;
        }
        *ret = entries;
        *ret_n = n;
        return 0;
}
