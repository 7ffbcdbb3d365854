/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/core/sysfs.c on a fake sysfs root: what each read returns when the attribute is
 * missing, is something else than a file (a directory, a FIFO, a symlink), or cannot be opened
 * (EACCES as an unprivileged user). Nothing may block or crash; errors come back as negative
 * errno. The one write, of queue/stable_writes, is tested in test-flag.c. */

#include <limits.h>

#include "fake-sysfs.h"
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

static void test_fifo_does_not_block(void) {
        /* A FIFO in place of an attribute (no writer, no reader): a blocking open() would
         * hang the daemon's only thread forever. */
        tree_mkfifo(root, "block/a/fifo");
        CHECK_INT(run_in_child(read_fifo, NULL, false), 0);
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

static int read_unreadable(void *userdata) {
        _cleanup_free_ char *s = NULL;
        return sysfs_read_string(root, "block/ro/queue/secret", &s);
}

static void test_eacces(void) {
        /* An attribute only its owner may read. Root ignores modes, so the check runs as
         * nobody. */
        tree_put(root, "block/ro/queue/secret", "1\n");
        tree_chmod(root, "block/ro/queue/secret", 0200);
        CHECK_INT(run_in_child(read_unreadable, NULL, true), -EACCES);
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

/* read_full_file() takes a file up to max_size bytes whatever max_size is: a limit under the
 * first 4 KiB buffer refused every non-empty file (this boot's id, 37 bytes, read with 64). */
static void test_read_full_file(void) {
        _cleanup_free_ char *path = path_join(root, "boot_id");
        char *s = NULL;
        size_t size = 0;

        tree_put(root, "boot_id", "8200af24-ded1-4467-83af-a84828e5c2e1\n");
        CHECK_INT(read_full_file(path, 64, &s, &size), 0);
        CHECK_STR(s, "8200af24-ded1-4467-83af-a84828e5c2e1\n");
        CHECK_INT((int) size, 37);
        s = mfree(s);
        CHECK_INT(read_full_file(path, 37, &s, NULL), 0);
        s = mfree(s);
        CHECK_INT(read_full_file(path, 36, &s, NULL), -EFBIG);

        _cleanup_free_ char *big = malloc(10000);
        CHECK(big != NULL);
        memset(big, 'x', 9999);
        big[9999] = '\0';
        tree_put(root, "big", big);
        free(path);
        path = path_join(root, "big");
        CHECK_INT(read_full_file(path, 9999, &s, &size), 0);
        CHECK_INT((int) size, 9999);
        s = mfree(s);
        CHECK_INT(read_full_file(path, 9998, &s, NULL), -EFBIG);
        CHECK_INT(read_full_file(path, 4096, &s, NULL), -EFBIG);
}

int main(void) {
        root = tree_new();
        test_read_full_file();
        test_read_string();
        test_fifo_does_not_block();
        test_read_int();
        test_parse_bool01();
        test_eacces();
        test_list_dir();
        test_read_link();
        tree_free(root);
        return tests_finish();
}
