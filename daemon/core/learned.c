/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The decisions the adaptive policy learned, by disk, and their file under the state dir
 * (learned.h). */
#include <inttypes.h>
#include <stdio.h>

#include "identity.h"
#include "learned.h"
#include "log.h"
#include "util.h"

#define LEARNED_MAX_SIZE (4U * 1024U * 1024U)

int learned_key(const DeviceFacts *f, const DeviceTable *t, const char *boot_id, char **ret) {
        _cleanup_(stable_id_done) StableId id = {};
        int r = stable_id_pick(f, t, STABLE_ID_OF_DISK, &id, NULL);

        if (r >= 0)
                *ret = strdup_printf("%s:%s", id.label, id.value);
        else if (r != -ENXIO)
                return r;
        else if (f->diskseq == 0 || isempty(boot_id))
                return -ENXIO;
        else
                /* The diskseq is never reused within a boot, and only within it. */
                *ret = strdup_printf("boot:%s:diskseq:%" PRIu64, boot_id, f->diskseq);
        return *ret ? 0 : -ENOMEM;
}

bool learned_key_is_boot_local(const char *key) {
        return key && startswith(key, "boot:");
}

/* Whether the record keyed key is one of another boot (or of a boot when boot_id is unknown). */
static bool of_another_boot(const char *key, const char *boot_id) {
        size_t n = strlen(boot_id ?: "");

        return startswith(key, "boot:") &&
               (n == 0 || strncmp(key + 5, boot_id, n) != 0 || !startswith(key + 5 + n, ":diskseq:"));
}

/* Whether a record of r could be f's: one whose value f carries (a property, its backing file,
 * its diskseq), so that working out f's key is worth it. */
static bool could_be_of(const LearnedRecords *r, const DeviceFacts *f, const char *boot_id) {
        char seq[24];

        snprintf(seq, sizeof seq, "%" PRIu64, f->diskseq);
        for (size_t i = 0; i < r->n; i++) {
                const char *key = r->items[i].key, *v = strchr(key, ':');

                if (startswith(key, "boot:")) {
                        if (f->diskseq != 0 && !isempty(boot_id) && !of_another_boot(key, boot_id) &&
                            streq(key + 5 + strlen(boot_id) + strlen(":diskseq:"), seq))
                                return true;
                        continue;
                }
                if (!v++)
                        continue;
                if (f->loop_backing_file && streq(f->loop_backing_file, v))
                        return true;
                STRV_FOREACH (p, f->properties) {
                        const char *eq = strchr(*p, '=');
                        if (eq && streq(eq + 1, v))
                                return true;
                }
        }
        return false;
}

int learned_find_disk(const LearnedRecords *r, const DeviceFacts *f, const DeviceTable *t,
                      const char *boot_id, const LearnedRecord **ret, char **ret_key) {
        int k;

        *ret = NULL;
        *ret_key = NULL;
        if (!could_be_of(r, f, boot_id))
                return 0;
        k = learned_key(f, t, boot_id, ret_key);
        if (k < 0 && k != -ENXIO)
                return k;
        *ret = learned_find(r, *ret_key);
        return 0;
}

static void record_done(LearnedRecord *rec) {
        free(rec->key);
        free(rec->disk);
        free(rec->reason);
}

void learned_records_done(LearnedRecords *r) {
        for (size_t i = 0; i < r->n; i++)
                record_done(&r->items[i]);
        free(r->items);
        *r = (LearnedRecords){};
}

const LearnedRecord *learned_find(const LearnedRecords *r, const char *key) {
        for (size_t i = 0; key && i < r->n; i++)
                if (streq(r->items[i].key, key))
                        return &r->items[i];
        return NULL;
}

/* A copy of s with tabs and line breaks made spaces: one field of one line. */
static char *field_dup(const char *s) {
        char *c = strdup(s ?: "");
        for (char *p = c; p && *p; p++)
                if (*p == '\t' || *p == '\n' || *p == '\r')
                        *p = ' ';
        return c;
}

int learned_set(LearnedRecords *r, const LearnedRecord *rec) {
        LearnedRecord copy = { .learned = rec->learned,
                               .since_usec = rec->since_usec,
                               .p99_usec = rec->p99_usec,
                               .count = rec->count,
                               .budget_usec = rec->budget_usec,
                               .has_mirror = rec->has_mirror,
                               .mirror = rec->mirror,
                               .key = field_dup(rec->key),
                               .disk = field_dup(rec->disk),
                               .reason = field_dup(rec->reason) };

        if (!copy.key || !copy.disk || !copy.reason) {
                record_done(&copy);
                return -ENOMEM;
        }
        for (size_t i = 0; i < r->n; i++)
                if (streq(r->items[i].key, copy.key)) {
                        record_done(&r->items[i]);
                        r->items[i] = copy;
                        return 0;
                }
        LearnedRecord *items = realloc(r->items, sizeof(LearnedRecord) * (r->n + 1));
        if (!items) {
                record_done(&copy);
                return -ENOMEM;
        }
        r->items = items;
        r->items[r->n++] = copy;
        return 0;
}

#define LEARNED_FIELDS 8
#define MIRROR_FIELDS 6

/* Parses one line; returns 0, -EBADMSG or -ENOMEM. */
static int parse_line(char *line, LearnedRecord *ret) {
        char *f[LEARNED_FIELDS + MIRROR_FIELDS];
        size_t n = 0;

        for (char *p = line; p && n < ELEMENTSOF(f); n++) {
                f[n] = p;
                p = strchr(p, '\t');
                if (p)
                        *p++ = '\0';
        }
        if (n != LEARNED_FIELDS && n != LEARNED_FIELDS + MIRROR_FIELDS)
                return -EBADMSG;
        long long since, p99, count, budget, m[MIRROR_FIELDS - 1] = {};
        if (isempty(f[0]) || !device_name_is_valid(f[1]) ||
            (!streq(f[2], "off") && !streq(f[2], "on") && !streq(f[2], "none")) ||
            parse_int_range(f[3], 0, INT64_MAX, &since) < 0 ||
            parse_int_range(f[4], 0, INT64_MAX, &p99) < 0 ||
            parse_int_range(f[5], 0, INT64_MAX, &count) < 0 ||
            parse_int_range(f[6], 0, INT64_MAX, &budget) < 0)
                return -EBADMSG;
        if (n > LEARNED_FIELDS) {
                if (!streq(f[LEARNED_FIELDS], "mirror"))
                        return -EBADMSG;
                for (size_t i = 0; i < MIRROR_FIELDS - 1; i++)
                        if (parse_int_range(f[LEARNED_FIELDS + 1 + i], 0, INT64_MAX, &m[i]) < 0)
                                return -EBADMSG;
                if (m[4] > 1)
                        return -EBADMSG;
        } else if (streq(f[2], "none"))
                return -EBADMSG;
        *ret = (LearnedRecord){ .key = f[0],
                                .disk = f[1],
                                .learned = streq(f[2], "off")  ? LEARNED_OFF
                                           : streq(f[2], "on") ? LEARNED_ON
                                                               : LEARNED_NONE,
                                .since_usec = (uint64_t) since,
                                .p99_usec = (uint64_t) p99,
                                .count = (uint64_t) count,
                                .budget_usec = (uint64_t) budget,
                                .reason = f[7],
                                .has_mirror = n > LEARNED_FIELDS,
                                .mirror = { .shadow_pages = (uint64_t) m[0],
                                            .direct_writes = (uint64_t) m[1],
                                            .mismatch_cnt = (uint64_t) m[2],
                                            .check_usec = (uint64_t) m[3],
                                            .diverged = m[4] == 1 } };
        return 0;
}

/* Says, in one line, that the n records keyed by a kernel name (keys) are not applied. */
static int log_by_name(const char *path, char *const *keys, size_t n) {
        _cleanup_free_ char *names = NULL;
        size_t size = 0;
        FILE *m;

        if (n == 0)
                return 0;
        m = open_memstream(&names, &size);
        if (!m)
                return -ENOMEM;
        for (size_t i = 0; i < n && i < 8; i++)
                fprintf(m, "%s%s", i > 0 ? ", " : "", keys[i]);
        if (n > 8)
                fprintf(m, " and %zu more", n - 8);
        if (fclose(m) != 0)
                return -ENOMEM;
        log_notice("%s: ignoring what was learned for %s: a kernel name is not a disk's identity (another "
                   "disk may have that name now); dropped at the next save.",
                   path, names);
        return 0;
}

int learned_load(const char *dir, const char *boot_id, LearnedRecords *ret) {
        _cleanup_free_ char *path = path_join(dir, "learned"), *data = NULL;
        _cleanup_strv_free_ char **by_name = NULL;
        size_t n_by_name = 0;
        LearnedRecords r = {};
        unsigned lineno = 0;
        int k;

        if (!path)
                return -ENOMEM;
        k = read_full_file(path, LEARNED_MAX_SIZE, &data, NULL);
        if (k == -ENOENT) {
                *ret = r;
                return 0;
        }
        if (k < 0)
                return k;
        for (char *line = data, *next; line && *line; line = next) {
                LearnedRecord rec;
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                lineno++;
                if (*line == '#' || isempty(line))
                        continue;
                k = parse_line(line, &rec);
                if (k == -EBADMSG) {
                        log_warning("%s:%u: malformed learned decision, ignoring it.", path, lineno);
                        continue;
                }
                if (k >= 0 && startswith(rec.key, "name:"))
                        k = strv_extend_with_size(&by_name, &n_by_name, rec.key);
                else if (k >= 0 && of_another_boot(rec.key, boot_id))
                        log_debug("%s:%u: %s was learned in another boot, dropping it.", path, lineno,
                                  rec.key);
                else if (k >= 0)
                        k = learned_set(&r, &rec);
                if (k < 0) {
                        learned_records_done(&r);
                        return k;
                }
        }
        k = log_by_name(path, by_name, n_by_name);
        if (k < 0) {
                learned_records_done(&r);
                return k;
        }
        *ret = r;
        return 0;
}

int learned_save(const char *dir, const LearnedRecords *r) {
        _cleanup_free_ char *path = path_join(dir, "learned"), *buf = NULL;
        size_t size = 0;
        FILE *f;
        int k;

        if (!path)
                return -ENOMEM;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fputs("# Written by stablepagesd: what Policy=balanced learned from measured stalls, and the\n"
              "# figures of mirrors.\n"
              "# key\tdisk\tstate\tsince_usec\tp99_usec\twaits\tbudget_usec\treason"
              "[\tmirror\tshadow_pages\tdirect_writes\tmismatch_cnt\tcheck_usec\tdiverged]\n",
              f);
        for (size_t i = 0; i < r->n; i++) {
                const LearnedRecord *rec = &r->items[i];
                fprintf(f, "%s\t%s\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s", rec->key,
                        rec->disk, learned_to_string(rec->learned) ?: "none", rec->since_usec, rec->p99_usec,
                        rec->count, rec->budget_usec, rec->reason ?: "");
                if (rec->has_mirror)
                        fprintf(f, "\tmirror\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%d",
                                rec->mirror.shadow_pages, rec->mirror.direct_writes,
                                rec->mirror.mismatch_cnt, rec->mirror.check_usec, rec->mirror.diverged);
                fputc('\n', f);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        k = mkdir_p(dir, 0755);
        if (k < 0)
                return k;
        return write_file_atomic(path, buf, size, 0644);
}
