/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration's items: the names of its enums, the defaults, the [Manager] and
 * [Device MATCH] sections, and the table of keys with their value parsers (in the manner of
 * systemd's oomd-conf.c), and each key's value as a line writes it. config-reader.c reads the
 * lines and reports the problems; config-entries.c lists the configuration in force;
 * device-match.c matches [Device] sections to disks. */

#include <ctype.h>
#include <inttypes.h>
#include <strings.h>

#include "classify.h"
#include "config-items.h"
#include "identity.h"
#include "util.h"

static const char *const policy_mode_table[_POLICY_MODE_MAX] = {
        [POLICY_OBSERVE] = "observe",
        [POLICY_LATENCY] = "latency",
        [POLICY_BALANCED] = "balanced",
        [POLICY_INTEGRITY] = "integrity",
};

static const char *const apply_mounted_table[_APPLY_MOUNTED_MAX] = {
        [APPLY_MOUNTED_NEXT_MOUNT] = "next-mount",
        [APPLY_MOUNTED_REMOUNT_IDLE] = "remount-idle",
};

static const char *const setting_table[_SETTING_MAX] = {
        [SETTING_AUTO] = "auto",
        [SETTING_ON] = "on",
        [SETTING_OFF] = "off",
};

DEFINE_STRING_TABLE_LOOKUP(policy_mode, PolicyMode);
DEFINE_STRING_TABLE_LOOKUP(apply_mounted, ApplyMounted);
DEFINE_STRING_TABLE_LOOKUP(setting, Setting);

int config_init_defaults(Config *c) {
        *c = (Config){
                .policy = POLICY_BALANCED,
                .devices = NULL,
                .apply_mounted = APPLY_MOUNTED_NEXT_MOUNT,
                .rescan_usec = 60 * USEC_PER_SEC,
                .stall_budget_usec = 100 * USEC_PER_MSEC,
                .stall_window_usec = 300 * USEC_PER_SEC,
                .stall_calm_usec = 1800 * USEC_PER_SEC,
                .stall_min_waits = 10,
                .metrics_file = NULL,
                .metrics_interval_usec = 15 * USEC_PER_SEC,
                .never_remount = NULL,
        };
        return 0;
}

static void device_rule_done(DeviceRule *r) {
        device_match_done(&r->match);
        r->file = mfree(r->file);
}

void config_done(Config *c) {
        if (!c)
                return;
        strv_free(c->devices);
        free(c->metrics_file);
        strv_free(c->never_remount);
        for (size_t i = 0; i < c->n_rules; i++)
                device_rule_done(&c->rules[i]);
        free(c->rules);
        for (size_t i = 0; i < c->n_sources; i++)
                free(c->sources[i].file);
        free(c->sources);
        strv_free(c->files);
        *c = (Config){};
}

void config_section_header(ParseState *s, char *line) {
        size_t n = strlen(line);
        _cleanup_free_ char *error = NULL;
        DeviceMatch match;
        char *name;
        int r;

        s->section = SECTION_IGNORED;

        if (n < 2 || line[n - 1] != ']') {
                diag_error(s,
                           "malformed section header \"%s\": expected [Manager] or "
                           "[Device MATCH] with nothing after the ']'; ignoring this section",
                           line);
                return;
        }
        line[n - 1] = '\0';
        name = strstrip(line + 1);

        if (streq(name, "Manager")) {
                s->section = SECTION_MANAGER;
                return;
        }

        if (streq(name, "Device") || (startswith(name, "Device") && isspace((unsigned char) name[6]))) {
                DeviceRule *rules;

                r = device_match_parse(name + 6, &match, &error);
                if (r == -ENOMEM || (r < 0 && !error)) {
                        s->error = -ENOMEM;
                        return;
                }
                if (r < 0) {
                        diag_error(s, "[%s]: %s; ignoring this section", name, error);
                        return;
                }
                rules = realloc(s->config->rules, sizeof(DeviceRule) * (s->config->n_rules + 1));
                if (!rules) {
                        device_match_done(&match);
                        s->error = -ENOMEM;
                        return;
                }
                s->config->rules = rules;
                rules[s->config->n_rules] = (DeviceRule){
                        .match = match,
                        .stable_writes = _SETTING_INVALID,
                        .force = -1,
                        .need = -1,
                        .file = strdup(s->file),
                        .line = s->line,
                };
                if (!rules[s->config->n_rules].file) {
                        device_match_done(&match);
                        s->error = -ENOMEM;
                        return;
                }
                s->rule = s->config->n_rules++;
                s->section = SECTION_DEVICE;
                return;
        }

        if (strcasecmp(name, "Manager") == 0 ||
            (strncasecmp(name, "Device", 6) == 0 && (name[6] == '\0' || isspace((unsigned char) name[6]))))
                diag_error(s,
                           "unknown section [%s] (section names are case-sensitive: "
                           "[Manager] or [Device MATCH]); ignoring this section",
                           name);
        else
                diag_error(s,
                           "unknown section [%s]: expected [Manager] or [Device MATCH]; "
                           "ignoring this section",
                           name);
}

/* The enums are stored through an int. */
_Static_assert(sizeof(PolicyMode) == sizeof(int) && sizeof(ApplyMounted) == sizeof(int) &&
                       sizeof(Setting) == sizeof(int),
               "enum keys are stored as int");

static int policy_mode_value(const char *s) {
        return policy_mode_from_string(s);
}

static int apply_mounted_value(const char *s) {
        return apply_mounted_from_string(s);
}

static int setting_value(const char *s) {
        return setting_from_string(s);
}

static const char *policy_mode_name(int v) {
        return policy_mode_to_string(v);
}

static const char *apply_mounted_name(int v) {
        return apply_mounted_to_string(v);
}

static const char *setting_name(int v) {
        return setting_to_string(v);
}

static const char *boolean_name(int v) {
        return v ? "yes" : "no";
}

static const char *const setting_names[] = { "on", "off", "auto" };
static const char *const boolean_names[] = { "yes", "no" };

static const ConfigEnum policy_values = { policy_mode_value, policy_mode_name, NULL, policy_mode_table,
                                          ELEMENTSOF(policy_mode_table) };
static const ConfigEnum apply_mounted_values = { apply_mounted_value, apply_mounted_name, NULL,
                                                 apply_mounted_table, ELEMENTSOF(apply_mounted_table) };
static const ConfigEnum setting_values = { setting_value, setting_name, NULL, setting_names,
                                           ELEMENTSOF(setting_names) };
static const ConfigEnum boolean_values = { parse_boolean, boolean_name, "a boolean", boolean_names,
                                           ELEMENTSOF(boolean_names) };

/* What an enumerated key expects, for people: "on, off or auto", "a boolean (yes or no)".
 * New string, NULL on -ENOMEM. */
static char *enum_expected(const ConfigEnum *e) {
        _cleanup_free_ char *list = NULL;

        for (size_t i = 0; i < e->n_names; i++) {
                const char *sep = i == 0 ? "" : i + 1 < e->n_names ? ", " : " or ";
                char *l = strdup_printf("%s%s%s", list ?: "", sep, e->names[i]);

                if (!l)
                        return NULL;
                free(list);
                list = l;
        }
        return e->what ? strdup_printf("%s (%s)", e->what, list ?: "") : TAKE_PTR(list);
}

/* Policy=, ApplyMounted=, StableWrites=, Force=: one of item->values; empty: item->def. */
static bool parse_enum(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        _cleanup_free_ char *expected = NULL;
        int *p = data, v;

        if (isempty(value)) {
                *p = (int) item->def;
                return true;
        }
        v = item->values->from_string(value);
        if (v >= 0) {
                *p = v;
                return true;
        }
        expected = enum_expected(item->values);
        if (!expected) {
                s->error = -ENOMEM;
                return false;
        }
        diag_error(s, "invalid %s= value \"%s\": expected %s; ignoring this line", item->key, value,
                   expected);
        return false;
}

static bool parse_usec(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        uint64_t *p = data;
        long long v;

        if (isempty(value)) {
                *p = (uint64_t) item->def * item->unit;
                return true;
        }
        if (parse_int_range(value, item->min, item->max, &v) < 0) {
                diag_error(s,
                           "invalid %s= value \"%s\": expected a whole number of %s from %lld "
                           "to %lld; ignoring this line",
                           item->key, value, item->unit_name, item->min, item->max);
                return false;
        }
        *p = (uint64_t) v * item->unit;
        return true;
}

/* Normalizes an absolute path: drops duplicate and trailing slashes and "." components.
 * Returns 0, -EINVAL (with *ret_reason set) or -ENOMEM. */
static int path_normalize(const char *in, char **ret, const char **ret_reason) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0;

        if (in[0] != '/') {
                *ret_reason = "not an absolute path";
                return -EINVAL;
        }
        out = malloc(strlen(in) + 2);
        if (!out)
                return -ENOMEM;
        for (const char *p = in; *p;) {
                size_t k;

                while (*p == '/')
                        p++;
                k = strcspn(p, "/");
                if (k == 0)
                        break;
                if (k == 2 && strneq(p, "..", 2)) {
                        *ret_reason = "\"..\" is not allowed";
                        return -EINVAL;
                }
                if (!(k == 1 && p[0] == '.')) {
                        out[n++] = '/';
                        memcpy(out + n, p, k);
                        n += k;
                }
                p += k;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

/* Splits value at whitespace into *ret. Returns 0 or -ENOMEM. */
static int split_words(const char *value, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;

        for (const char *p = value;;) {
                size_t k;
                int r;

                p += strspn(p, " \t");
                k = strcspn(p, " \t");
                if (k == 0)
                        break;
                r = strv_extendf(&l, "%.*s", (int) k, p);
                if (r < 0)
                        return r;
                p += k;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* A Devices= line none of whose entries can be used: a list still at "all disks" becomes
 * "no disk", never "all". */
static void glob_list_fail_closed(ParseState *s, char ***l) {
        if (*l)
                return;
        *l = calloc(1, sizeof(char *));
        if (!*l)
                s->error = -ENOMEM;
}

/* Devices=: kernel name globs, appended; empty resets to "all". */
static bool parse_glob_list(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        _cleanup_strv_free_ char **words = NULL;
        char ***l = data;
        size_t added = 0, bad = 0;

        if (isempty(value)) {
                *l = strv_free(*l);
                return true;
        }
        if (split_words(value, &words) < 0) {
                s->error = -ENOMEM;
                return false;
        }
        STRV_FOREACH (w, words) {
                if (startswith(*w, "/dev/") && device_name_glob_is_valid(*w + 5)) {
                        diag_error(s,
                                   "invalid %s= entry \"%s\": use the kernel name (\"%s\"), "
                                   "not a path; ignoring this entry",
                                   item->key, *w, *w + 5);
                        bad++;
                        continue;
                }
                if (!device_name_glob_is_valid(*w)) {
                        diag_error(s,
                                   "invalid %s= entry \"%s\": expected a kernel name glob such "
                                   "as sd* or nvme0n1; ignoring this entry",
                                   item->key, *w);
                        bad++;
                        continue;
                }
                if (strv_extend(l, *w) < 0) {
                        s->error = -ENOMEM;
                        return false;
                }
                added++;
        }
        if (added == 0 && bad > 0)
                glob_list_fail_closed(s, l);
        return true; /* entries added, or the list fails closed */
}

/* NeverRemount=: absolute paths, appended; empty resets. */
static bool parse_path_list(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        _cleanup_strv_free_ char **words = NULL;
        char ***l = data;
        size_t added = 0;

        if (isempty(value)) {
                *l = strv_free(*l);
                return true;
        }
        if (split_words(value, &words) < 0) {
                s->error = -ENOMEM;
                return false;
        }
        STRV_FOREACH (w, words) {
                _cleanup_free_ char *path = NULL;
                const char *reason = NULL;
                int r;

                r = path_normalize(*w, &path, &reason);
                if (r == -ENOMEM) {
                        s->error = r;
                        return false;
                }
                if (r < 0) {
                        diag_error(s,
                                   "invalid %s= entry \"%s\": %s, expected an absolute mount "
                                   "point path; ignoring this entry",
                                   item->key, *w, reason);
                        continue;
                }
                added++;
                if (strv_contains(*l, path))
                        continue;
                if (strv_extend(l, path) < 0) {
                        s->error = -ENOMEM;
                        return false;
                }
        }
        return added > 0;
}

/* MetricsFile=: an absolute file path, or empty for none. */
static bool parse_file_path(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        _cleanup_free_ char *path = NULL;
        const char *reason = NULL;
        char **p = data;
        int r;

        if (isempty(value)) {
                *p = mfree(*p);
                return true;
        }
        r = path_normalize(value, &path, &reason);
        if (r == -ENOMEM) {
                s->error = r;
                return false;
        }
        if (r == 0 && (streq(path, "/") || value[strlen(value) - 1] == '/')) {
                reason = "names a directory";
                r = -EINVAL;
        }
        if (r == 0 && strpbrk(path, " \t")) {
                reason = "contains whitespace";
                r = -EINVAL;
        }
        if (r < 0) {
                diag_error(s,
                           "invalid %s= value \"%s\": %s, expected an absolute file path or "
                           "nothing; ignoring this line",
                           item->key, value, reason);
                return false;
        }
        free(*p);
        *p = TAKE_PTR(path);
        return true;
}

/* Need=: recommended or required; it can only raise the detected need (checked per disk by
 * the engine, which knows the detected need). */
static bool parse_need(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        int *p = data;

        if (isempty(value)) {
                *p = -1;
                return true;
        }
        if (streq(value, "recommended") || streq(value, "required")) {
                *p = need_from_string(value);
                s->config->rules[s->rule].need_line = s->line;
                return true;
        }
        diag_error(s,
                   "invalid %s= value \"%s\": expected recommended or required (Need= can only raise "
                   "the detected need); ignoring this line",
                   item->key, value);
        return false;
}

/* Force=: a boolean, and yes only in a section whose match names one disk itself
 * (identity.h): a forced setting must never reach another disk. */
static bool parse_force(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        const DeviceMatch *m = &s->config->rules[s->rule].match;
        _cleanup_free_ char *why = NULL, *text = NULL;
        int *p = data, before = *p;

        if (!parse_enum(s, item, value, data))
                return false;
        if (*p <= 0 || stable_id_names_disk(m, &why))
                return true;
        *p = before;
        text = device_match_to_string(m);
        if (!why || !text) {
                s->error = -ENOMEM;
                return false;
        }
        diag_error(s,
                   "Force=%s in [Device %s]: %s; a forced setting must never reach another disk: bind it "
                   "to an identity of the disk itself, exactly (ID_WWN=, ID_SERIAL=, DM_UUID=, MD_UUID=, "
                   "LOOP_BACKING_FILE=), or set it at run time (stablepagesctl set DISK off --force "
                   "--runtime); ignoring this line",
                   value, text, why);
        return false;
}

#define USEC_ITEM(k, field, lo, hi, d, u, uname)                                                            \
        { SECTION_MANAGER, k, parse_usec, offsetof(Config, field), lo, hi, d, u, uname }
#define ENUM_ITEM(sect, k, type, field, d, enum_values)                                                     \
        { sect, k, parse_enum, offsetof(type, field), .def = d, .values = &enum_values }

const ConfigItem config_items[] = {
        ENUM_ITEM(SECTION_MANAGER, "Policy", Config, policy, POLICY_BALANCED, policy_values),
        { SECTION_MANAGER, "Devices", parse_glob_list, offsetof(Config, devices), .list = true },
        ENUM_ITEM(SECTION_MANAGER, "ApplyMounted", Config, apply_mounted, APPLY_MOUNTED_NEXT_MOUNT,
                  apply_mounted_values),
        USEC_ITEM("RescanSec", rescan_usec, 0, 86400, 60, USEC_PER_SEC, "seconds"),
        USEC_ITEM("StallBudgetMSec", stall_budget_usec, 1, 600000, 100, USEC_PER_MSEC, "milliseconds"),
        USEC_ITEM("StallWindowSec", stall_window_usec, 1, 86400, 300, USEC_PER_SEC, "seconds"),
        USEC_ITEM("StallCalmSec", stall_calm_usec, 0, 604800, 1800, USEC_PER_SEC, "seconds"),
        USEC_ITEM("StallMinWaits", stall_min_waits, 1, 1000000, 10, 1, "waits"),
        USEC_ITEM("MirrorCheckSec", mirror_check_usec, 0, 31536000, 0, USEC_PER_SEC, "seconds"),
        { SECTION_MANAGER, "MetricsFile", parse_file_path, offsetof(Config, metrics_file) },
        USEC_ITEM("MetricsIntervalSec", metrics_interval_usec, 1, 3600, 15, USEC_PER_SEC, "seconds"),
        { SECTION_MANAGER, "NeverRemount", parse_path_list, offsetof(Config, never_remount), .list = true },
        ENUM_ITEM(SECTION_DEVICE, "StableWrites", DeviceRule, stable_writes, _SETTING_INVALID,
                  setting_values),
        { SECTION_DEVICE, "Force", parse_force, offsetof(DeviceRule, force), .def = -1,
          .values = &boolean_values },
        { SECTION_DEVICE, "Need", parse_need, offsetof(DeviceRule, need) },
};
const size_t config_items_n = ELEMENTSOF(config_items);

/* Records that the line s->line of s->file set item (of [Manager], or of the current [Device]
 * section): it replaces the sources of the key, unless the key takes a list and the line
 * added to it. */
static void record_source(ParseState *s, const ConfigItem *item, bool added) {
        Config *c = s->config;
        size_t rule = s->section == SECTION_DEVICE ? s->rule : CONFIG_SOURCE_MANAGER, n = 0;
        ConfigSource *l;
        char *file;

        for (size_t i = 0; i < c->n_sources; i++) {
                ConfigSource *src = &c->sources[i];
                if (src->rule == rule && streq(src->key, item->key) && !added)
                        free(src->file);
                else
                        c->sources[n++] = *src;
        }
        c->n_sources = n;
        file = strdup(s->file);
        l = file ? realloc(c->sources, sizeof(ConfigSource) * (n + 1)) : NULL;
        if (!l) {
                free(file);
                s->error = -ENOMEM;
                return;
        }
        c->sources = l;
        l[c->n_sources++] = (ConfigSource){ .key = item->key, .rule = rule, .file = file, .line = s->line };
}

void config_handle_unreadable_item(ParseState *s, const char *name) {
        if (s->error < 0 || s->section != SECTION_MANAGER)
                return;
        for (size_t i = 0; i < ELEMENTSOF(config_items); i++) {
                const ConfigItem *item = &config_items[i];
                if (item->section != SECTION_MANAGER || item->parse != parse_glob_list ||
                    !streq(item->key, name))
                        continue;
                diag_error(s,
                           "%s= on this line cannot be read: the disks it lists are only observed, and "
                           "without another %s= entry no disk is managed",
                           name, name);
                glob_list_fail_closed(s, (char ***) ((uint8_t *) s->config + item->offset));
                record_source(s, item, true);
        }
}

int config_handle_item(void *user, const char *section, const char *name, const char *value) {
        ParseState *s = user;
        const char *suggestion = NULL;
        void *base;

        if (s->error < 0 || !name)
                return 1;

        switch (s->section) {
        case SECTION_MANAGER:
                base = s->config;
                break;
        case SECTION_DEVICE:
                base = &s->config->rules[s->rule];
                break;
        default:
                return 1; /* the reader does not pass such lines on */
        }

        for (size_t i = 0; i < ELEMENTSOF(config_items); i++) {
                const ConfigItem *item = &config_items[i];

                if (item->section != s->section)
                        continue;
                if (streq(item->key, name)) {
                        if (item->parse(s, item, value ?: "", (uint8_t *) base + item->offset))
                                record_source(s, item, item->list && !isempty(value));
                        return 1;
                }
                if (strcasecmp(item->key, name) == 0)
                        suggestion = item->key;
        }

        if (suggestion)
                diag_warning(s,
                             "unknown key %s= in [%s] (keys are case-sensitive: did you mean "
                             "%s=?); ignoring it",
                             name, s->section == SECTION_MANAGER ? "Manager" : "Device", suggestion);
        else
                diag_warning(s, "unknown key %s= in [%s]; ignoring it", name,
                             s->section == SECTION_MANAGER ? "Manager" : "Device");
        return 1;
}

char *config_item_value(const ConfigItem *item, const void *base) {
        const void *p = (const uint8_t *) base + item->offset;

        if (item->parse == parse_usec)
                return strdup_printf("%" PRIu64, *(const uint64_t *) p / item->unit);
        if (item->parse == parse_file_path)
                return strdup(*(char *const *) p ?: "");
        if (item->list) {
                char *const *l = *(char *const *const *) p;
                size_t n = 0;
                char *v;

                for (size_t i = 0; l && l[i]; i++)
                        n += strlen(l[i]) + 1;
                v = calloc(1, n + 1);
                for (size_t i = 0; v && l && l[i]; i++)
                        strcat(strcat(v, i > 0 ? " " : ""), l[i]);
                return v;
        }
        int v = *(const int *) p;
        if (v < 0)
                return strdup("");
        return strdup(item->parse == parse_need ? need_to_string(v) : item->values->to_string(v));
}
