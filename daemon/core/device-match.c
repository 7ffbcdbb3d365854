/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* [Device MATCH] sections: parsing a match, testing it against a disk, and merging the
 * settings of the sections that match a disk (later wins). Pure. */

#include <ctype.h>
#include <fnmatch.h>

#include "config.h"
#include "identity.h"
#include "util.h"

void device_match_done(DeviceMatch *m) {
        if (!m)
                return;
        m->pattern = mfree(m->pattern);
        m->key = mfree(m->key);
}

/* Characters of kernel block device names (see device_name_is_valid()) plus fnmatch()
 * syntax. */
bool device_name_glob_is_valid(const char *s) {
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

int device_match_parse(const char *text, DeviceMatch *ret, char **ret_reason) {
        _cleanup_free_ char *copy = NULL, *key = NULL, *pattern = NULL;
        char *s, *eq;
        dev_t devnum;

#define FAIL(...)                                                                                           \
        do {                                                                                                \
                if (ret_reason)                                                                             \
                        *ret_reason = strdup_printf(__VA_ARGS__);                                           \
                return -EINVAL;                                                                             \
        } while (0)

        if (ret_reason)
                *ret_reason = NULL;
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
        if (!device_name_glob_is_valid(s))
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
                /* Force=yes only where the rule names this disk itself (identity.h). */
                if (r->force == 0 || (r->force > 0 && stable_id_match_disk(&r->match, id))) {
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
