/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one writer of queue/stable_writes (flag.h). */
#include <fcntl.h>
#include <inttypes.h>

#include "flag.h"
#include "history.h"
#include "log.h"
#include "sysfs.h"
#include "util.h"

#define FLAG_ATTR "queue/stable_writes"

/* Test hook (stablepagesd(8)): STABLEPAGES_TEST_FLAG_WRITE=refuse refuses every write, so that
 * a test can prove that a path writes the flag through here and nowhere else. */
static bool test_refuse(void) {
        const char *hook = getenv("STABLEPAGES_TEST_FLAG_WRITE");
        return hook && streq(hook, "refuse");
}

int flag_pin_disk(const char *sysfs_root, const char *disk) {
        _cleanup_free_ char *path = NULL;
        int fd;

        if (!device_name_is_valid(disk))
                return -EINVAL;
        path = strdup_printf("%s/block/%s", sysfs_root, disk);
        if (!path)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Sets *ret_reason (may be NULL) to the sentence and returns error (or -ENOMEM). */
static int fail(char **ret_reason, int error, char *sentence) {
        if (!sentence)
                return -ENOMEM;
        if (ret_reason)
                *ret_reason = sentence;
        else
                free(sentence);
        return error;
}

/* Reads an integer attribute below the pinned directory. Returns 0, -ENOENT, or -errno. */
static int read_at(int disk_fd, const char *attr, long long *ret) {
        _cleanup_free_ char *s = NULL;
        int r = sysfs_read_string_at(disk_fd, attr, &s);

        if (r < 0)
                return r;
        return parse_int_range(s, 0, INT64_MAX, ret) < 0 ? -EINVAL : 0;
}

/* The disk behind disk_fd must be the one of w; its MAJ:MIN in *ret_devnum (may be NULL; 0 for
 * a hidden disk). Returns 0, or -ESTALE/-ENODEV/-errno. */
static int check_identity(int disk_fd, const FlagWrite *w, dev_t *ret_devnum, char **ret_reason) {
        _cleanup_free_ char *dev = NULL;
        dev_t devnum = 0;
        long long seq = 0;
        int r, rs;

        /* A disk being removed loses "dev" and "diskseq" with its directory; a hidden disk (the
         * path of an NVMe multipath head) never had "dev", but has a diskseq. */
        r = sysfs_read_string_at(disk_fd, "dev", &dev);
        if (r >= 0 && parse_devnum(dev, &devnum) < 0)
                r = -EINVAL;
        if (r < 0 && r != -ENOENT && r != -ENODEV)
                return fail(ret_reason, r,
                            strdup_printf("%s: cannot read its device number: %s", w->disk, strerror(-r)));
        rs = read_at(disk_fd, "diskseq", &seq);
        if (r < 0 && rs < 0)
                return fail(ret_reason, -ENODEV, strdup_printf("%s: the disk was removed", w->disk));
        if (ret_devnum)
                *ret_devnum = devnum;
        if (w->diskseq == 0) {
                if (w->devnum == 0 || w->devnum == devnum)
                        return 0;
                char a[32], b[32];
                return fail(ret_reason, -ESTALE,
                            strdup_printf("%s: another disk has the name now (device %s, decided for %s)",
                                          w->disk, format_devnum(devnum, a), format_devnum(w->devnum, b)));
        }
        if (rs < 0 || (uint64_t) seq != w->diskseq)
                return fail(
                        ret_reason, -ESTALE,
                        rs < 0 ? strdup_printf("%s: cannot read its diskseq (%s), so it cannot be told "
                                               "from the disk decided for (diskseq %" PRIu64 ")",
                                               w->disk, strerror(-rs), w->diskseq)
                               : strdup_printf("%s: another disk has the name now (diskseq %lld, decided "
                                               "for diskseq %" PRIu64 ")",
                                               w->disk, seq, w->diskseq));
        return 0;
}

/* The interlock: an off on a required or unknown disk needs force. The need is derived again
 * when the caller can. Returns 0, -EPERM or -errno. */
static int check_interlock(const FlagWrite *w, char **ret_reason) {
        _cleanup_free_ char *why = NULL;
        Need need = w->need;
        int r;

        if (w->value != 0 || w->force)
                return 0;
        if (w->need_of) {
                r = w->need_of(w->disk, w->diskseq, &need, &why, w->userdata);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail(ret_reason, -ESTALE,
                                    strdup_printf("%s: not turning stable writes off: its need cannot be "
                                                  "derived again (%s)",
                                                  w->disk, why ?: strerror(-r)));
        }
        if (need_is_protected(need) || need_is_protected(w->need))
                return fail(ret_reason, -EPERM,
                            strdup_printf("%s: refusing to turn stable writes off: its need is %s (force "
                                          "required)",
                                          w->disk, need_to_string(MAX(need, w->need))));
        return 0;
}

/* Reads the flag before the write into *ret (callers write only a flag they have read) and
 * records it as what the kernel set, before anything the project writes (history.h). Returns 0,
 * -ENODEV when the flag is gone, or -errno; with *ret_reason. */
static int read_before(int disk_fd, const char *runtime_dir, const FlagWrite *w, dev_t devnum,
                       long long *ret, char **ret_reason) {
        int r = read_at(disk_fd, FLAG_ATTR, ret);

        /* The kernel never removes the flag of a disk that stays, and del_gendisk() removes
         * queue/'s attributes first. */
        if (r == -ENOENT)
                return fail(ret_reason, -ENODEV,
                            strdup_printf("%s: the disk was removed while being applied (its "
                                          "queue/stable_writes is gone)",
                                          w->disk));
        if (r < 0 || *ret > 1)
                return fail(ret_reason, r < 0 ? r : -EIO,
                            strdup_printf("%s: cannot read queue/stable_writes: %s", w->disk,
                                          r < 0 ? strerror(-r) : "not 0 or 1"));
        if (w->diskseq != 0 && runtime_dir) {
                r = history_note_first(runtime_dir, w->disk, w->diskseq, devnum, (int) *ret, false,
                                       w->writer);
                if (r < 0)
                        log_warning_errno(r, "%s: cannot record the flag's history in %s/history: %m",
                                          w->disk, runtime_dir);
        }
        return 0;
}

/* Writes value (w->value) to the flag, never through a symbolic link, never blocking on a FIFO
 * put in its place, and reads it back into *ret_now. Returns 0, -ENODEV when the disk went away,
 * -EIO when it reads otherwise, or -errno; with *ret_reason. */
static int write_and_read_back(int disk_fd, const FlagWrite *w, char value, long long *ret_now,
                               char **ret_reason) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = openat(disk_fd, FLAG_ATTR, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0 || write(fd, &value, 1) != 1) {
                r = -errno;
                if (check_identity(disk_fd, w, NULL, NULL) < 0 || r == -ENOENT || r == -ENODEV)
                        return fail(ret_reason, -ENODEV,
                                    strdup_printf("%s: the disk was removed while being applied", w->disk));
                return fail(ret_reason, r,
                            strdup_printf("%s: cannot write %c to queue/stable_writes: %s", w->disk, value,
                                          strerror(-r)));
        }
        r = read_at(disk_fd, FLAG_ATTR, ret_now);
        /* Gone after the write: del_gendisk() removes queue/'s attributes before "dev". */
        if (r == -ENOENT || r == -ENODEV ||
            ((r < 0 || *ret_now != w->value) && check_identity(disk_fd, w, NULL, NULL) < 0))
                return fail(ret_reason, -ENODEV,
                            strdup_printf("%s: the disk was removed while being applied", w->disk));
        if (r < 0 || *ret_now != w->value)
                return fail(ret_reason, r < 0 ? r : -EIO,
                            strdup_printf("%s: wrote %c to queue/stable_writes but it reads %s", w->disk,
                                          value, r < 0 ? strerror(-r) : (*ret_now ? "1" : "0")));
        return 0;
}

int flag_write_at(int disk_fd, const char *runtime_dir, const FlagWrite *w, int *ret_now,
                  char **ret_reason) {
        char value = w->value ? '1' : '0';
        long long before, now;
        dev_t devnum = 0;
        int r;

        if (ret_reason)
                *ret_reason = NULL;
        if (!device_name_is_valid(w->disk) || (w->value != 0 && w->value != 1))
                return -EINVAL;
        r = check_identity(disk_fd, w, &devnum, ret_reason);
        if (r < 0)
                return r;
        r = read_before(disk_fd, runtime_dir, w, devnum, &before, ret_reason);
        if (r < 0)
                return r;
        if (before == w->value) {
                if (ret_now)
                        *ret_now = (int) before;
                return 0;
        }
        r = check_interlock(w, ret_reason);
        if (r < 0)
                return r;
        if (test_refuse()) /* a failure, not the interlock's refusal */
                return fail(
                        ret_reason, -EROFS,
                        strdup_printf("%s: not writing %c to queue/stable_writes: refused by the test hook "
                                      "STABLEPAGES_TEST_FLAG_WRITE=refuse (%s)",
                                      w->disk, value, w->writer ?: "?"));
        r = write_and_read_back(disk_fd, w, value, &now, ret_reason);
        if (r < 0)
                return r;
        if (w->diskseq != 0 && runtime_dir) {
                r = history_note_change(runtime_dir, w->disk, w->diskseq, devnum, (int) before, (int) now,
                                        w->writer);
                if (r < 0)
                        log_warning_errno(r, "%s: cannot record the change in %s/history: %m", w->disk,
                                          runtime_dir);
        }
        if (ret_now)
                *ret_now = (int) now;
        return 0;
}

int flag_write(const char *sysfs_root, const char *runtime_dir, const FlagWrite *w, int *ret_now,
               char **ret_reason) {
        _cleanup_close_ int fd = flag_pin_disk(sysfs_root, w->disk);

        if (ret_reason)
                *ret_reason = NULL;
        if (fd == -ENOENT)
                return fail(ret_reason, -ENODEV,
                            strdup_printf("%s: no such disk under %s/block", w->disk, sysfs_root));
        if (fd < 0)
                return fail(ret_reason, fd,
                            strdup_printf("%s: cannot open %s/block/%s: %s", w->disk, sysfs_root, w->disk,
                                          strerror(-fd)));
        return flag_write_at(fd, runtime_dir, w, ret_now, ret_reason);
}
