/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/shared/exit-code.c and SYNTHETIC_ERRNO (macro.h, log.c): the exit codes users see for a
 * verb's result, and a made-up error that logs its errno for %m and returns -errno. */

#include <errno.h>

#include "exit-code.h"
#include "log.h"
#include "tests.h"

static void test_exit_code_from_result(void) {
        CHECK_INT(exit_code_from_result(0), 0);
        CHECK_INT(exit_code_from_result(1), 0);
        CHECK_INT(exit_code_from_result(-EINVAL), 2);
        CHECK_INT(exit_code_from_result(-ENODEV), 4);
        /* Every other failure is 1: a bus error, a failed write, a missing daemon. */
        CHECK_INT(exit_code_from_result(-EIO), 1);
        CHECK_INT(exit_code_from_result(-ENOMEM), 1);
        CHECK_INT(exit_code_from_result(-ESRCH), 1);
        CHECK_INT(exit_code_from_result(-ENXIO), 1);
        CHECK_INT(exit_code_from_result(-EBADMSG), 1);
}

static void test_synthetic_errno(void) {
        CHECK(IS_SYNTHETIC_ERRNO(SYNTHETIC_ERRNO(EINVAL)));
        CHECK(IS_SYNTHETIC_ERRNO(-SYNTHETIC_ERRNO(EINVAL)));
        CHECK(!IS_SYNTHETIC_ERRNO(EINVAL));
        CHECK(!IS_SYNTHETIC_ERRNO(-EINVAL));
        CHECK_INT(ERRNO_VALUE(SYNTHETIC_ERRNO(ENODEV)), ENODEV);
        CHECK_INT(ERRNO_VALUE(-ENODEV), ENODEV);

        /* The log functions strip the mark: the result maps to the exit code of its errno. */
        unsigned errors = log_get_n_errors();
        CHECK_INT(log_error_errno(SYNTHETIC_ERRNO(EINVAL), "test: a usage error (%m)"), -EINVAL);
        CHECK_INT(log_error_errno(-SYNTHETIC_ERRNO(ENODEV), "test: no such device"), -ENODEV);
        CHECK_INT(log_error_errno(EIO, "test: a real error (%m)"), -EIO);
        CHECK_INT(log_get_n_errors(), errors + 3);
        CHECK_INT(exit_code_from_result(log_error_errno(SYNTHETIC_ERRNO(EINVAL), "test: usage")), 2);
        CHECK_INT(log_debug_errno(SYNTHETIC_ERRNO(EBADMSG), "below the level: not printed"), -EBADMSG);
}

int main(void) {
        log_set_target(LOG_TARGET_STDERR);
        test_exit_code_from_result();
        test_synthetic_errno();
        return tests_finish();
}
