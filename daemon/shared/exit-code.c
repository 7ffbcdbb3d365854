/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one mapping from a verb's result to the process exit code (exit-code.h). */
#include <errno.h>

#include "exit-code.h"

ExitCode exit_code_from_result(int r) {
        if (r >= 0)
                return EXIT_OK;
        if (r == -EINVAL)
                return EXIT_USAGE;
        if (r == -ENODEV)
                return EXIT_NO_DEVICE;
        return EXIT_FAIL;
}
