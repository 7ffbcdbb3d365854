/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The device under a loop device's backing file (daemon/core/loop-backing.c): the udev rule's
 * record counts only for the diskseq it was read for; a call that hangs is given up after its
 * bound (daemon/shared/bounded.c), and the caller keeps no child. */

#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#include "bounded.h"
#include "loop-backing.h"
#include "tests.h"
#include "util.h"

static void test_record(void) {
        char *const props[] = { (char *) "DEVNAME=/dev/loop3", (char *) LOOP_DISKSEQ_PROPERTY "=42",
                                (char *) LOOP_BACKING_PROPERTY "=8:1", NULL };
        char *const failed[] = { (char *) LOOP_DISKSEQ_PROPERTY "=42",
                                 (char *) LOOP_BACKING_ERROR_PROPERTY "=LOOP_GET_STATUS64 got no answer",
                                 NULL };
        char *const none[] = { (char *) "DEVNAME=/dev/loop3", NULL };
        const char *error = NULL;
        dev_t d = 0;

        CHECK_INT(loop_backing_from_record(props, 42, &d, &error), 1);
        CHECK(d == makedev(8, 1));
        /* Another attachment (a new diskseq): the record is an older one's. */
        CHECK_INT(loop_backing_from_record(props, 43, &d, &error), 0);
        CHECK_INT(loop_backing_from_record(failed, 42, &d, &error), -EIO);
        CHECK_STR(error, "LOOP_GET_STATUS64 got no answer");
        CHECK_INT(loop_backing_from_record(failed, 7, &d, &error), 0);
        CHECK_INT(loop_backing_from_record(none, 42, &d, &error), 0);
        CHECK_INT(loop_backing_from_record(NULL, 0, &d, &error), 0);
}

static int answer(void *userdata, uint64_t *ret) {
        *ret = 4242;
        return 0;
}

static int refuse(void *userdata, uint64_t *ret) {
        return -EPERM;
}

static int hang(void *userdata, uint64_t *ret) {
        sleep(30); /* killed long before */
        return 0;
}

static uint64_t now_msec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void test_bounded(void) {
        uint64_t v = 0, start;

        CHECK_INT(bounded_call(answer, NULL, USEC_PER_SEC, &v), 0);
        CHECK_INT(v, 4242);
        CHECK_INT(bounded_call(refuse, NULL, USEC_PER_SEC, &v), -EPERM);
        start = now_msec();
        CHECK_INT(bounded_call(hang, NULL, 200 * USEC_PER_MSEC, &v), -ETIMEDOUT);
        CHECK(now_msec() - start < 2000);
        /* The caller keeps no child: the one that waited was reaped, the one that hung killed and
         * left to init. */
        CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
        /* The stat of a path, bounded: the answer of the filesystem. */
        dev_t d = 0;
        CHECK_INT(loop_backing_stat("/", NULL, &d), 0);
        CHECK(d != 0);
        CHECK_INT(loop_backing_stat("/nonexistent/stablepages", NULL, &d), -ENOENT);
}

int main(void) {
        test_record();
        test_bounded();
        return tests_finish();
}
