/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <sys/stat.h>

#include "log.h"
#include "state.h"
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

static const char *const effective_origin_table[_EFFECTIVE_ORIGIN_MAX] = {
        [EFFECTIVE_OBSERVED] = "observed",
        [EFFECTIVE_ASSUMED] = "assumed",
        [EFFECTIVE_FILESYSTEM] = "filesystem",
};

/* NULL-safe: a record without an origin field is invalid, not a crash. */
DEFINE_STRING_TABLE_LOOKUP(effective_origin, EffectiveOrigin);

void fputs_escaped(const char *s, FILE *f) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p <= ' ' || *p == '\\' || *p == 0x7f)
                        fprintf(f, "\\%03o", *p);
                else
                        fputc(*p, f);
}

/* Undoes fputs_escaped() in place. Returns -EINVAL for a bad escape or an escaped NUL. */
static int unescape(char *s) {
        char *w = s;
        for (const char *p = s; *p; p++) {
                if (*p != '\\') {
                        *w++ = *p;
                        continue;
                }
                if (p[1] < '0' || p[1] > '3' || p[2] < '0' || p[2] > '7' || p[3] < '0' || p[3] > '7')
                        return -EINVAL;
                char c = (char) ((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                if (c == '\0')
                        return -EINVAL;
                *w++ = c;
                p += 3;
        }
        *w = '\0';
        return 0;
}

void mount_records_done(MountRecords *r) {
        for (size_t i = 0; i < r->n; i++) {
                free(r->items[i].fstype);
                free(r->items[i].target);
        }
        free(r->items);
        *r = (MountRecords){};
}

int mount_records_add(MountRecords *r, const MountRecord *rec) {
        _cleanup_free_ char *fstype = strdup(rec->fstype), *target = strdup(rec->target);
        MountRecord *m;

        if (!fstype || !target)
                return -ENOMEM;
        m = realloc(r->items, sizeof(MountRecord) * (r->n + 1));
        if (!m)
                return -ENOMEM;
        r->items = m;
        m[r->n] = *rec;
        m[r->n].fstype = TAKE_PTR(fstype);
        m[r->n].target = TAKE_PTR(target);
        r->n++;
        return 0;
}

int state_load_mount_records(const char *dir, MountRecords *ret) {
        _cleanup_free_ char *p = strdup_printf("%s/mounts", dir), *data = NULL;
        MountRecords records = {};
        char *save = NULL;
        unsigned line = 0;

        if (!p)
                return -ENOMEM;
        int r = read_full_file(p, 16 << 20, &data, NULL);
        if (r == -ENOENT) {
                *ret = records;
                return 0;
        }
        if (r < 0)
                return r;
        for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                /* fstype and target are as long as they are: escaped, a target of PATH_MAX
                 * bytes takes up to four times as many. */
                _cleanup_free_ char *fstype = NULL, *target = NULL;
                char sb[32], src[32], origin[16];
                unsigned long long since, unique, mntns;
                int id, effective;
                MountRecord rec = {};

                line++;
                if (sscanf(l, "%d %31s %31s %d %15s %llu %llu %llu %ms %ms", &id, sb, src, &effective,
                           origin, &since, &unique, &mntns, &fstype, &target) != 10 ||
                    parse_devnum(sb, &rec.devnum) < 0 || parse_devnum(src, &rec.source_devnum) < 0 ||
                    (effective != 0 && effective != 1) ||
                    (rec.origin = effective_origin_from_string(origin)) < 0 || unescape(fstype) < 0 ||
                    unescape(target) < 0) {
                        log_warning("%s:%u: ignoring malformed mount record", p, line);
                        continue;
                }
                rec.id = id;
                rec.effective = effective;
                rec.since_usec = since;
                rec.unique_id = unique;
                rec.mntns = mntns;
                rec.fstype = fstype;
                rec.target = target;
                if (mount_records_add(&records, &rec) < 0) {
                        mount_records_done(&records);
                        return -ENOMEM;
                }
        }
        *ret = records;
        return 0;
}

int state_save_mount_records(const char *dir, const MountRecords *records) {
        _cleanup_free_ char *p = strdup_printf("%s/mounts", dir), *buf = NULL;
        size_t size = 0;
        char a[32], b[32];
        FILE *f;

        if (!p)
                return -ENOMEM;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < records->n; i++) {
                const MountRecord *m = &records->items[i];
                fprintf(f, "%d %s %s %d %s %llu %llu %llu ", m->id, format_devnum(m->devnum, a),
                        format_devnum(m->source_devnum, b), m->effective,
                        effective_origin_to_string(m->origin), (unsigned long long) m->since_usec,
                        (unsigned long long) m->unique_id, (unsigned long long) m->mntns);
                fputs_escaped(m->fstype, f);
                fputc(' ', f);
                fputs_escaped(m->target, f);
                fputc('\n', f);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        int r = mkdir_p(dir, 0755);
        if (r < 0)
                return r;
        return write_file_atomic(p, buf ?: "", size, 0644);
}
