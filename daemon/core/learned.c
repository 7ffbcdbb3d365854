/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "learned.h"
#include "log.h"
#include "util.h"

#define LEARNED_MAX_SIZE (4U * 1024U * 1024U)

char *learned_key(const DeviceFacts *f) {
        const char *wwn = device_facts_property(f, "ID_WWN"),
                   *serial = device_facts_property(f, "ID_SERIAL");

        if (wwn)
                return strdup_printf("wwn:%s", wwn);
        if (serial)
                return strdup_printf("serial:%s", serial);
        /* A loop device is its backing file: the number is whatever was free. */
        if (f->kind == DEVICE_KIND_LOOP && !isempty(f->loop_backing_file))
                return strdup_printf("loop:%s", f->loop_backing_file);
        return strdup_printf("name:%s", f->name);
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

/* Parses one line; returns 0, -EBADMSG or -ENOMEM. */
static int parse_line(char *line, LearnedRecord *ret) {
        char *f[8];
        size_t n = 0;

        for (char *p = line; n < 8; n++) {
                f[n] = p;
                char *tab = n < 7 ? strchr(p, '\t') : NULL;
                if (n < 7 && !tab)
                        return -EBADMSG;
                if (tab) {
                        *tab = '\0';
                        p = tab + 1;
                }
        }
        long long since, p99, count, budget;
        if (isempty(f[0]) || !device_name_is_valid(f[1]) || (!streq(f[2], "off") && !streq(f[2], "on")) ||
            parse_int_range(f[3], 0, INT64_MAX, &since) < 0 ||
            parse_int_range(f[4], 0, INT64_MAX, &p99) < 0 ||
            parse_int_range(f[5], 0, INT64_MAX, &count) < 0 ||
            parse_int_range(f[6], 0, INT64_MAX, &budget) < 0)
                return -EBADMSG;
        *ret = (LearnedRecord){ .key = f[0],
                                .disk = f[1],
                                .learned = streq(f[2], "off") ? LEARNED_OFF : LEARNED_ON,
                                .since_usec = (uint64_t) since,
                                .p99_usec = (uint64_t) p99,
                                .count = (uint64_t) count,
                                .budget_usec = (uint64_t) budget,
                                .reason = f[7] };
        return 0;
}

int learned_load(const char *dir, LearnedRecords *ret) {
        _cleanup_free_ char *path = path_join(dir, "learned"), *data = NULL;
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
                if (k >= 0)
                        k = learned_set(&r, &rec);
                if (k < 0) {
                        learned_records_done(&r);
                        return k;
                }
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
        fputs("# Written by stablepagesd: what Policy=balanced learned from measured stalls.\n"
              "# key\tdisk\tstate\tsince_usec\tp99_usec\twaits\tbudget_usec\treason\n",
              f);
        for (size_t i = 0; i < r->n; i++) {
                const LearnedRecord *rec = &r->items[i];
                fprintf(f, "%s\t%s\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\n", rec->key,
                        rec->disk, learned_to_string(rec->learned) ?: "on", rec->since_usec, rec->p99_usec,
                        rec->count, rec->budget_usec, rec->reason ?: "");
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        k = mkdir_p(dir, 0755);
        if (k < 0)
                return k;
        return write_file_atomic(path, buf, size, 0644);
}
