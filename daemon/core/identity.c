/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a persistent override is bound to (identity.h): the most stable identity of a disk, and
 * the drop-in of stablepagesctl set that names it. */
#include <ctype.h>
#include <inttypes.h>

#include "identity.h"
#include "util.h"

/* The order of stable identities, most stable first (identity.h says why). */
static const struct {
        const char *label, *key;
        DeviceKind only; /* the kind of disk it is for, _DEVICE_KIND_MAX for any */
        bool slot;       /* names where the disk is plugged, not the disk */
} stable_keys[] = {
        { "wwn", "ID_WWN_WITH_EXTENSION", _DEVICE_KIND_MAX },
        { "wwn", "ID_WWN", _DEVICE_KIND_MAX },
        { "serial", "ID_SERIAL", _DEVICE_KIND_MAX },
        /* A member of an md array or a partition holding a dm table carries the same UUID
         * in its udev properties: for the array or the dm device only. */
        { "dm", "DM_UUID", DEVICE_KIND_DM },
        { "md", "MD_UUID", DEVICE_KIND_MD },
        { "loop", MATCH_KEY_LOOP_BACKING_FILE, DEVICE_KIND_LOOP },
        { "path", "ID_PATH", _DEVICE_KIND_MAX, .slot = true },
};

/* The index of key in stable_keys, or -1. */
static int stable_key_find(const char *key) {
        for (size_t i = 0; key && i < ELEMENTSOF(stable_keys); i++)
                if (streq(stable_keys[i].key, key))
                        return (int) i;
        return -1;
}

/* True when the glob p matches one string only: no unescaped '*', '?' or '['. */
static bool glob_is_exact(const char *p) {
        for (; p && *p; p++)
                if (*p == '\\' && p[1])
                        p++;
                else if (strchr("*?[", *p))
                        return false;
        return true;
}

bool stable_id_names_disk(const DeviceMatch *m, char **ret_reason) {
        int i = m->kind == MATCH_PROPERTY ? stable_key_find(m->key) : -1;

        if (i >= 0 && !stable_keys[i].slot && glob_is_exact(m->pattern))
                return true;
        if (!ret_reason)
                return false;
        if (m->kind == MATCH_NAME_GLOB)
                *ret_reason =
                        strdup("a kernel name goes to whichever disk takes it (a replug, the next boot, "
                               "the next device added)");
        else if (m->kind == MATCH_DEVNUM)
                *ret_reason = strdup("a device number goes to whichever disk takes it");
        else if (i >= 0 && stable_keys[i].slot)
                *ret_reason = strdup_printf("%s names a slot, which another disk plugged there matches too",
                                            m->key);
        else if (i >= 0)
                *ret_reason = strdup("a pattern can match other disks");
        else
                *ret_reason =
                        strdup_printf("%s names no disk itself (only ID_WWN_WITH_EXTENSION, ID_WWN, "
                                      "ID_SERIAL, DM_UUID, MD_UUID and " MATCH_KEY_LOOP_BACKING_FILE
                                      " do; a filesystem's or partition's UUID goes with a copy of it to "
                                      "another disk)",
                                      m->key ?: "?");
        return false;
}

bool stable_id_match_disk(const DeviceMatch *m, const DeviceIdentity *id) {
        int i = m->kind == MATCH_PROPERTY ? stable_key_find(m->key) : -1;

        return i >= 0 && stable_id_names_disk(m, NULL) &&
               (stable_keys[i].only == _DEVICE_KIND_MAX || stable_keys[i].only == id->kind) &&
               device_match_test(m, id);
}

DeviceIdentity device_identity_of(const DeviceFacts *f) {
        return (DeviceIdentity){ .name = f->name,
                                 .devnum = f->devnum,
                                 .properties = f->properties,
                                 .loop_backing_file =
                                         f->kind == DEVICE_KIND_LOOP ? f->loop_backing_file : NULL,
                                 .kind = f->kind };
}

void stable_id_done(StableId *id) {
        id->value = mfree(id->value);
}

char *stable_id_match_text(const StableId *id) {
        size_t n = strlen(id->value ?: "");
        char *s = malloc((id->key ? strlen(id->key) + 1 : 0) + 2 * n + 1), *w = s;

        if (!s)
                return NULL;
        if (id->key)
                w = stpcpy(stpcpy(w, id->key), "=");
        for (const char *p = id->value ?: ""; *p; p++) {
                if (strchr("*?[]\\", *p))
                        *w++ = '\\';
                *w++ = *p;
        }
        *w = '\0';
        return s;
}

/* FNV-1a, 64 bits: names a drop-in whose identity is too long for a file name. */
static uint64_t hash64(const char *s) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                h = (h ^ *p) * UINT64_C(1099511628211);
        return h;
}

char *stable_id_dropin_name(const StableId *id) {
        const size_t keep = 150; /* escaped bytes of the value kept in the name */
        const char *v = id->value ?: "";
        char *esc = malloc(3 * strlen(v) + 1), *w = esc;

        if (!esc)
                return NULL;
        for (const unsigned char *p = (const unsigned char *) v; *p; p++)
                if (isalnum(*p) || strchr("._:+-", *p))
                        *w++ = (char) *p;
                else
                        w += sprintf(w, "%%%02X", *p);
        *w = '\0';
        char *name = (size_t) (w - esc) <= keep
                             ? strdup_printf(DROPIN_PREFIX "%s-%s.conf", id->label, esc)
                             : strdup_printf(DROPIN_PREFIX "%s-%.*s~%016" PRIx64 ".conf", id->label,
                                             (int) (keep - (esc[keep - 1] == '%'   ? 1
                                                            : esc[keep - 2] == '%' ? 2
                                                                                   : 0)),
                                             esc, hash64(v));
        free(esc);
        return name;
}

char *stable_id_dropin_text(const StableId *id, const char *disk, Setting setting, bool force) {
        _cleanup_free_ char *match = stable_id_match_text(id);
        if (!match)
                return NULL;
        return strdup_printf("# Written by stablepagesctl set %s %s%s%s; removed by stablepagesctl reset.\n"
                             "# Bound to the disk's %s, not to its kernel name.\n"
                             "[Device %s]\nStableWrites=%s\n%s",
                             disk, setting_to_string(setting), force ? " --force" : "",
                             id->key ? "" : " --bind=name",
                             id->key ? "identity" : "kernel name (on purpose)", match,
                             setting_to_string(setting), force ? "Force=yes\n" : "");
}

/* Parses the drop-in for id (through the configuration parser, as the daemon will read it)
 * and checks that its section matches f and no other disk of t. Returns 0, -EINVAL with
 * *ret_reason when it does not, or -ENOMEM. */
static int stable_id_check(const StableId *id, const DeviceFacts *f, const DeviceTable *t,
                           char **ret_reason) {
        _cleanup_(config_done) Config c = {};
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        _cleanup_free_ char *text = stable_id_dropin_text(id, f->name, SETTING_ON, false);
        DeviceIdentity mine = device_identity_of(f);
        int r;

        *ret_reason = NULL;
        if (!text)
                return -ENOMEM;
        r = config_init_defaults(&c);
        if (r >= 0)
                r = config_parse_buffer(&c, "drop-in", text, strlen(text), &diags);
        if (r < 0)
                return r;
        if (diags.n > 0 || c.n_rules != 1 || !device_match_test(&c.rules[0].match, &mine)) {
                *ret_reason = strdup_printf("cannot be written in a [Device] section (%s)",
                                            diags.n > 0 ? diags.items[0].message : "it would not match");
                return *ret_reason ? -EINVAL : -ENOMEM;
        }
        for (size_t i = 0; t && i < t->n; i++) {
                DeviceIdentity other = device_identity_of(&t->devices[i]);
                if (t->devices[i].devnum == f->devnum || !device_match_test(&c.rules[0].match, &other))
                        continue;
                *ret_reason = strdup_printf("is shared by %s", t->devices[i].name);
                return *ret_reason ? -EINVAL : -ENOMEM;
        }
        return 0;
}

int stable_id_pick(const DeviceFacts *f, const DeviceTable *t, StableIdPick how, StableId *ret,
                   char **ret_reason) {
        _cleanup_strv_free_ char **problems = NULL;
        int r;

        if (how == STABLE_ID_BY_NAME) {
                char *v = strdup(f->name);
                if (!v)
                        return -ENOMEM;
                *ret = (StableId){ .label = "name", .value = v };
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(stable_keys); i++) {
                _cleanup_free_ char *problem = NULL;
                const char *v;

                if (stable_keys[i].only != _DEVICE_KIND_MAX && stable_keys[i].only != f->kind)
                        continue;
                v = streq(stable_keys[i].key, MATCH_KEY_LOOP_BACKING_FILE)
                            ? f->loop_backing_file
                            : device_facts_property(f, stable_keys[i].key);
                if (isempty(v))
                        continue;
                if (stable_keys[i].slot && how == STABLE_ID_OF_DISK) {
                        if (strv_extendf(&problems, "%s=%s names the slot, not the disk", stable_keys[i].key,
                                         v) < 0)
                                return -ENOMEM;
                        continue;
                }
                StableId id = { .label = stable_keys[i].label,
                                .key = stable_keys[i].key,
                                .value = strdup(v) };
                if (!id.value)
                        return -ENOMEM;
                r = stable_id_check(&id, f, t, &problem);
                if (r == 0) {
                        *ret = id;
                        return 0;
                }
                stable_id_done(&id);
                if (r != -EINVAL || strv_extendf(&problems, "%s=%s %s", stable_keys[i].key, v, problem) < 0)
                        return -ENOMEM;
        }
        if (ret_reason) {
                _cleanup_free_ char *details = NULL;
                size_t size = 0;
                FILE *m = open_memstream(&details, &size);
                if (!m)
                        return -ENOMEM;
                STRV_FOREACH (p, problems)
                        fprintf(m, "; %s", *p);
                if (fclose(m) != 0)
                        return -ENOMEM;
                *ret_reason =
                        how == STABLE_ID_OF_DISK
                                ? strdup_printf("no identity of the disk itself (none of ID_WWN, ID_SERIAL, "
                                                "DM_UUID, MD_UUID or a loop backing file is usable%s%s)",
                                                problems ? ": " : "", problems ? details + 2 : "")
                                : strdup_printf("no stable identity to bind a persistent override to (none "
                                                "of ID_WWN, ID_SERIAL, DM_UUID, MD_UUID, a loop backing "
                                                "file or ID_PATH is usable%s%s)",
                                                problems ? ": " : "", problems ? details + 2 : "");
                if (!*ret_reason)
                        return -ENOMEM;
        }
        return -ENXIO;
}
