/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The exit codes of stablepagesd's verbs and of stablepagesctl, and the one mapping from the
 * result of a verb (0 or -errno) to them. */

typedef enum ExitCode {
        EXIT_OK = 0,
        EXIT_FAIL = 1,
        EXIT_USAGE = 2,     /* the command line is wrong: -EINVAL */
        EXIT_NO_DEVICE = 4, /* a named device does not exist: -ENODEV */
} ExitCode;

/* Maps a verb's result to its exit code: >= 0 success, -EINVAL usage, -ENODEV no such
 * device, any other -errno failure. */
ExitCode exit_code_from_result(int r);
