/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The effective-state records of mounted filesystems under the runtime dir (state.h): their
 * format, loaded and saved atomically. */
#include <inttypes.h>
#include <sys/stat.h>

#include "log.h"
#include "state.h"
#include "util.h"

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
