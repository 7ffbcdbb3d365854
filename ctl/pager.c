/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pager of long output (pager.h): a child that runs $SYSTEMD_PAGER, $PAGER or less on our
 * standard output, and the wait for it to end. */
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-login.h>

#include "log.h"
#include "pager.h"
#include "util.h"

static pid_t pager_pid = 0;

/* Whether we run with more privileges than the user at the terminal has. */
static bool running_escalated(void) {
        uid_t owner;

        if (geteuid() != 0)
                return false;
        if (getenv("SUDO_UID") || getuid() != 0)
                return true;
        /* su, doas, or anything else that changes user within a session; no session: assume so. */
        return sd_pid_get_owner_uid(0, &owner) < 0 || owner != 0;
}

/* The child: becomes the pager, reading fd. */
_noreturn_ static void exec_pager(int fd, const char *env_pager, bool secure) {
        char buf[4096];
        ssize_t n;

        if (dup2(fd, STDIN_FILENO) < 0)
                _exit(EXIT_FAILURE);
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (setenv("LESS", "FRSXMK", 0) < 0 ||
            (secure ? setenv("LESSSECURE", "1", 1) : unsetenv("LESSSECURE")) < 0)
                _exit(EXIT_FAILURE);
        if (env_pager)
                execl("/bin/sh", "sh", "-c", env_pager, (char *) NULL);
        else {
                execlp("less", "less", (char *) NULL);
                if (!secure) /* only less has a secure mode */
                        execlp("more", "more", (char *) NULL);
        }
        /* None runs: copy through. */
        while ((n = read(STDIN_FILENO, buf, sizeof buf)) > 0)
                if (write(STDOUT_FILENO, buf, (size_t) n) != n)
                        _exit(EXIT_FAILURE);
        _exit(n < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}

void pager_open(void) {
        const char *env_pager = getenv("SYSTEMD_PAGER") ?: getenv("PAGER");
        int fds[2], secure;

        if (pager_pid > 0 || !isatty(STDOUT_FILENO))
                return;
        if (env_pager && (strspn(env_pager, " \t") == strlen(env_pager) || streq(env_pager, "cat")))
                return; /* turned off */
        const char *s = secure_getenv("SYSTEMD_PAGERSECURE");
        secure = s ? parse_boolean(s) : -ENXIO;
        if (secure == -EINVAL) {
                log_warning("Cannot parse $SYSTEMD_PAGERSECURE=%s, using the pager in secure mode.", s);
                secure = true;
        }
        if (secure == -ENXIO) {
                secure = running_escalated();
                if (secure)
                        env_pager = NULL; /* not ours to trust */
        }
        if (pipe2(fds, O_CLOEXEC) < 0)
                return;
        pager_pid = fork();
        if (pager_pid < 0) {
                pager_pid = 0;
                close(fds[0]);
                close(fds[1]);
                return;
        }
        if (pager_pid == 0)
                exec_pager(fds[0], env_pager, secure);
        if (dup2(fds[1], STDOUT_FILENO) < 0)
                log_warning_errno(errno, "Cannot start the pager: %m");
        close(fds[0]);
        close(fds[1]);
}

void pager_close(void) {
        if (pager_pid <= 0)
                return;
        fflush(stdout);
        close(STDOUT_FILENO);
        (void) waitpid(pager_pid, NULL, 0);
        pager_pid = 0;
}
