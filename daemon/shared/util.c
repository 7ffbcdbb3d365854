/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Generic helpers (util.h): string lists, strings, parsing, atomic file writes and reads,
 * clocks. */
#include <ctype.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "utf8.h"
#include "util.h"

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **s = l; *s; s++)
                free(*s);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;
        while (l && l[n])
                n++;
        return n;
}

/* Takes value (freed on failure). *n, when given, is the length of *l: counting it is what made
 * appending n strings O(n^2). The array grows by doubling, and the room an allocation already
 * has is asked of the allocator (malloc_usable_size(), as systemd's greedy_realloc()), whoever
 * allocated it: appending n strings copies O(n) pointers in all, with any allocator (ASan's
 * realloc() always copies). */
static int strv_push(char ***l, size_t *n, char *value) {
        size_t len = n ? *n : strv_length(*l);
        char **m = *l;

        if (!m || malloc_usable_size(m) / sizeof(char *) < len + 2) {
                m = reallocarray(*l, MAX(len + 2, 2 * len), sizeof(char *));
                if (!m) {
                        free(value);
                        return -ENOMEM;
                }
        }
        m[len] = value;
        m[len + 1] = NULL;
        *l = m;
        if (n)
                *n = len + 1;
        return 0;
}

const char *strv_find_value(char *const *l, const char *key) {
        size_t n = strlen(key);
        STRV_FOREACH (p, l)
                if (strneq(*p, key, n) && (*p)[n] == '=')
                        return *p + n + 1;
        return NULL;
}

int strv_extend_with_size(char ***l, size_t *n, const char *value) {
        char *v = strdup(value);
        if (!v)
                return -ENOMEM;
        return strv_push(l, n, v);
}

int strv_extendf(char ***l, const char *format, ...) {
        va_list ap;
        char *v;

        va_start(ap, format);
        int r = vasprintf(&v, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return strv_push(l, NULL, v);
}

int strv_extend_strv(char ***l, char *const *other) {
        size_t n = strv_length(*l);

        STRV_FOREACH (s, other) {
                int r = strv_extend_with_size(l, &n, *s);
                if (r < 0)
                        return r;
        }
        return 0;
}

char **strv_copy(char *const *l) {
        char **c = calloc(strv_length(l) + 1, sizeof(char *));
        if (!c)
                return NULL;
        for (size_t i = 0; l && l[i]; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return strv_free(c);
        }
        return c;
}

bool strv_contains(char *const *l, const char *value) {
        STRV_FOREACH (s, l)
                if (streq(*s, value))
                        return true;
        return false;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

void strv_sort(char **l) {
        if (l)
                qsort(l, strv_length(l), sizeof(char *), cmp_str);
}

char *strdup_printf(const char *format, ...) {
        va_list ap;
        char *s;

        va_start(ap, format);
        int r = vasprintf(&s, format, ap);
        va_end(ap);
        return r < 0 ? NULL : s;
}

char *strstrip_trailing(char *s) {
        size_t n = strlen(s);
        while (n > 0 && isspace((unsigned char) s[n - 1]))
                s[--n] = '\0';
        return s;
}

char *strstrip(char *s) {
        while (isspace((unsigned char) *s))
                s++;
        return strstrip_trailing(s);
}

bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

char *path_join(const char *a, const char *b) {
        size_t la = strlen(a);
        while (la > 1 && a[la - 1] == '/')
                la--;
        while (*b == '/')
                b++;
        return strdup_printf("%.*s/%s", (int) la, a, b);
}

int parse_devnum(const char *s, dev_t *ret) {
        unsigned maj, min;
        int n = 0;

        if (!s || sscanf(s, "%u:%u%n", &maj, &min, &n) != 2)
                return -EINVAL;
        if (s[n] != '\0' && !isspace((unsigned char) s[n]))
                return -EINVAL;
        if (maj > 0xfff || min > 0xfffff)
                return -ERANGE;
        *ret = makedev(maj, min);
        return 0;
}

char *format_devnum(dev_t d, char buf[static 32]) {
        snprintf(buf, 32, "%u:%u", major(d), minor(d));
        return buf;
}

int parse_int_range(const char *s, long long min, long long max, long long *ret) {
        char *end;

        if (!s)
                return -EINVAL;
        while (isspace((unsigned char) *s))
                s++;
        if (!*s || !(isdigit((unsigned char) *s) || *s == '-' || *s == '+'))
                return -EINVAL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s)
                return -EINVAL;
        while (isspace((unsigned char) *end))
                end++;
        if (*end)
                return -EINVAL;
        if (errno == ERANGE || v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        return -EINVAL;
}

bool env_true(const char *name) {
        const char *e = getenv(name);

        return e && parse_boolean(e) > 0;
}

int parse_kernel_version(const char *release, unsigned *ret) {
        unsigned a = 0, b = 0, c = 0;

        if (!release || sscanf(release, "%u.%u", &a, &b) != 2)
                return -EINVAL;
        (void) sscanf(release, "%u.%u.%u", &a, &b, &c);
        if (a > 255 || b > 255)
                return -ERANGE;
        *ret = KERNEL_VERSION(a, b, c);
        return 0;
}

bool device_name_is_valid(const char *name) {
        size_t n;

        if (!name)
                return false;
        n = strlen(name);
        if (n == 0 || n > 64 || streq(name, ".") || streq(name, ".."))
                return false;
        for (const char *p = name; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("._:+-", *p))
                        return false;
        return true;
}

int write_file_atomic(const char *path, const char *data, size_t size, mode_t mode) {
        _cleanup_free_ char *tmp = NULL, *dir_copy = NULL;
        _cleanup_close_ int fd = -EBADF, dfd = -EBADF;

        tmp = strdup_printf("%s.tmp.%d", path, (int) getpid());
        dir_copy = strdup(path);
        if (!tmp || !dir_copy)
                return -ENOMEM;

        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, mode) < 0)
                goto fail;
        for (size_t done = 0; done < size;) {
                ssize_t k = write(fd, data + done, size - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        goto fail;
                }
                done += (size_t) k;
        }
        if (fsync(fd) < 0)
                goto fail;
        if (rename(tmp, path) < 0)
                goto fail;

        dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                (void) fsync(dfd);
        return 0;

fail:;
        int r = -errno;
        (void) unlink(tmp);
        return r;
}

int unlink_stale_temp_files(const char *dir) {
        _cleanup_closedir_ DIR *d = NULL;
        int n = 0;

        d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        for (struct dirent *de; (de = readdir(d));) {
                const char *suffix = strstr(de->d_name, ".tmp.");
                char *end;
                long pid;

                if (!suffix || de->d_type != DT_REG)
                        continue;
                errno = 0;
                pid = strtol(suffix + 5, &end, 10);
                if (errno != 0 || *end != '\0' || end == suffix + 5 || pid <= 0 || pid > INT_MAX)
                        continue;
                if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
                        continue; /* its writer still runs (or we cannot tell) */
                if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                        n++;
        }
        return n;
}

int read_full_file(const char *path, size_t max_size, char **ret, size_t *ret_size) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, allocated = 0;

        f = fopen(path, "re");
        if (!f)
                return -errno;
        for (;;) {
                if (n == allocated) { /* full: grow, unless it already holds more than max_size */
                        if (allocated > max_size)
                                return -EFBIG;
                        size_t a = allocated ? allocated * 2 : 4096;
                        char *m = realloc(buf, a + 1);
                        if (!m)
                                return -ENOMEM;
                        buf = m;
                        allocated = a;
                }
                size_t k = fread(buf + n, 1, allocated - n, f);
                n += k;
                if (k == 0) {
                        if (ferror(f))
                                return errno > 0 ? -errno : -EIO;
                        break;
                }
                if (n > max_size)
                        return -EFBIG;
        }
        buf[n] = '\0';
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = n;
        return 0;
}

int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1;; s++) {
                if (*s != '/' && *s != '\0')
                        continue;
                char saved = *s;
                *s = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                *s = saved;
                if (!saved)
                        break;
        }
        return 0;
}

static uint64_t now_usec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

uint64_t now_usec_monotonic(void) {
        return now_usec(CLOCK_MONOTONIC);
}

uint64_t now_usec_realtime(void) {
        return now_usec(CLOCK_REALTIME);
}

uint64_t now_usec_boottime(void) {
        return now_usec(CLOCK_BOOTTIME);
}

void json_print_string(FILE *f, const char *s) {
        _cleanup_free_ char *escaped = NULL;

        if (!utf8_is_clean(s)) {
                escaped = utf8_escape(s);
                s = escaped ?: "(out of memory)";
        }
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) (s ? s : ""); *p; p++) {
                switch (*p) {
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                case '\t':
                        fputs("\\t", f);
                        break;
                default:
                        if (*p < 0x20)
                                fprintf(f, "\\u%04x", *p);
                        else
                                fputc(*p, f);
                }
        }
        fputc('"', f);
}
