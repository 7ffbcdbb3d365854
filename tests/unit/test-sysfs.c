/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/sysfs.c on a fake sysfs root: what each read and write returns when the attribute
 * is missing, is something else than a file (a directory, a FIFO, a symlink, a device
 * node), cannot be opened (EACCES as an unprivileged user), or when the write itself fails
 * (EIO, EINVAL, EBUSY injected with tests/unit/fault.c). Nothing may block, crash or
 * report success for a failed write; errors come back as negative errno. */

#include <limits.h>
#include <sys/sysmacros.h>

#include "fake-sysfs.h"
#include "fault.h"
#include "sysfs.h"

static char *root;

static void test_read_string(void) {
        char *s = NULL;

        tree_put(root, "block/a/queue/stable_writes", "1\n");
        tree_put(root, "block/a/empty", "");
        tree_put(root, "block/a/spaces", "  T10-DIF-TYPE1-CRC \t\n\nsecond line\n");
        tree_mkdir(root, "block/a/adir");
        tree_put(root, "block/a/notadir", "x");

        CHECK_INT(sysfs_read_string(root, "block/a/queue/stable_writes", &s), 0);
        CHECK_STR(s, "1");
        s = mfree(s);
        CHECK_INT(sysfs_read_string(root, "block/a/empty", &s), 0);
        CHECK_STR(s, "");
        s = mfree(s);
        /* The first line only, trailing whitespace removed, leading kept. */
        CHECK_INT(sysfs_read_string(root, "block/a/spaces", &s), 0);
        CHECK_STR(s, "  T10-DIF-TYPE1-CRC");
        s = mfree(s);

        CHECK_INT(sysfs_read_string(root, "block/a/missing", &s), -ENOENT);
        CHECK_INT(sysfs_read_string(root, "block/nodisk/queue/stable_writes", &s), -ENOENT);
        CHECK_INT(sysfs_read_string(root, "block/a/notadir/x", &s), -ENOTDIR);
        CHECK_INT(sysfs_read_string(root, "block/a/adir", &s), -EISDIR);
        CHECK(s == NULL);

        /* A line longer than the buffer: the first 4095 bytes, no overflow. */
        char big[10000];
        memset(big, '7', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        tree_put(root, "block/a/big", big);
        CHECK_INT(sysfs_read_string(root, "block/a/big", &s), 0);
        CHECK_INT(strlen(s), 4095);
        s = mfree(s);
}

static int read_fifo(void *userdata) {
        _cleanup_free_ char *s = NULL;
        int r = sysfs_read_string(root, "block/a/fifo", &s);
        /* Returning at all is the point; with nothing written it reads as empty. */
        return r < 0 ? r : isempty(s) ? 0 : -EBADMSG;
}

static int write_fifo(void *userdata) {
        return sysfs_write_string(root, "block/a/fifo", "0");
}

static void test_fifo_does_not_block(void) {
        /* A FIFO in place of an attribute (no writer, no reader): a blocking open() would
         * hang the daemon's only thread forever. */
        tree_mkfifo(root, "block/a/fifo");
        CHECK_INT(run_in_child(read_fifo, NULL, false), 0);
        CHECK_INT(run_in_child(write_fifo, NULL, false), -ENXIO);
}

static void test_read_int(void) {
        static const struct {
                const char *content;
                int ret;
                long long value;
        } cases[] = {
                { "0\n", 0, 0 },
                { "1", 0, 1 },
                { " 42 \n", 0, 42 },
                { "-3\n", 0, -3 },
                { "9223372036854775807\n", 0, LLONG_MAX },
                { "9223372036854775808\n", -ERANGE, 0 },
                { "99999999999999999999999999\n", -ERANGE, 0 },
                { "", -EINVAL, 0 },
                { "\n", -EINVAL, 0 },
                { "1 2\n", -EINVAL, 0 },
                { "0x1\n", -EINVAL, 0 },
                { "one\n", -EINVAL, 0 },
                { "-\n", -EINVAL, 0 },
                { "[none] mq-deadline\n", -EINVAL, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                long long v = -12345;
                int r;

                tree_put(root, "block/a/int", cases[i].content);
                r = sysfs_read_int(root, "block/a/int", &v);
                if (r != cases[i].ret)
                        fprintf(stderr, "read_int case %zu \"%s\"\n", i, cases[i].content);
                CHECK_INT(r, cases[i].ret);
                if (r == 0)
                        CHECK_INT(v, cases[i].value);
        }
        CHECK_INT(sysfs_read_int(root, "block/a/nothing", &(long long){ 0 }), -ENOENT);
}

static void test_parse_bool01(void) {
        CHECK_INT(sysfs_parse_bool01("0"), 0);
        CHECK_INT(sysfs_parse_bool01("1"), 1);
        CHECK_INT(sysfs_parse_bool01(" 1\n"), 1);
        CHECK_INT(sysfs_parse_bool01("2"), -EINVAL);
        CHECK_INT(sysfs_parse_bool01("-1"), -EINVAL);
        CHECK_INT(sysfs_parse_bool01(""), -EINVAL);
        CHECK_INT(sysfs_parse_bool01("yes"), -EINVAL);
        CHECK_INT(sysfs_parse_bool01("1x"), -EINVAL);
        CHECK_INT(sysfs_parse_bool01(NULL), -EINVAL);
}

static void test_write(void) {
        _cleanup_free_ char *s = NULL;

        tree_put(root, "block/w/queue/stable_writes", "1\n");
        CHECK_INT(sysfs_write_string(root, "block/w/queue/stable_writes", "0"), 0);
        CHECK_INT(sysfs_read_string(root, "block/w/queue/stable_writes", &s), 0);
        CHECK_STR(s, "0");

        CHECK_INT(sysfs_write_string(root, "block/w/queue/missing", "0"), -ENOENT);
        CHECK_INT(sysfs_write_string(root, "block/gone/queue/stable_writes", "0"), -ENOENT);

        /* A directory in place of the attribute. */
        tree_mkdir(root, "block/d/queue/stable_writes");
        CHECK_INT(sysfs_write_string(root, "block/d/queue/stable_writes", "0"), -EISDIR);

        /* A symlink in place of the attribute is never followed (O_NOFOLLOW): the write
         * cannot be redirected to another file. */
        tree_put(root, "victim", "untouched");
        tree_symlink(root, "block/l/queue/stable_writes", "../../../victim");
        CHECK_INT(sysfs_write_string(root, "block/l/queue/stable_writes", "0"), -ELOOP);
        s = mfree(s);
        CHECK_INT(sysfs_read_string(root, "victim", &s), 0);
        CHECK_STR(s, "untouched");
}

static int write_readonly(void *userdata) {
        return sysfs_write_string(root, "block/ro/queue/stable_writes", "0");
}

static int read_unreadable(void *userdata) {
        _cleanup_free_ char *s = NULL;
        return sysfs_read_string(root, "block/ro/queue/secret", &s);
}

static void test_eacces(void) {
        /* As the kernel makes attributes the daemon may not write: 0444. Root ignores
         * modes, so the check runs as nobody. */
        tree_put(root, "block/ro/queue/stable_writes", "1\n");
        tree_chmod(root, "block/ro/queue/stable_writes", 0444);
        tree_put(root, "block/ro/queue/secret", "1\n");
        tree_chmod(root, "block/ro/queue/secret", 0200);
        CHECK_INT(run_in_child(write_readonly, NULL, true), -EACCES);
        CHECK_INT(run_in_child(read_unreadable, NULL, true), -EACCES);
}

static void test_write_device_nodes(void) {
        /* Device nodes in place of the attribute give real write errors: /dev/full
         * (ENOSPC) and a character device no driver claims (ENXIO). Needs CAP_MKNOD. */
        _cleanup_free_ char *full = tree_path(root, "block/full/queue/stable_writes");
        _cleanup_free_ char *nodrv = tree_path(root, "block/nodrv/queue/stable_writes");

        tree_mkdir(root, "block/full/queue");
        tree_mkdir(root, "block/nodrv/queue");
        if (mknod(full, S_IFCHR | 0644, makedev(1, 7)) < 0 ||
            mknod(nodrv, S_IFCHR | 0644, makedev(4095, 4095)) < 0) {
                fprintf(stderr, "skipping device node checks: mknod: %m\n");
                return;
        }
        CHECK_INT(sysfs_write_string(root, "block/full/queue/stable_writes", "0"), -ENOSPC);
        CHECK_INT(sysfs_write_string(root, "block/nodrv/queue/stable_writes", "0"), -ENXIO);
}

static void test_injected_write_errors(void) {
        static const int errors[] = { EIO, EINVAL, EBUSY, EPERM, EROFS };

        tree_put(root, "block/inj/queue/stable_writes", "1\n");
        for (size_t i = 0; i < ELEMENTSOF(errors); i++) {
                _cleanup_free_ char *s = NULL;

                fault_arm_write("/block/inj/queue/stable_writes", errors[i]);
                CHECK_INT(sysfs_write_string(root, "block/inj/queue/stable_writes", "0"), -errors[i]);
                CHECK_INT(fault_hits(), 1);
                fault_disarm();
                CHECK_INT(sysfs_read_string(root, "block/inj/queue/stable_writes", &s), 0);
                CHECK_STR(s, "1");
        }
}

static void test_list_dir(void) {
        _cleanup_strv_free_ char **l = NULL;

        tree_put(root, "list/b", "");
        tree_put(root, "list/a", "");
        tree_mkdir(root, "list/c");
        tree_symlink(root, "list/0-dangling", "nowhere");
        CHECK_INT(sysfs_list_dir(root, "list", &l), 0);
        CHECK_INT(strv_length(l), 4);
        if (strv_length(l) == 4) {
                CHECK_STR(l[0], "0-dangling");
                CHECK_STR(l[1], "a");
                CHECK_STR(l[3], "c");
        }
        l = strv_free(l);
        l = (char **) 0x1;
        CHECK_INT(sysfs_list_dir(root, "no-such-dir", &l), 0);
        CHECK(l == NULL);
        CHECK_INT(sysfs_list_dir(root, "list/a", &l), -ENOTDIR);
}

static void test_read_link(void) {
        _cleanup_free_ char *s = NULL;

        tree_symlink(root, "block/v/device/driver", "../../../bus/virtio/drivers/virtio_blk");
        CHECK_INT(sysfs_read_link_basename(root, "block/v/device/driver", &s), 0);
        CHECK_STR(s, "virtio_blk");
        s = mfree(s);
        tree_symlink(root, "block/v/plain", "sd");
        CHECK_INT(sysfs_read_link_basename(root, "block/v/plain", &s), 0);
        CHECK_STR(s, "sd");
        CHECK_INT(sysfs_read_link_basename(root, "block/v/nolink", &(char *){ NULL }), -ENOENT);
        tree_put(root, "block/v/file", "x");
        CHECK_INT(sysfs_read_link_basename(root, "block/v/file", &(char *){ NULL }), -EINVAL);
}

int main(void) {
        root = tree_new();
        test_read_string();
        test_fifo_does_not_block();
        test_read_int();
        test_parse_bool01();
        test_write();
        test_eacces();
        test_write_device_nodes();
        test_injected_write_errors();
        test_list_dir();
        test_read_link();
        tree_free(root);
        return tests_finish();
}
