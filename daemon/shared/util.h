/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

/* A NULL-terminated array of owned strings. NULL is a valid empty list. */
typedef char **strv_t;

/* Frees every string and the array; returns NULL. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Number of strings in l (0 for NULL). */
size_t strv_length(char *const *l);

/* Appends a copy of value to *l, whose array grows by doubling. When n is not NULL it holds the
 * length of *l (and is updated): appending is then amortised O(1), where without it each call
 * counts the strings first (building a list of n strings with strv_extend() reads O(n^2)
 * pointers: for short lists only). Returns 0 or -ENOMEM. */
int strv_extend_with_size(char ***l, size_t *n, const char *value);
static inline int strv_extend(char ***l, const char *value) {
        return strv_extend_with_size(l, NULL, value);
}

/* Appends a formatted string to *l. Returns 0 or -ENOMEM. */
int strv_extendf(char ***l, const char *format, ...) _printf_(2, 3);

/* Appends copies of every string of other. Returns 0 or -ENOMEM. */
int strv_extend_strv(char ***l, char *const *other);

/* Duplicates l (NULL stays NULL). Returns NULL only on allocation failure with l non-NULL. */
char **strv_copy(char *const *l);

/* True when l holds a string equal to value. */
bool strv_contains(char *const *l, const char *value);

/* The value of the first "key=value" string of l whose key is key, or NULL. */
const char *strv_find_value(char *const *l, const char *key);

/* Sorts l in place with strcmp. */
void strv_sort(char **l);

#define STRV_FOREACH(s, l) for (char *const *s = (l); s && *s; s++)

/* Like asprintf() but returns the string or NULL. */
char *strdup_printf(const char *format, ...) _printf_(1, 2);

/* Removes trailing whitespace (newlines included) in place; returns s. */
char *strstrip_trailing(char *s);

/* Strips leading and trailing whitespace; returns a pointer into s. */
char *strstrip(char *s);

/* True when s starts with prefix. */
bool startswith(const char *s, const char *prefix);

/* Joins a and b with one '/'. Returns a new string or NULL. */
char *path_join(const char *a, const char *b);

/* Parses "MAJ:MIN" into *ret. Returns 0 or -EINVAL. */
int parse_devnum(const char *s, dev_t *ret);

/* Formats a devnum as "MAJ:MIN" into buf (at least 32 bytes); returns buf. */
char *format_devnum(dev_t d, char buf[static 32]);

/* Parses a decimal integer within [min,max] with nothing but whitespace after it.
 * Returns 0, -EINVAL (not a number) or -ERANGE. */
int parse_int_range(const char *s, long long min, long long max, long long *ret);

/* Parses yes/no/true/false/on/off/1/0. Returns 0 or 1, or -EINVAL. */
int parse_boolean(const char *s);

/* Whether the environment variable name is set to a true value (parse_boolean()). */
bool env_true(const char *name);

/* Kernel release "6.12.117+deb12-amd64" -> comparable code major<<16|minor<<8|min(patch,255).
 * Returns 0 on success, -EINVAL when it does not start with a version. */
int parse_kernel_version(const char *release, unsigned *ret);

#define KERNEL_VERSION(a, b, c) (((a) << 16) | ((b) << 8) | ((c) > 255 ? 255 : (c)))

/* True when name is a safe kernel block device name: non-empty, at most 64 bytes,
 * only [A-Za-z0-9._:+-], not "." or "..", no '/'. */
bool device_name_is_valid(const char *name);

/* Writes data to path atomically: temp file in the same directory, fsync, rename,
 * fsync of the directory. mode is applied to the new file. Returns 0 or -errno. */
int write_file_atomic(const char *path, const char *data, size_t size, mode_t mode);

/* Removes the temp files write_file_atomic() left in dir when its writer died (a process
 * killed between create and rename): "NAME.tmp.PID" whose PID no longer runs. A missing dir
 * is not an error. Returns the number removed or -errno. */
int unlink_stale_temp_files(const char *dir);

/* Reads a whole file (at most max_size bytes; -EFBIG beyond). Returns 0 or -errno. */
int read_full_file(const char *path, size_t max_size, char **ret, size_t *ret_size);

/* mkdir -p with mode for every created component. Returns 0 or -errno. */
int mkdir_p(const char *path, mode_t mode);

/* CLOCK_MONOTONIC / CLOCK_REALTIME / CLOCK_BOOTTIME (monotonic, counting suspend) in
 * microseconds. */
uint64_t now_usec_monotonic(void);
uint64_t now_usec_realtime(void);
uint64_t now_usec_boottime(void);

/* Escapes s as a JSON string (with quotes) onto f. */
void json_print_string(FILE *f, const char *s);
