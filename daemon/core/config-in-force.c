/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which configuration is in force (config-in-force.h): the daemon's lock on the runtime dir, the
 * copy it saves there, and the one rule that picks the files or, when they have errors, that copy. */
#include <fcntl.h>

#include "config-in-force.h"
#include "config-show.h"
#include "util.h"

int config_in_force_lock(const char *runtime_dir, pid_t *ret_holder) {
        _cleanup_free_ char *path = path_join(runtime_dir, CONFIG_IN_FORCE_LOCK);
        struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
        int fd;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        if (fcntl(fd, F_SETLK, &l) == 0)
                return fd;
        int r = errno == EACCES || errno == EAGAIN ? -EBUSY : -errno;
        if (r == -EBUSY && ret_holder && fcntl(fd, F_GETLK, &l) == 0)
                *ret_holder = l.l_type == F_UNLCK ? 0 : l.l_pid;
        close(fd);
        return r;
}

/* The process that holds the lock of runtime_dir, or 0 when none does. */
static pid_t lock_holder(const char *runtime_dir) {
        _cleanup_free_ char *path = path_join(runtime_dir, CONFIG_IN_FORCE_LOCK);
        _cleanup_close_ int fd = -EBADF;
        struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

        if (!path)
                return 0;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fcntl(fd, F_GETLK, &l) < 0 || l.l_type == F_UNLCK)
                return 0;
        return l.l_pid;
}

int config_in_force_save(const char *runtime_dir, const Config *c) {
        _cleanup_free_ char *path = path_join(runtime_dir, CONFIG_IN_FORCE_FILE), *body = config_format(c);
        _cleanup_free_ char *text = NULL;

        if (!path || !body)
                return -ENOMEM;
        text = strdup_printf(
                "# Written by stablepagesd (pid %d) at each load. The udev applier uses it while "
                "the\n# files have errors (stablepages.conf(5)). \"Devices=.\" manages no disk.\n%s",
                (int) getpid(), body);
        if (!text)
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text), 0644);
}

int config_load_in_force(const char *config_file, const char *dropin_dir, const char *runtime_dir,
                         Config *ret, ConfigDiags *diags, char **ret_note) {
        _cleanup_(config_diags_done) ConfigDiags copy_diags = {};
        _cleanup_(config_done) Config copy = {};
        _cleanup_free_ char *path = NULL;
        pid_t pid;
        int r;

        *ret_note = NULL;
        r = config_load(config_file, dropin_dir, ret, diags);
        if (r < 0 || config_diags_errors(diags) == 0)
                return r;
        pid = lock_holder(runtime_dir);
        if (pid == 0)
                return 0; /* no daemon: the files without their bad lines, as it will read them */

        path = path_join(runtime_dir, CONFIG_IN_FORCE_FILE);
        if (!path || config_init_defaults(&copy) < 0)
                return -ENOMEM;
        r = config_parse_file(&copy, path, &copy_diags);
        if (r < 0)
                return r;
        if (copy_diags.n > 0) {
                *ret_note = strdup_printf(
                        "the configuration files have errors, and the configuration in force in "
                        "stablepagesd (pid %d) cannot be read from %s (%s): using the files "
                        "without their bad lines",
                        (int) pid, path, copy_diags.items[0].message);
                return *ret_note ? -EIO : -ENOMEM;
        }
        *ret_note = strdup_printf("the configuration files have errors: deciding with the configuration "
                                  "stablepagesd (pid %d) keeps in force, as it does (%s)",
                                  (int) pid, path);
        if (!*ret_note)
                return -ENOMEM;
        config_done(ret);
        *ret = copy;
        copy = (Config){};
        return 0;
}
