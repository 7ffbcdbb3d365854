/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Logging (log.h): to the journal with structured fields or to standard error (the target set,
 * or found from how the process was started), up to the maximum level set. */
#include <stdarg.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
/* The journal fields name the caller of log_*(), not log.c. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "log.h"
#include "util.h"

static int max_level = LOG_INFO;
static LogTarget target = LOG_TARGET_AUTO;
static int resolved_target = -1;
static unsigned n_errors = 0;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

unsigned log_get_n_errors(void) {
        return n_errors;
}

void log_set_target(LogTarget t) {
        target = t;
        resolved_target = -1;
}

int log_level_from_string(const char *s) {
        static const char *const names[] = {
                [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert",     [LOG_CRIT] = "crit",
                [LOG_ERR] = "err",     [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
                [LOG_INFO] = "info",   [LOG_DEBUG] = "debug",
        };
        long long v;

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcasecmp(s, names[i]) == 0)
                        return (int) i;
        if (strcasecmp(s, "error") == 0)
                return LOG_ERR;
        if (parse_int_range(s, LOG_EMERG, LOG_DEBUG, &v) == 0)
                return (int) v;
        return -EINVAL;
}

static LogTarget resolve_target(void) {
        struct stat st;

        if (resolved_target >= 0)
                return resolved_target;
        if (target != LOG_TARGET_AUTO)
                resolved_target = target;
        else if (getenv("JOURNAL_STREAM") && fstat(STDERR_FILENO, &st) == 0) {
                unsigned long long dev, ino;
                resolved_target = LOG_TARGET_STDERR;
                if (sscanf(getenv("JOURNAL_STREAM"), "%llu:%llu", &dev, &ino) == 2 &&
                    (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino)
                        resolved_target = LOG_TARGET_JOURNAL;
        } else if (!isatty(STDERR_FILENO) && access("/run/systemd/journal/socket", W_OK) == 0)
                resolved_target = LOG_TARGET_JOURNAL;
        else
                resolved_target = LOG_TARGET_STDERR;
        return resolved_target;
}

/* Writes one line at level (already checked against max_level) to the target, with the
 * journal fields of message_id and fields (log_struct_internal()). */
static void log_dispatch(int level, int error, bool synthetic, const char *message_id,
                         const char *const *fields, const char *file, int line, const char *func,
                         const char *text) {
        if (level <= LOG_ERR)
                n_errors++;
        if (resolve_target() == LOG_TARGET_JOURNAL) {
                char priority[16], code_line[32], errno_field[32], id[64];
                _cleanup_free_ char *message = strdup_printf("MESSAGE=%s", text),
                                    *code_file = strdup_printf("CODE_FILE=%s", file),
                                    *code_func = strdup_printf("CODE_FUNC=%s", func),
                                    *identifier = strdup_printf("SYSLOG_IDENTIFIER=%s",
                                                                program_invocation_short_name);
                struct iovec iov[8 + 2 * 8];
                size_t n = 0;

                snprintf(priority, sizeof priority, "PRIORITY=%d", level);
                snprintf(code_line, sizeof code_line, "CODE_LINE=%d", line);
                snprintf(errno_field, sizeof errno_field, "ERRNO=%d", synthetic ? 0 : error);
                snprintf(id, sizeof id, "MESSAGE_ID=%s", message_id ?: "");
                const char *base[] = { message,   priority,    code_file, code_line,
                                       code_func, errno_field, identifier };
                for (size_t i = 0; i < ELEMENTSOF(base); i++)
                        iov[n++] = (struct iovec){ .iov_base = (char *) base[i],
                                                   .iov_len = base[i] ? strlen(base[i]) : 0 };
                if (message_id)
                        iov[n++] = (struct iovec){ .iov_base = id, .iov_len = strlen(id) };
                /* "KEY=value" of each pair, at most 8 */
                char *pairs[8] = {};
                size_t n_pairs = 0;
                for (; fields && fields[2 * n_pairs] && n_pairs < ELEMENTSOF(pairs); n_pairs++) {
                        pairs[n_pairs] =
                                strdup_printf("%s=%s", fields[2 * n_pairs], fields[2 * n_pairs + 1] ?: "");
                        if (pairs[n_pairs])
                                iov[n++] = (struct iovec){ .iov_base = pairs[n_pairs],
                                                           .iov_len = strlen(pairs[n_pairs]) };
                }
                bool sent = message && code_file && code_func && identifier &&
                            sd_journal_sendv(iov, (int) n) >= 0;
                for (size_t i = 0; i < n_pairs; i++)
                        free(pairs[i]);
                if (sent)
                        return;
        }

        fprintf(stderr, "%s%s\n",
                level <= LOG_ERR       ? "error: "
                : level == LOG_WARNING ? "warning: "
                                       : "",
                text);
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format,
                 ...) {
        char buf[2048];
        va_list ap;
        int saved = errno;

        bool synthetic = IS_SYNTHETIC_ERRNO(error);

        error = ERRNO_VALUE(error);
        if (level > max_level) {
                errno = saved;
                return -error;
        }

        if (error)
                errno = error; /* for %m */
        va_start(ap, format);
        vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);
        log_dispatch(level, error, synthetic, NULL, NULL, file, line, func, buf);
        errno = saved;
        return -error;
}

int log_struct_internal(int level, const char *message_id, const char *const *fields, const char *file,
                        int line, const char *func, const char *format, ...) {
        char buf[2048];
        va_list ap;
        int saved = errno;

        if (level > max_level)
                return 0;
        va_start(ap, format);
        vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);
        log_dispatch(level, 0, false, message_id, fields, file, line, func, buf);
        errno = saved;
        return 0;
}
