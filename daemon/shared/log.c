/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <strings.h>
#include <sys/stat.h>
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

        if (level <= LOG_ERR)
                n_errors++;
        if (error)
                errno = error; /* for %m */
        va_start(ap, format);
        vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);

        if (resolve_target() == LOG_TARGET_JOURNAL) {
                if (sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%d", level, "CODE_FILE=%s", file,
                                    "CODE_LINE=%d", line, "CODE_FUNC=%s", func, "ERRNO=%d",
                                    synthetic ? 0 : error, "SYSLOG_IDENTIFIER=%s",
                                    program_invocation_short_name, NULL) >= 0) {
                        errno = saved;
                        return -error;
                }
        }

        fprintf(stderr, "%s%s\n",
                level <= LOG_ERR       ? "error: "
                : level == LOG_WARNING ? "warning: "
                                       : "",
                buf);
        errno = saved;
        return -error;
}
