/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A throw-away directory tree for unit tests: a fake sysfs root (or any files) under a
 * mkdtemp() directory, removed again with tree_free(). Paths are relative to the root. */

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tests.h"
#include "util.h"

/* Creates the root; returns a new string or aborts the test. */
static inline char *tree_new(void) {
        char *dir = strdup("/tmp/stablepages-unit-XXXXXX");
        if (!dir || !mkdtemp(dir)) {
                perror("mkdtemp");
                exit(1);
        }
        /* Readable for the unprivileged children of the EACCES checks. */
        (void) chmod(dir, 0755);
        return dir;
}

/* root/rel as a new string. */
static inline char *tree_path(const char *root, const char *rel) {
        char *p = path_join(root, rel);
        if (!p)
                exit(1);
        return p;
}

/* Creates the parent directories of root/rel. */
static inline bool tree_exists(const char *root, const char *rel) {
        _cleanup_free_ char *p = tree_path(root, rel);
        return access(p, F_OK) == 0;
}

static inline void tree_parents(const char *root, const char *rel) {
        _cleanup_free_ char *p = tree_path(root, rel);
        char *slash = strrchr(p, '/');
        if (slash) {
                *slash = '\0';
                CHECK(mkdir_p(p, 0755) == 0);
        }
}

/* Writes content to root/rel (parents created, file replaced). */
static inline void tree_put(const char *root, const char *rel, const char *content) {
        _cleanup_free_ char *p = tree_path(root, rel);
        _cleanup_close_ int fd = -EBADF;

        tree_parents(root, rel);
        (void) unlink(p);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        if (fd >= 0)
                CHECK(write(fd, content, strlen(content)) == (ssize_t) strlen(content));
}

static inline void tree_mkdir(const char *root, const char *rel) {
        _cleanup_free_ char *p = tree_path(root, rel);
        CHECK(mkdir_p(p, 0755) == 0);
}

static inline void tree_symlink(const char *root, const char *rel, const char *target) {
        _cleanup_free_ char *p = tree_path(root, rel);
        tree_parents(root, rel);
        (void) unlink(p);
        CHECK(symlink(target, p) == 0);
}

static inline void tree_mkfifo(const char *root, const char *rel) {
        _cleanup_free_ char *p = tree_path(root, rel);
        tree_parents(root, rel);
        (void) unlink(p);
        CHECK(mkfifo(p, 0644) == 0);
}

static inline void tree_chmod(const char *root, const char *rel, mode_t mode) {
        _cleanup_free_ char *p = tree_path(root, rel);
        CHECK(chmod(p, mode) == 0);
}

static inline int tree_rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        /* A directory a test made unreadable (mode 0, which only root ignores): readable
         * again, then emptied and removed like the others. */
        if (type == FTW_DNR && chmod(path, 0700) == 0)
                return nftw(path, tree_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return remove(path) < 0 ? -errno : 0;
}

/* Removes root/rel and everything below it (never following symlinks). */
static inline void tree_rm(const char *root, const char *rel) {
        _cleanup_free_ char *p = tree_path(root, rel);
        struct stat st;
        if (lstat(p, &st) < 0)
                return;
        (void) chmod(p, 0755);
        CHECK(nftw(p, tree_rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0);
}

/* Removes the whole tree and frees root. */
static inline void tree_free(char *root) {
        if (!root)
                return;
        CHECK(nftw(root, tree_rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0);
        free(root);
}

/* Runs fn(userdata) in a child process, as the unprivileged user nobody when we are root
 * (root ignores file modes: EACCES needs another user), with an alarm of 5 s so that a
 * call that blocks fails the check instead of hanging the test. Returns fn's result, or
 * -ETIME when the child was killed by the alarm, -ECHILD when it died otherwise. */
static inline int run_in_child(int (*fn)(void *), void *userdata, bool unprivileged) {
        int status;
        pid_t pid;

        fflush(NULL);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                tests_failed = 0; /* the child reports its own failures */
                alarm(5);
                if (unprivileged && geteuid() == 0 &&
                    (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
                        _exit(125);
                int r = fn(userdata);
                fflush(NULL);
                _exit(r < 0 ? (-r & 0x7f) : 0);
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        if (WIFSIGNALED(status))
                return WTERMSIG(status) == SIGALRM ? -ETIME : -ECHILD;
        return -WEXITSTATUS(status);
}
