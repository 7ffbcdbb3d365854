/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration's line reader and its diagnostics, and the loading of the main file
 * and the drop-ins. inih splits "Key=value" lines; everything else is done by
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
 *   values with a comment character after whitespace, so neither applies to what a file
 *   says (continuation lines carry only the pieces of long lines, below);
 * - inih reads a line into a buffer of INI_MAX_LINE bytes (200 in Debian's build), short for
 *   a path: a "Key=value" line that does not fit is handed to inih in pieces, "Key=" and the
 *   first piece, then the others as continuation lines (" piece", which the multi-line values
 *   of Debian's build pass to the handler under the same key), cut where inih's stripping of
 *   whitespace and comments loses nothing; the handler joins them and checks that the whole
 *   value came back. Lines are at most CONFIG_LINE_MAX bytes.
 *
 * So inih only ever sees "\n", a validated "Key=value\n", or the pieces of one. The keys and
 * sections themselves are config.c's item table. */

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <ini.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "config-reader.h"
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

void config_diag(ParseState *s, DiagLevel level, unsigned line, const char *format, ...) {
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

/* The key of a rejected line ("  Key = ..." with a valid key name of at most size - 1
 * bytes) in buf, or NULL when it has none. */
static const char *rejected_line_key(const char *line, size_t len, char *buf, size_t size) {
        size_t i = 0, k = 0;

        while (i < len && isspace((unsigned char) line[i]))
                i++;
        while (i < len && k + 1 < size && (isalnum((unsigned char) line[i]) || strchr("_.-", line[i])))
                buf[k++] = line[i++];
        buf[k] = '\0';
        while (i < len && isspace((unsigned char) line[i]))
                i++;
        return k > 0 && i < len && line[i] == '=' ? buf : NULL;
}

/* Position of an inline comment: '#' or ';' after whitespace, or NULL. */
static const char *find_inline_comment(const char *v) {
        for (const char *p = v; *p; p++)
                if ((*p == '#' || *p == ';') && p > v && isspace((unsigned char) p[-1]))
                        return p;
        return NULL;
}

/* Whether a value may be cut before position i (0 < i < strlen): inih strips the whitespace
 * around each piece and takes a continuation line that starts with '#' or ';' for a comment. */
static bool split_point_ok(const char *v, size_t i) {
        return !isspace((unsigned char) v[i - 1]) && !isspace((unsigned char) v[i]) && !strchr("#;", v[i]);
}

/* Writes the next piece of s->split, at most max bytes, as "prefix" "piece" "\n" into str (num
 * bytes). When the value cannot be cut within max bytes, reports it, forgets the line and
 * writes "\n". */
static void split_next_piece(ParseState *s, char *str, int num, const char *prefix, size_t max) {
        SplitLine *l = &s->split;
        size_t end = MIN(l->pos + max, l->len);

        while (end < l->len && end > l->pos && !split_point_ok(l->value, end))
                end--;
        if (end == l->pos) {
                l->active = false;
                diag_error(s,
                           "%s=: the value has a run of blanks or of '#' and ';' too long for the parser "
                           "to take in pieces; ignoring this line",
                           l->name);
                strcpy(str, "\n");
                return;
        }
        snprintf(str, (size_t) num, "%s%.*s\n", prefix, (int) (end - l->pos), l->value + l->pos);
        l->pos = end;
}

/* Starts handing the line "name=value" (name shorter than s->split.name) to inih in pieces
 * (see the top of this file). */
static void split_start(ParseState *s, char *str, int num, const char *name, const char *value) {
        SplitLine *l = &s->split;
        char prefix[sizeof l->name + 1];

        *l = (SplitLine){ .active = true, .len = strlen(value) };
        strcpy(l->name, name);
        memcpy(l->value, value, l->len + 1);
        snprintf(prefix, sizeof prefix, "%s=", name);
        /* "name=", the piece, "\n\0" (num is INI_MAX_LINE, 200, far more than "name=" needs) */
        split_next_piece(s, str, num, prefix,
                         (size_t) num > strlen(prefix) + 2 ? (size_t) num - strlen(prefix) - 2 : 0);
}

/* Reports a split line whose pieces did not all come back from inih (a build of inih without
 * multi-line values), and forgets it. */
static void split_lost(ParseState *s) {
        if (!s->split.active)
                return;
        s->split.active = false;
        diag_error(s,
                   "%s=: the line is longer than the parser's buffer and its pieces did not come back "
                   "whole (inih built without multi-line values?); ignoring this line",
                   s->split.name);
}

/* The next line of the data, counted, in *ret_line and *ret_len: without its "\n", "\r" and, on
 * the first line, a UTF-8 byte order mark. */
static void next_line(ParseState *s, const char **ret_line, size_t *ret_len) {
        const char *line = s->data + s->pos, *nl;
        size_t len;

        nl = memchr(line, '\n', s->size - s->pos);
        len = nl ? (size_t) (nl - line) : s->size - s->pos;
        s->pos += len + (nl ? 1 : 0);
        s->line++;

        if (len > 0 && line[len - 1] == '\r')
                len--;
        if (s->line == 1 && len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {
                line += 3; /* UTF-8 byte order mark */
                len -= 3;
        }
        *ret_line = line;
        *ret_len = len;
}

/* A line line_check_bytes() refused (and reported): a broken section header ignores its section,
 * so that its keys do not land in the previous one; a key is reported unreadable. */
static void unreadable_line(ParseState *s, const char *line, size_t len) {
        char key[64];
        size_t i = 0;

        while (i < len && isspace((unsigned char) line[i]))
                i++;
        if (i < len && line[i] == '[')
                s->section = SECTION_IGNORED;
        else if (rejected_line_key(line, len, key, sizeof key))
                config_handle_unreadable_item(s, key);
}

/* Splits the stripped line t at its '=' into *ret_name and *ret_value (both stripped). Returns
 * false, with the diagnostic, when t is no valid "Key=value" in a section that takes keys. */
static bool split_key_value(ParseState *s, char *t, char **ret_name, char **ret_value) {
        char *eq = strchr(t, '='), *name, *value;

        if (!eq) {
                diag_error(s,
                           "expected \"Key=value\", a [Section] header or a comment, got "
                           "\"%s\"; ignoring this line",
                           t);
                return false;
        }
        *eq = '\0';
        name = strstrip(t);
        value = strstrip(eq + 1);
        if (isempty(name)) {
                diag_error(s, "missing key name before '='; ignoring this line");
                return false;
        }
        if (!key_name_is_valid(name)) {
                diag_error(s, "invalid key name \"%s\"; ignoring this line", name);
                return false;
        }
        if (find_inline_comment(value)) {
                diag_error(s,
                           "%s=: inline comments are not supported (\"%s\"); put the comment "
                           "on a line of its own; ignoring this line",
                           name, find_inline_comment(value));
                return false;
        }

        switch (s->section) {
        case SECTION_NONE:
                diag_error(s, "%s= outside of any section; ignoring this line", name);
                return false;
        case SECTION_IGNORED:
                return false; /* reported at the section header */
        default:
                break;
        }
        *ret_name = name;
        *ret_value = value;
        return true;
}

/* The inih reader: hands inih the next line, or "\n" when the line is bad or is handled
 * here (section headers, comments, lines in ignored sections), or the next piece of a long
 * line. See the top of this file. */
static char *config_reader(char *str, int num, void *stream) {
        ParseState *s = stream;
        const char *line;
        size_t len;
        char buf[CONFIG_LINE_MAX + 1];
        char *t, *name, *value;

        if (s->error < 0 || num < 4)
                return NULL;
        if (s->split.active && s->split.pos < s->split.len) {
                split_next_piece(s, str, num, " ", (size_t) num - 3); /* " piece\n\0" */
                return str;
        }
        split_lost(s);
        if (s->pos >= s->size)
                return NULL;

        next_line(s, &line, &len);
        strcpy(str, "\n");
        if (!line_check_bytes(s, line, len, CONFIG_LINE_MAX)) {
                unreadable_line(s, line, len);
                return str;
        }

        memcpy(buf, line, len);
        buf[len] = '\0';
        t = strstrip(buf);

        if (*t == '\0' || *t == '#' || *t == ';')
                return str;

        if (*t == '[') {
                config_section_header(s, t);
                return str;
        }

        if (!split_key_value(s, t, &name, &value))
                return str;

        if (strlen(name) >= sizeof s->split.name) {
                /* No key of the table is that long: reported as unknown, inih has nothing to split. */
                (void) config_handle_item(s, NULL, name, value);
                return str;
        }
        /* "name=value\n\0", or in pieces when that does not fit */
        if (snprintf(str, (size_t) num, "%s=%s\n", name, value) >= num)
                split_start(s, str, num, name, value);
        return str;
}

/* The inih handler: a line, or a piece of a split line, joined until the line is whole. */
static int config_handler(void *user, const char *section, const char *name, const char *value) {
        ParseState *s = user;
        SplitLine *l = &s->split;
        size_t n = strlen(value ?: "");

        if (!l->active)
                return config_handle_item(user, section, name, value);
        if (l->joined_len + n > l->len) {
                split_lost(s);
                return 1;
        }
        memcpy(l->joined + l->joined_len, value, n);
        l->joined_len += n;
        l->joined[l->joined_len] = '\0';
        if (l->pos < l->len)
                return 1; /* more pieces to come */
        if (l->joined_len != l->len || memcmp(l->joined, l->value, l->len) != 0) {
                split_lost(s);
                return 1;
        }
        l->active = false;
        return config_handle_item(user, section, l->name, l->joined);
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
        split_lost(&s); /* the last line's pieces */
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
        if (strv_extend(&c->files, path) < 0)
                return -ENOMEM;
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
        size_t n = 0;
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
                if (strv_extend_with_size(&names, &n, de->d_name) < 0) {
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
