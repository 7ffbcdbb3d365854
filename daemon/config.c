/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration parser. inih splits "Key=value" lines; everything else is done by
 * config_reader(), which feeds inih one line at a time and validates each line before
 * inih sees it, so that every bad line is reported with its file and line number and
 * parsing continues:
 *
 * - inih (Debian's libinih 55) calls the handler without line numbers, so the reader
 *   counts lines;
 * - inih keeps section names in a 50-byte buffer and ends them at the first ']', which
 *   would truncate "[Device ID_FS_UUID=...]" and "[Device loop[0-3]]": the reader
 *   parses section headers itself and hands inih an empty line instead;
 * - Debian builds inih with multi-line values (an indented line continues the previous
 *   value) and ';' inline comments: the reader strips leading whitespace and rejects
 *   values with a comment character after whitespace, so neither ever applies;
 * - inih splits over-long lines into several (its buffer is INI_MAX_LINE bytes): the
 *   reader reports them instead.
 *
 * So inih only ever sees "\n" or a validated "Key=value\n". */

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ini.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "classify.h"
#include "config.h"
#include "util.h"

#if defined(__has_include)
#if __has_include("config-build.h")
#include "config-build.h"
#endif
#endif

#ifndef CONFIG_FILE
#define CONFIG_FILE "/etc/stablepages.conf"
#endif
#ifndef CONFIG_DROPIN_DIR
#define CONFIG_DROPIN_DIR "/etc/stablepages.conf.d"
#endif

/* Files larger than this are reported and skipped. */
#define CONFIG_FILE_SIZE_MAX (1024U * 1024U)

/* After this many problems in one file, further ones are counted but not recorded. */
#define CONFIG_DIAGS_PER_FILE_MAX 1000U

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
        *c = (Config){};
}

void config_diags_done(ConfigDiags *d) {
        if (!d)
                return;
        for (size_t i = 0; i < d->n; i++) {
                free(d->items[i].file);
                free(d->items[i].message);
        }
        free(d->items);
        *d = (ConfigDiags){};
}

size_t config_diags_errors(const ConfigDiags *d) {
        size_t n = 0;

        for (size_t i = 0; d && i < d->n; i++)
                if (d->items[i].level == DIAG_ERROR)
                        n++;
        return n;
}

void config_diags_print(const ConfigDiags *d, FILE *f) {
        for (size_t i = 0; d && i < d->n; i++) {
                const ConfigDiag *g = &d->items[i];
                const char *level = g->level == DIAG_ERROR ? "error" : "warning";

                if (g->line > 0)
                        fprintf(f, "%s:%u: %s: %s\n", g->file, g->line, level, g->message);
                else
                        fprintf(f, "%s: %s: %s\n", g->file, level, g->message);
        }
}

/* Appends one diagnostic; takes ownership of message. Returns 0 or -ENOMEM. */
static int diags_push(ConfigDiags *d, DiagLevel level, const char *file, unsigned line, char *message) {
        _cleanup_free_ char *m = message, *f = NULL;
        ConfigDiag *items;

        if (!m)
                return -ENOMEM;
        f = strdup(file ?: "");
        if (!f)
                return -ENOMEM;
        items = realloc(d->items, sizeof(ConfigDiag) * (d->n + 1));
        if (!items)
                return -ENOMEM;
        d->items = items;
        d->items[d->n++] = (ConfigDiag){
                .level = level,
                .file = TAKE_PTR(f),
                .line = line,
                .message = TAKE_PTR(m),
        };
        return 0;
}

/* ---- device matches ---- */

void device_match_done(DeviceMatch *m) {
        if (!m)
                return;
        m->pattern = mfree(m->pattern);
        m->key = mfree(m->key);
}

/* Characters of kernel block device names (see device_name_is_valid()) plus fnmatch()
 * syntax. */
static bool name_glob_is_valid(const char *s) {
        if (isempty(s) || strlen(s) > 128)
                return false;
        for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("._:+-*?[]!^", *p))
                        return false;
        return true;
}

static bool property_key_is_valid(const char *s) {
        if (isempty(s))
                return false;
        for (const char *p = s; *p; p++)
                if (!(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') && *p != '_')
                        return false;
        return true;
}

static bool looks_like_devnum(const char *s) {
        /* Digits, a colon, maybe more: the user meant MAJ:MIN. */
        return isdigit((unsigned char) s[0]) && strchr(s, ':') && !strchr(s, '=');
}

int device_match_parse(const char *text, DeviceMatch *ret, char **ret_error) {
        _cleanup_free_ char *copy = NULL, *key = NULL, *pattern = NULL;
        char *s, *eq;
        dev_t devnum;

#define FAIL(...)                                                                                           \
        do {                                                                                                \
                if (ret_error)                                                                              \
                        *ret_error = strdup_printf(__VA_ARGS__);                                            \
                return -EINVAL;                                                                             \
        } while (0)

        if (ret_error)
                *ret_error = NULL;
        if (!text)
                FAIL("missing device match");
        copy = strdup(text);
        if (!copy)
                return -ENOMEM;
        s = strstrip(copy);
        if (isempty(s))
                FAIL("missing device match: expected a kernel name glob (zram*), MAJ:MIN (7:0) "
                     "or a udev property (ID_WWN=0x...)");

        eq = strchr(s, '=');
        if (eq) {
                *eq = '\0';
                char *k = strstrip(s), *v = strstrip(eq + 1);
                if (!property_key_is_valid(k))
                        FAIL("invalid udev property name \"%s\" in device match: expected "
                             "upper-case letters, digits and '_'",
                             k);
                if (isempty(v))
                        FAIL("empty value for udev property %s in device match", k);
                key = strdup(k);
                pattern = strdup(v);
                if (!key || !pattern)
                        return -ENOMEM;
                *ret = (DeviceMatch){
                        .kind = MATCH_PROPERTY,
                        .key = TAKE_PTR(key),
                        .pattern = TAKE_PTR(pattern),
                };
                return 0;
        }

        if (looks_like_devnum(s)) {
                if (parse_devnum(s, &devnum) < 0)
                        FAIL("invalid device number \"%s\": expected MAJ:MIN, e.g. 7:0", s);
                pattern = strdup(s);
                if (!pattern)
                        return -ENOMEM;
                *ret = (DeviceMatch){
                        .kind = MATCH_DEVNUM,
                        .pattern = TAKE_PTR(pattern),
                        .devnum = devnum,
                };
                return 0;
        }

        if (startswith(s, "/dev/"))
                FAIL("invalid device match \"%s\": use the kernel name (\"%s\"), not a path", s, s + 5);
        if (!name_glob_is_valid(s))
                FAIL("invalid device match \"%s\": expected a kernel name glob (zram*, "
                     "loop[0-3]), MAJ:MIN or KEY=value",
                     s);
        pattern = strdup(s);
        if (!pattern)
                return -ENOMEM;
        *ret = (DeviceMatch){
                .kind = MATCH_NAME_GLOB,
                .pattern = TAKE_PTR(pattern),
        };
        return 0;
#undef FAIL
}

char *device_match_to_string(const DeviceMatch *m) {
        char buf[32];

        switch (m->kind) {
        case MATCH_NAME_GLOB:
                return strdup(m->pattern ?: "");
        case MATCH_DEVNUM:
                return strdup(format_devnum(m->devnum, buf));
        case MATCH_PROPERTY:
                return strdup_printf("%s=%s", m->key ?: "", m->pattern ?: "");
        default:
                return NULL;
        }
}

char *device_match_describe(const DeviceMatch *m) {
        char buf[32];

        switch (m->kind) {
        case MATCH_NAME_GLOB:
                return strdup_printf("kernel name %s", m->pattern ?: "");
        case MATCH_DEVNUM:
                return strdup_printf("device number %s", format_devnum(m->devnum, buf));
        case MATCH_PROPERTY:
                return strdup_printf("%s=%s", m->key ?: "", m->pattern ?: "");
        default:
                return NULL;
        }
}

bool device_match_test(const DeviceMatch *m, const DeviceIdentity *id) {
        if (!m || !id)
                return false;

        switch (m->kind) {
        case MATCH_NAME_GLOB:
                return id->name && m->pattern && fnmatch(m->pattern, id->name, 0) == 0;
        case MATCH_DEVNUM:
                return id->devnum == m->devnum;
        case MATCH_PROPERTY: {
                size_t kl;

                if (!m->key || !m->pattern)
                        return false;
                if (streq(m->key, MATCH_KEY_LOOP_BACKING_FILE))
                        return id->loop_backing_file && fnmatch(m->pattern, id->loop_backing_file, 0) == 0;
                kl = strlen(m->key);
                STRV_FOREACH (p, id->properties)
                        if (strneq(*p, m->key, kl) && (*p)[kl] == '=' &&
                            fnmatch(m->pattern, *p + kl + 1, 0) == 0)
                                return true;
                return false;
        }
        default:
                return false;
        }
}

void config_device_settings(const Config *c, const DeviceIdentity *id, Setting *ret_setting, bool *ret_force,
                            const DeviceRule **ret_setting_rule, const DeviceRule **ret_force_rule) {
        const DeviceRule *setting_rule = NULL, *force_rule = NULL;
        Setting setting = SETTING_AUTO;
        bool force = false;

        for (size_t i = 0; c && i < c->n_rules; i++) {
                const DeviceRule *r = &c->rules[i];

                if (!device_match_test(&r->match, id))
                        continue;
                if (r->stable_writes >= 0) {
                        setting = r->stable_writes;
                        setting_rule = r;
                }
                if (r->force >= 0) {
                        force = r->force > 0;
                        force_rule = r;
                }
        }

        if (ret_setting)
                *ret_setting = setting;
        if (ret_force)
                *ret_force = force;
        if (ret_setting_rule)
                *ret_setting_rule = setting_rule;
        if (ret_force_rule)
                *ret_force_rule = force_rule;
}

int config_device_need(const Config *c, const DeviceIdentity *id, const DeviceRule **ret_rule) {
        const DeviceRule *rule = NULL;

        for (size_t i = 0; c && i < c->n_rules; i++)
                if (c->rules[i].need >= 0 && device_match_test(&c->rules[i].match, id))
                        rule = &c->rules[i];
        if (ret_rule)
                *ret_rule = rule;
        return rule ? rule->need : -1;
}

bool config_device_is_managed(const Config *c, const char *name) {
        if (!c->devices)
                return true;
        if (!name)
                return false;
        STRV_FOREACH (g, c->devices)
                if (fnmatch(*g, name, 0) == 0)
                        return true;
        return false;
}

/* ---- parsing ---- */

typedef enum SectionKind {
        SECTION_NONE, /* before the first header */
        SECTION_MANAGER,
        SECTION_DEVICE,
        SECTION_IGNORED, /* unknown or malformed, already reported: its keys are skipped */
} SectionKind;

typedef struct ParseState {
        Config *config;
        ConfigDiags *diags;
        const char *file;
        const char *data;
        size_t size, pos;
        unsigned line;
        unsigned n_diags;
        SectionKind section;
        size_t rule; /* index into config->rules in SECTION_DEVICE */
        int error;   /* -ENOMEM, sticky */
} ParseState;

static void diag(ParseState *s, DiagLevel level, unsigned line, const char *format, ...) _printf_(4, 5);

static void diag(ParseState *s, DiagLevel level, unsigned line, const char *format, ...) {
        va_list ap;
        char *m;

        if (s->error < 0)
                return;
        s->n_diags++;
        if (s->n_diags > CONFIG_DIAGS_PER_FILE_MAX + 1)
                return;
        if (s->n_diags == CONFIG_DIAGS_PER_FILE_MAX + 1) {
                level = DIAG_ERROR;
                m = strdup("too many problems in this file; further ones are not reported");
        } else {
                va_start(ap, format);
                if (vasprintf(&m, format, ap) < 0)
                        m = NULL;
                va_end(ap);
        }
        if (diags_push(s->diags, level, s->file, line, m) < 0)
                s->error = -ENOMEM;
}

#define diag_error(s, ...) diag(s, DIAG_ERROR, (s)->line, __VA_ARGS__)
#define diag_warning(s, ...) diag(s, DIAG_WARNING, (s)->line, __VA_ARGS__)

/* Returns the length of the valid UTF-8 sequence at p (at most n bytes), or 0 when it is
 * not valid (overlong forms, surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_sequence_length(const unsigned char *p, size_t n) {
        uint32_t cp;
        size_t len;

        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf) {
                len = 2;
                cp = p[0] & 0x1f;
        } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
                len = 3;
                cp = p[0] & 0x0f;
        } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                len = 4;
                cp = p[0] & 0x07;
        } else
                return 0;
        if (n < len)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return len;
}

/* Checks the raw bytes of one line (without its '\n'). Returns true when it is fine,
 * else reports why. */
static bool line_check_bytes(ParseState *s, const char *line, size_t len, size_t max) {
        const unsigned char *u = (const unsigned char *) line;

        if (memchr(line, '\0', len)) {
                diag_error(s, "line contains a NUL byte (at column %zu); ignoring it",
                           (size_t) ((const char *) memchr(line, '\0', len) - line) + 1);
                return false;
        }
        if (len > max) {
                diag_error(s, "line is too long (%zu bytes, at most %zu); ignoring it", len, max);
                return false;
        }
        for (size_t i = 0; i < len;) {
                size_t k = utf8_sequence_length(u + i, len - i);

                if (k == 0) {
                        diag_error(s,
                                   "line is not valid UTF-8 (byte 0x%02x at column %zu); "
                                   "ignoring it",
                                   u[i], i + 1);
                        return false;
                }
                if (k == 1 && ((u[i] < 0x20 && u[i] != '\t') || u[i] == 0x7f)) {
                        diag_error(s,
                                   "line contains a control character (0x%02x at column "
                                   "%zu); ignoring it",
                                   u[i], i + 1);
                        return false;
                }
                i += k;
        }
        return true;
}

static bool key_name_is_valid(const char *s) {
        if (isempty(s))
                return false;
        for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("_.-", *p))
                        return false;
        return true;
}

/* Position of an inline comment: '#' or ';' after whitespace, or NULL. */
static const char *find_inline_comment(const char *v) {
        for (const char *p = v; *p; p++)
                if ((*p == '#' || *p == ';') && p > v && isspace((unsigned char) p[-1]))
                        return p;
        return NULL;
}

/* Handles a "[...]" line (stripped) at s->line. */
static void section_header(ParseState *s, char *line) {
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

/* ---- values ---- */

typedef struct ConfigItem ConfigItem;
typedef void (*ConfigParser)(ParseState *s, const ConfigItem *item, const char *value, void *data);

struct ConfigItem {
        SectionKind section;
        const char *key;
        ConfigParser parse;
        size_t offset;           /* into Config or DeviceRule */
        long long min, max, def; /* for parse_usec */
        uint64_t unit;           /* for parse_usec */
        const char *unit_name;
};

static void parse_policy(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        PolicyMode *p = data, m;

        if (isempty(value)) {
                *p = POLICY_BALANCED;
                return;
        }
        m = policy_mode_from_string(value);
        if (m < 0) {
                diag_error(s,
                           "invalid %s= value \"%s\": expected observe, latency, balanced or "
                           "integrity; ignoring this line",
                           item->key, value);
                return;
        }
        *p = m;
}

static void parse_apply_mounted(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        ApplyMounted *p = data, a;

        if (isempty(value)) {
                *p = APPLY_MOUNTED_NEXT_MOUNT;
                return;
        }
        a = apply_mounted_from_string(value);
        if (a < 0) {
                diag_error(s,
                           "invalid %s= value \"%s\": expected next-mount or remount-idle; "
                           "ignoring this line",
                           item->key, value);
                return;
        }
        *p = a;
}

static void parse_usec(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        uint64_t *p = data;
        long long v;

        if (isempty(value)) {
                *p = (uint64_t) item->def * item->unit;
                return;
        }
        if (parse_int_range(value, item->min, item->max, &v) < 0) {
                diag_error(s,
                           "invalid %s= value \"%s\": expected a whole number of %s from %lld "
                           "to %lld; ignoring this line",
                           item->key, value, item->unit_name, item->min, item->max);
                return;
        }
        *p = (uint64_t) v * item->unit;
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

/* Devices=: kernel name globs, appended; empty resets to "all". */
static void parse_glob_list(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        _cleanup_strv_free_ char **words = NULL;
        char ***l = data;
        size_t added = 0, bad = 0;

        if (isempty(value)) {
                *l = strv_free(*l);
                return;
        }
        if (split_words(value, &words) < 0) {
                s->error = -ENOMEM;
                return;
        }
        STRV_FOREACH (w, words) {
                if (startswith(*w, "/dev/") && name_glob_is_valid(*w + 5)) {
                        diag_error(s,
                                   "invalid %s= entry \"%s\": use the kernel name (\"%s\"), "
                                   "not a path; ignoring this entry",
                                   item->key, *w, *w + 5);
                        bad++;
                        continue;
                }
                if (!name_glob_is_valid(*w)) {
                        diag_error(s,
                                   "invalid %s= entry \"%s\": expected a kernel name glob such "
                                   "as sd* or nvme0n1; ignoring this entry",
                                   item->key, *w);
                        bad++;
                        continue;
                }
                if (strv_extend(l, *w) < 0) {
                        s->error = -ENOMEM;
                        return;
                }
                added++;
        }
        /* A line whose entries are all invalid must not leave the list at "all disks". */
        if (added == 0 && bad > 0 && !*l) {
                *l = calloc(1, sizeof(char *));
                if (!*l)
                        s->error = -ENOMEM;
        }
}

/* NeverRemount=: absolute paths, appended; empty resets. */
static void parse_path_list(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        _cleanup_strv_free_ char **words = NULL;
        char ***l = data;

        if (isempty(value)) {
                *l = strv_free(*l);
                return;
        }
        if (split_words(value, &words) < 0) {
                s->error = -ENOMEM;
                return;
        }
        STRV_FOREACH (w, words) {
                _cleanup_free_ char *path = NULL;
                const char *reason = NULL;
                int r;

                r = path_normalize(*w, &path, &reason);
                if (r == -ENOMEM) {
                        s->error = r;
                        return;
                }
                if (r < 0) {
                        diag_error(s,
                                   "invalid %s= entry \"%s\": %s, expected an absolute mount "
                                   "point path; ignoring this entry",
                                   item->key, *w, reason);
                        continue;
                }
                if (strv_contains(*l, path))
                        continue;
                if (strv_extend(l, path) < 0) {
                        s->error = -ENOMEM;
                        return;
                }
        }
}

/* MetricsFile=: an absolute file path, or empty for none. */
static void parse_file_path(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        _cleanup_free_ char *path = NULL;
        const char *reason = NULL;
        char **p = data;
        int r;

        if (isempty(value)) {
                *p = mfree(*p);
                return;
        }
        r = path_normalize(value, &path, &reason);
        if (r == -ENOMEM) {
                s->error = r;
                return;
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
                return;
        }
        free(*p);
        *p = TAKE_PTR(path);
}

static void parse_setting(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        Setting *p = data, v;

        if (isempty(value)) {
                *p = _SETTING_INVALID;
                return;
        }
        v = setting_from_string(value);
        if (v < 0) {
                diag_error(s,
                           "invalid %s= value \"%s\": expected on, off or auto; ignoring this "
                           "line",
                           item->key, value);
                return;
        }
        *p = v;
}

static void parse_tristate(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        int *p = data, b;

        if (isempty(value)) {
                *p = -1;
                return;
        }
        b = parse_boolean(value);
        if (b < 0) {
                diag_error(s,
                           "invalid %s= value \"%s\": expected a boolean (yes or no); "
                           "ignoring this line",
                           item->key, value);
                return;
        }
        *p = b;
}

/* Need=: recommended or required; it can only raise the detected need (checked per disk by
 * the engine, which knows the detected need). */
static void parse_need(ParseState *s, const ConfigItem *item, const char *value, void *data) {
        int *p = data;

        if (isempty(value)) {
                *p = -1;
                return;
        }
        if (streq(value, "recommended") || streq(value, "required")) {
                *p = need_from_string(value);
                s->config->rules[s->rule].need_line = s->line;
                return;
        }
        diag_error(s,
                   "invalid %s= value \"%s\": expected recommended or required (Need= can only raise "
                   "the detected need); ignoring this line",
                   item->key, value);
}

#define USEC_ITEM(k, field, lo, hi, d, u, uname)                                                            \
        { SECTION_MANAGER, k, parse_usec, offsetof(Config, field), lo, hi, d, u, uname }

static const ConfigItem config_items[] = {
        { SECTION_MANAGER, "Policy", parse_policy, offsetof(Config, policy) },
        { SECTION_MANAGER, "Devices", parse_glob_list, offsetof(Config, devices) },
        { SECTION_MANAGER, "ApplyMounted", parse_apply_mounted, offsetof(Config, apply_mounted) },
        USEC_ITEM("RescanSec", rescan_usec, 0, 86400, 60, USEC_PER_SEC, "seconds"),
        USEC_ITEM("StallBudgetMSec", stall_budget_usec, 1, 600000, 100, USEC_PER_MSEC, "milliseconds"),
        USEC_ITEM("StallWindowSec", stall_window_usec, 1, 86400, 300, USEC_PER_SEC, "seconds"),
        USEC_ITEM("StallCalmSec", stall_calm_usec, 0, 604800, 1800, USEC_PER_SEC, "seconds"),
        USEC_ITEM("StallMinWaits", stall_min_waits, 1, 1000000, 10, 1, "waits"),
        { SECTION_MANAGER, "MetricsFile", parse_file_path, offsetof(Config, metrics_file) },
        USEC_ITEM("MetricsIntervalSec", metrics_interval_usec, 1, 3600, 15, USEC_PER_SEC, "seconds"),
        { SECTION_MANAGER, "NeverRemount", parse_path_list, offsetof(Config, never_remount) },
        { SECTION_DEVICE, "StableWrites", parse_setting, offsetof(DeviceRule, stable_writes) },
        { SECTION_DEVICE, "Force", parse_tristate, offsetof(DeviceRule, force) },
        { SECTION_DEVICE, "Need", parse_need, offsetof(DeviceRule, need) },
};

/* The inih handler: section is ignored (inih truncates it; the reader tracks it). */
static int config_handler(void *user, const char *section, const char *name, const char *value) {
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
                        item->parse(s, item, value ?: "", (uint8_t *) base + item->offset);
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

/* The inih reader: hands inih the next line, or "\n" when the line is bad or is handled
 * here (section headers, comments, lines in ignored sections). See the top of this file. */
static char *config_reader(char *str, int num, void *stream) {
        ParseState *s = stream;
        const char *line, *nl;
        size_t len, max;
        char buf[num > 0 ? num : 1];
        char *t, *eq, *name, *value;

        if (s->pos >= s->size || num < 4 || s->error < 0)
                return NULL;

        line = s->data + s->pos;
        nl = memchr(line, '\n', s->size - s->pos);
        len = nl ? (size_t) (nl - line) : s->size - s->pos;
        s->pos += len + (nl ? 1 : 0);
        s->line++;
        strcpy(str, "\n");

        if (len > 0 && line[len - 1] == '\r')
                len--;
        if (s->line == 1 && len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {
                line += 3; /* UTF-8 byte order mark */
                len -= 3;
        }

        /* inih needs room for "\r\n\0" after the longest line (see INI_MAX_LINE in ini.h). */
        max = (size_t) num - 3;
        if (!line_check_bytes(s, line, len, max)) {
                /* A broken section header: its keys must not land in the previous section. */
                size_t i = 0;
                while (i < len && isspace((unsigned char) line[i]))
                        i++;
                if (i < len && line[i] == '[')
                        s->section = SECTION_IGNORED;
                return str;
        }

        memcpy(buf, line, len);
        buf[len] = '\0';
        t = strstrip(buf);

        if (*t == '\0' || *t == '#' || *t == ';')
                return str;

        if (*t == '[') {
                section_header(s, t);
                return str;
        }

        eq = strchr(t, '=');
        if (!eq) {
                diag_error(s,
                           "expected \"Key=value\", a [Section] header or a comment, got "
                           "\"%s\"; ignoring this line",
                           t);
                return str;
        }
        *eq = '\0';
        name = strstrip(t);
        value = strstrip(eq + 1);
        if (isempty(name)) {
                diag_error(s, "missing key name before '='; ignoring this line");
                return str;
        }
        if (!key_name_is_valid(name)) {
                diag_error(s, "invalid key name \"%s\"; ignoring this line", name);
                return str;
        }
        if (find_inline_comment(value)) {
                diag_error(s,
                           "%s=: inline comments are not supported (\"%s\"); put the comment "
                           "on a line of its own; ignoring this line",
                           name, find_inline_comment(value));
                return str;
        }

        switch (s->section) {
        case SECTION_NONE:
                diag_error(s, "%s= outside of any section; ignoring this line", name);
                return str;
        case SECTION_IGNORED:
                return str; /* reported at the section header */
        default:
                break;
        }

        /* Fits: name and value are shorter than the line, which is at most num - 3. */
        snprintf(str, (size_t) num, "%s=%s\n", name, value);
        return str;
}

/* Parses data (size bytes) named name on top of *c. Returns 0 or -ENOMEM. */
static int parse_data(Config *c, const char *name, const char *data, size_t size, ConfigDiags *diags) {
        ParseState s = {
                .config = c,
                .diags = diags,
                .file = name,
                .data = data,
                .size = size,
                .section = SECTION_NONE,
        };
        int r;

        if (size > CONFIG_FILE_SIZE_MAX)
                return diags_push(diags, DIAG_ERROR, name, 0,
                                  strdup_printf("file is too large (%zu bytes, at most %u); "
                                                "ignoring this file",
                                                size, CONFIG_FILE_SIZE_MAX));
        if (size == 0)
                return 0;

        r = ini_parse_stream(config_reader, &s, config_handler, &s);
        if (s.error < 0)
                return s.error;
        if (r == -2)
                return -ENOMEM;
        /* r > 0 is the first line inih disliked; the reader has reported every bad line. */
        return 0;
}

int config_parse_buffer(Config *c, const char *name, const char *data, size_t size, ConfigDiags *diags) {
        return parse_data(c, name ?: "(buffer)", data ?: "", data ? size : 0, diags);
}

/* Reports a file that cannot be read. Returns 0 or -ENOMEM. */
static int report_file(ConfigDiags *diags, const char *path, const char *format, ...) _printf_(3, 4);

static int report_file(ConfigDiags *diags, const char *path, const char *format, ...) {
        va_list ap;
        char *m;

        va_start(ap, format);
        if (vasprintf(&m, format, ap) < 0)
                m = NULL;
        va_end(ap);
        return diags_push(diags, DIAG_ERROR, path, 0, m);
}

static bool stat_is_dev_null(const struct stat *st) {
        return S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3);
}

/* Reads and parses one file. With missing_ok, a file that does not exist is silently
 * skipped; other problems are reported. Returns 0 or -ENOMEM. */
static int parse_path(Config *c, const char *path, bool missing_ok, ConfigDiags *diags) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st, lst;
        size_t n = 0;

        if (stat(path, &st) < 0) {
                int e = errno;

                if (e == ENOENT && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
                        return report_file(diags, path, "dangling symlink; ignoring this file");
                if (e == ENOENT && missing_ok)
                        return 0;
                return report_file(diags, path, "cannot read: %s; ignoring this file", strerror(e));
        }
        if (stat_is_dev_null(&st))
                return 0; /* a symlink to /dev/null masks a file */
        if (S_ISDIR(st.st_mode))
                return report_file(diags, path, "cannot read: %s; ignoring this file", strerror(EISDIR));
        if (!S_ISREG(st.st_mode))
                return report_file(diags, path, "not a regular file; ignoring this file");
        if ((uintmax_t) st.st_size > CONFIG_FILE_SIZE_MAX)
                return report_file(diags, path,
                                   "file is too large (%ju bytes, at most %u); "
                                   "ignoring this file",
                                   (uintmax_t) st.st_size, CONFIG_FILE_SIZE_MAX);

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return report_file(diags, path, "cannot read: %m; ignoring this file");
        if (fstat(fd, &st) < 0)
                return report_file(diags, path, "cannot read: %m; ignoring this file");
        if (!S_ISREG(st.st_mode))
                return report_file(diags, path, "not a regular file; ignoring this file");

        buf = malloc(CONFIG_FILE_SIZE_MAX + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(fd, buf + n, CONFIG_FILE_SIZE_MAX + 1 - n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return report_file(diags, path, "cannot read: %m; ignoring this file");
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > CONFIG_FILE_SIZE_MAX)
                        return report_file(diags, path,
                                           "file is too large (more than %u bytes); ignoring "
                                           "this file",
                                           CONFIG_FILE_SIZE_MAX);
        }
        return parse_data(c, path, buf, n, diags);
}

int config_parse_file(Config *c, const char *path, ConfigDiags *diags) {
        return parse_path(c, path, false, diags);
}

/* The names of the *.conf entries of dir (not starting with '.'), sorted with strcmp.
 * Returns 0 (with *ret NULL when dir does not exist), -ENOMEM, or another -errno with
 * the problem reported. */
static int list_dropins(const char *dir, char ***ret, ConfigDiags *diags) {
        _cleanup_strv_free_ char **names = NULL;
        DIR *d;
        struct dirent *de;
        int r = 0;

        *ret = NULL;
        d = opendir(dir);
        if (!d) {
                if (errno == ENOENT)
                        return 0;
                r = -errno;
                if (report_file(diags, dir, "cannot read directory: %s; ignoring it", strerror(-r)) < 0)
                        return -ENOMEM;
                return r;
        }
        for (;;) {
                size_t len;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0) {
                                r = -errno;
                                if (report_file(diags, dir, "cannot read directory: %s", strerror(-r)) < 0)
                                        r = -ENOMEM;
                        }
                        break;
                }
                len = strlen(de->d_name);
                if (de->d_name[0] == '.' || len <= 5 || !streq(de->d_name + len - 5, ".conf"))
                        continue;
                if (strv_extend(&names, de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
        }
        closedir(d);
        if (r == -ENOMEM)
                return r;
        strv_sort(names);
        *ret = TAKE_PTR(names);
        return 0;
}

int config_load(const char *config_file, const char *dropin_dir, Config *ret, ConfigDiags *diags) {
        _cleanup_strv_free_ char **names = NULL;
        int r;

        config_init_defaults(ret);

        r = parse_path(ret, config_file ?: CONFIG_FILE, true, diags);
        if (r < 0)
                goto fail;

        dropin_dir = dropin_dir ?: CONFIG_DROPIN_DIR;
        r = list_dropins(dropin_dir, &names, diags);
        if (r == -ENOMEM)
                goto fail;
        STRV_FOREACH (n, names) {
                _cleanup_free_ char *p = path_join(dropin_dir, *n);

                if (!p) {
                        r = -ENOMEM;
                        goto fail;
                }
                r = parse_path(ret, p, false, diags);
                if (r < 0)
                        goto fail;
        }
        return 0;

fail:
        config_done(ret);
        return r;
}
