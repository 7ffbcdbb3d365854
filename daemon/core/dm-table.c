/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A device-mapper table reduced to what decides stable writes (dm-table.h): read from the kernel
 * (DM_TABLE_STATUS) or from `dmsetup table` lines, and carried as udev properties. */
#include <ctype.h>
#include <fcntl.h>
#include <linux/dm-ioctl.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>

#include "dm-table.h"
#include "util.h"

static void dm_target_done(DmTarget *t) {
        free(t->type);
        free(t->hash);
        free(t->crypt_integrity);
        free(t->raid_level);
        *t = (DmTarget){};
}

void dm_table_done(DmTable *t) {
        for (size_t i = 0; i < t->n; i++)
                dm_target_done(&t->targets[i]);
        free(t->targets);
        *t = (DmTable){};
}

/* A copy of the n bytes at s that is safe as a udev property word: anything but
 * [A-Za-z0-9_.()+-] becomes '_'. */
static char *word_dup(const char *s, size_t n) {
        char *w = strndup(s, n);
        for (char *p = w; p && *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("_.()+-", *p))
                        *p = '_';
        return w;
}

/* The algorithm of an "internal_hash:ALG[:KEY]" or "integrity:SIZE:TYPE" argument: the
 * field after skip colons, up to the next colon. The key after it is never copied. */
static char *field_dup(const char *arg, unsigned skip) {
        const char *p = arg;
        for (unsigned i = 0; i < skip; i++) {
                p = strchr(p, ':');
                if (!p)
                        return strdup("");
                p++;
        }
        return word_dup(p, strcspn(p, ":"));
}

static bool streq_ptr(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

static bool dm_target_equal(const DmTarget *a, const DmTarget *b) {
        return streq(a->type, b->type) && a->mode == b->mode && streq_ptr(a->hash, b->hash) &&
               streq_ptr(a->crypt_integrity, b->crypt_integrity) && streq_ptr(a->raid_level, b->raid_level);
}

/* Appends t (taking its strings) unless an equal target is there already. */
static int dm_table_push(DmTable *t, DmTarget *target) {
        for (size_t i = 0; i < t->n; i++)
                if (dm_target_equal(&t->targets[i], target)) {
                        dm_target_done(target);
                        return 0;
                }
        DmTarget *m = realloc(t->targets, sizeof(DmTarget) * (t->n + 1));
        if (!m) {
                dm_target_done(target);
                return -ENOMEM;
        }
        t->targets = m;
        m[t->n++] = *target;
        *target = (DmTarget){};
        return 0;
}

/* The idx-th space-separated word of params: start in *ret, length returned (0: none). */
static size_t nth_word(const char *params, unsigned idx, const char **ret) {
        const char *p = params;
        for (unsigned i = 0;; i++) {
                p += strspn(p, " ");
                size_t n = strcspn(p, " ");
                if (n == 0)
                        return 0;
                if (i == idx) {
                        *ret = p;
                        return n;
                }
                p += n;
        }
}

/* The first word from the idx-th on that starts with prefix and has more after it: its
 * start in *ret, its length returned (0: none). */
static size_t find_option(const char *params, unsigned idx, const char *prefix, const char **ret) {
        size_t n, len = strlen(prefix);
        for (const char *w; (n = nth_word(params, idx, &w)) > 0; idx++)
                if (n > len && strneq(w, prefix, len)) {
                        *ret = w;
                        return n;
                }
        return 0;
}

/* Fills the integrity facts: "<dev> <start> <tag_size> <mode> <#opts> <opt>..."
 * (dm_integrity_status(), STATUSTYPE_TABLE); the hash is "internal_hash:ALG[:KEY]". */
static int parse_integrity(const char *params, DmTarget *t) {
        const char *w;
        size_t n = nth_word(params, 3, &w);

        t->mode = n == 1 && isupper((unsigned char) w[0]) ? w[0] : '?';
        if ((n = find_option(params, 5, "internal_hash:", &w)) == 0)
                return 0;
        _cleanup_free_ char *arg = strndup(w, n);
        t->hash = arg ? field_dup(arg, 1) : NULL;
        return t->hash ? 0 : -ENOMEM;
}

/* Fills the crypt facts: "<cipher> <key> <iv_offset> <dev> <start> [<#feat> <feat>...]"
 * (crypt_status()); the integrity feature is "integrity:<bytes>:<type>". The key (word 1)
 * is skipped. */
static int parse_crypt(const char *params, DmTarget *t) {
        const char *w;
        size_t n = find_option(params, 6, "integrity:", &w);

        if (n == 0)
                return 0;
        _cleanup_free_ char *arg = strndup(w, n);
        t->crypt_integrity = arg ? field_dup(arg, 2) : NULL;
        return t->crypt_integrity ? 0 : -ENOMEM;
}

int dm_table_add(DmTable *t, const char *type, const char *params) {
        DmTarget target = { .type = word_dup(type, strlen(type)) };
        const char *w;
        size_t n;
        int r = 0;

        if (!target.type)
                return -ENOMEM;
        if (streq(type, "integrity"))
                r = parse_integrity(params, &target);
        else if (streq(type, "crypt"))
                r = parse_crypt(params, &target);
        else if (streq(type, "raid") && (n = nth_word(params, 0, &w)) > 0 &&
                 !(target.raid_level = word_dup(w, n)))
                r = -ENOMEM;
        if (r < 0) {
                dm_target_done(&target);
                return r;
        }
        return dm_table_push(t, &target);
}

int dm_table_from_lines(char *const *lines, DmTable *ret) {
        DmTable t = {};

        STRV_FOREACH (l, lines) {
                const char *type, *params;
                size_t n = nth_word(*l, 2, &type);
                if (n == 0 || n >= DM_MAX_TYPE_NAME) {
                        dm_table_done(&t);
                        return -EINVAL;
                }
                _cleanup_free_ char *name = strndup(type, n);
                params = type + n + strspn(type + n, " ");
                int r = name ? dm_table_add(&t, name, params) : -ENOMEM;
                if (r < 0) {
                        dm_table_done(&t);
                        return r;
                }
                t.count++;
        }
        *ret = t;
        return 0;
}

/* The kernel's encoding of a dev_t in struct dm_ioctl (huge_encode_dev()). */
static uint64_t dm_encode_dev(dev_t d) {
        uint64_t ma = major(d), mi = minor(d);
        return (mi & 0xff) | (ma << 8) | ((mi & ~UINT64_C(0xff)) << 12);
}

/* Parses the dm_target_spec records the kernel returned (retrieve_status(): each spec's
 * "next" is an offset from the start of the data area). */
static int parse_specs(const char *data, size_t size, uint32_t count, DmTable *ret) {
        DmTable t = {};
        size_t off = 0;

        for (uint32_t i = 0; i < count; i++) {
                struct dm_target_spec spec;
                if (off > size || size - off < sizeof spec) {
                        dm_table_done(&t);
                        return -EBADMSG;
                }
                memcpy(&spec, data + off, sizeof spec);
                const char *params = data + off + sizeof spec;
                size_t room = size - off - sizeof spec;
                if (!memchr(params, '\0', room) ||
                    !memchr(spec.target_type, '\0', sizeof spec.target_type)) {
                        dm_table_done(&t);
                        return -EBADMSG;
                }
                int r = dm_table_add(&t, spec.target_type, params);
                if (r < 0) {
                        dm_table_done(&t);
                        return r;
                }
                t.count++;
                if (i + 1 < count && spec.next <= off) {
                        dm_table_done(&t);
                        return -EBADMSG;
                }
                off = spec.next;
        }
        *ret = t;
        return 0;
}

int dm_table_read_kernel(dev_t devnum, DmTable *ret) {
        _cleanup_close_ int fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
        int r;

        if (fd < 0)
                return -errno;
        for (size_t size = 16 * 1024; size <= 16 * 1024 * 1024; size *= 4) {
                struct dm_ioctl *io = calloc(1, size);
                if (!io)
                        return -ENOMEM;
                *io = (struct dm_ioctl){
                        .version = { DM_VERSION_MAJOR, 0, 0 },
                        .data_size = (uint32_t) size,
                        .data_start = sizeof(struct dm_ioctl),
                        /* The table holds dm-crypt's key: let the kernel wipe its buffers. */
                        .flags = DM_STATUS_TABLE_FLAG | DM_SECURE_DATA_FLAG,
                        .dev = dm_encode_dev(devnum),
                };
                if (ioctl(fd, DM_TABLE_STATUS, io) < 0)
                        r = -errno;
                else if (io->flags & DM_BUFFER_FULL_FLAG)
                        r = -ENOBUFS;
                else if (io->data_start < sizeof(struct dm_ioctl) || io->data_size > size ||
                         io->data_start > io->data_size)
                        r = -EBADMSG;
                else
                        r = parse_specs((const char *) io + io->data_start, io->data_size - io->data_start,
                                        io->target_count, ret);
                /* Never leave the key behind in freed memory. */
                explicit_bzero(io, size);
                free(io);
                if (r != -ENOBUFS)
                        return r;
        }
        return -ENOBUFS;
}

int dm_table_reader_kernel(dev_t devnum, void *userdata, DmTable *ret) {
        return dm_table_read_kernel(devnum, ret);
}

char *dm_target_to_string(const DmTarget *t) {
        char mode[2] = { t->mode, '\0' };
        return strdup_printf("%s%s%s%s%s%s%s%s%s", t->type, t->mode ? ",mode=" : "", t->mode ? mode : "",
                             t->hash ? ",hash=" : "", t->hash ?: "", t->crypt_integrity ? ",integrity=" : "",
                             t->crypt_integrity ?: "", t->raid_level ? ",level=" : "", t->raid_level ?: "");
}

int dm_table_to_properties(const DmTable *t, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *targets = strdup("");

        if (!targets || strv_extendf(&l, "%s=%u", DM_TABLE_PROPERTY, t->count) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++) {
                _cleanup_free_ char *s = dm_target_to_string(&t->targets[i]);
                char *joined = s ? strdup_printf("%s%s%s", targets, i ? " " : "", s) : NULL;
                if (!joined)
                        return -ENOMEM;
                free(targets);
                targets = joined;
        }
        if (t->n > 0 && strv_extendf(&l, "%s=%s", DM_TARGETS_PROPERTY, targets) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

/* Parses one "type[,key=value]..." word of n bytes into *ret. */
static int parse_target_word(const char *word, size_t n, DmTarget *ret) {
        DmTarget t = {};
        const char *p = word, *end = word + n;

        for (bool first = true; p < end; first = false) {
                size_t len = strcspn(p, ",");
                len = MIN(len, (size_t) (end - p));
                const char *eq = memchr(p, '=', len);
                char **field = NULL;

                if (first) {
                        if (len == 0 || eq)
                                goto invalid;
                        field = &t.type;
                } else if (!eq)
                        goto invalid;
                else if ((size_t) (eq - p) == 4 && strneq(p, "mode", 4)) {
                        if (len != 6 || (!isupper((unsigned char) eq[1]) && eq[1] != '?'))
                                goto invalid;
                        t.mode = eq[1];
                } else if ((size_t) (eq - p) == 4 && strneq(p, "hash", 4))
                        field = &t.hash;
                else if ((size_t) (eq - p) == 9 && strneq(p, "integrity", 9))
                        field = &t.crypt_integrity;
                else if ((size_t) (eq - p) == 5 && strneq(p, "level", 5))
                        field = &t.raid_level;
                /* other keys: written by a newer version, ignored */
                if (field) {
                        const char *v = first ? p : eq + 1;
                        free(*field);
                        *field = word_dup(v, (size_t) (p + len - v));
                        if (!*field) {
                                dm_target_done(&t);
                                return -ENOMEM;
                        }
                }
                p += len + 1;
        }
        if (!t.type)
                goto invalid;
        *ret = t;
        return 0;
invalid:
        dm_target_done(&t);
        return -EINVAL;
}

int dm_table_from_properties(char *const *properties, DmTable *ret) {
        const char *count = strv_find_value(properties, DM_TABLE_PROPERTY);
        const char *targets = strv_find_value(properties, DM_TARGETS_PROPERTY) ?: "";
        DmTable t = {};
        long long c;
        int r;

        if (!count)
                return -ENODATA;
        if (parse_int_range(count, 0, UINT32_MAX, &c) < 0)
                return -EINVAL;
        t.count = (unsigned) c;
        for (const char *p = targets; *p;) {
                p += strspn(p, " ");
                size_t n = strcspn(p, " ");
                if (n == 0)
                        break;
                DmTarget target;
                r = parse_target_word(p, n, &target);
                if (r >= 0)
                        r = dm_table_push(&t, &target);
                if (r < 0) {
                        dm_table_done(&t);
                        return r;
                }
                p += n;
        }
        if ((t.count == 0) != (t.n == 0) || t.n > t.count) {
                dm_table_done(&t);
                return -EINVAL;
        }
        *ret = t;
        return 0;
}
