/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <syslog.h>

#include "macro.h"

/* Sets the maximum priority logged (LOG_ERR..LOG_DEBUG). */
void log_set_max_level(int level);
int log_get_max_level(void);

/* How many lines were logged at error level (or worse) so far. */
unsigned log_get_n_errors(void);

/* Parses "err", "warning", "notice", "info", "debug" or a number. Returns level or -EINVAL. */
int log_level_from_string(const char *s);

/* Where log lines go: LOG_TARGET_AUTO picks the journal when stderr is connected to
 * it (JOURNAL_STREAM) or when not a terminal and the journal socket exists, else stderr. */
typedef enum LogTarget { LOG_TARGET_AUTO, LOG_TARGET_STDERR, LOG_TARGET_JOURNAL } LogTarget;
void log_set_target(LogTarget target);

/* Logs one line at priority level; returns -errno when error != 0 (a SYNTHETIC_ERRNO() too,
 * its mark removed), else 0, so that callers can "return log_error_errno(r, ...)". */
int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...)
        _printf_(6, 7);

/* Logs one line as log_internal() does; in the journal with MESSAGE_ID=message_id (a catalog
 * entry of message-id.h; NULL: none) and the fields of fields ("KEY", "value" pairs ending with
 * NULL, see LOG_FIELDS(); NULL: none), which stderr does not show. */
int log_struct_internal(int level, const char *message_id, const char *const *fields, const char *file,
                        int line, const char *func, const char *format, ...) _printf_(7, 8);

#define LOG_FIELDS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define log_struct(level, message_id, fields, ...)                                                          \
        log_struct_internal(level, message_id, fields, __FILE__, __LINE__, __func__, __VA_ARGS__)

#define log_full_errno(level, error, ...)                                                                   \
        log_internal(level, error, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_full(level, ...) log_full_errno(level, 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)

#define log_oom() log_error_errno(ENOMEM, "Out of memory.")
