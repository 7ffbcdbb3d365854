/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The textual polkit agent (polkit-agent.h): pkttyagent started for this process, waited for
 * until it registers, and stopped. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "config-build.h"
#include "log.h"
#include "polkit-agent.h"
#include "util.h"

/* How long to wait for the agent to register: polkitd may have to be started by the bus first. */
#define AGENT_REGISTER_TIMEOUT_MSEC (30 * 1000)

static pid_t agent_pid = 0;

/* The child: becomes pkttyagent, which closes notify_fd once registered. Every other file
 * stablepagesctl opened (the bus connection) is closed on exec. */
_noreturn_ static void exec_agent(int notify_fd) {
        char fd[16];

        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
        /* pipe2(O_CLOEXEC): the agent must inherit its end. */
        if (fcntl(notify_fd, F_SETFD, 0) < 0)
                _exit(EXIT_FAILURE);
        snprintf(fd, sizeof fd, "%d", notify_fd);
        execl(POLKIT_AGENT_PATH, POLKIT_AGENT_PATH, "--notify-fd", fd, "--fallback", (char *) NULL);
        _exit(EXIT_FAILURE);
}

int polkit_agent_open(void) {
        _cleanup_close_ int rfd = -EBADF;
        int fds[2];

        if (agent_pid > 0)
                return 1;
        /* Root needs no authorization; without a terminal, nobody could answer. */
        if (geteuid() == 0 || !isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
                return 0;
        if (access(POLKIT_AGENT_PATH, X_OK) < 0) {
                log_debug_errno(errno, "No polkit agent: %s: %m", POLKIT_AGENT_PATH);
                return 0;
        }
        if (pipe2(fds, O_CLOEXEC) < 0)
                return log_error_errno(errno, "Cannot start the polkit agent: %m");
        rfd = fds[0];
        fflush(stdout);
        fflush(stderr);
        agent_pid = fork();
        if (agent_pid < 0) {
                agent_pid = 0;
                close(fds[1]);
                return log_error_errno(errno, "Cannot start the polkit agent: %m");
        }
        if (agent_pid == 0)
                exec_agent(fds[1]);
        close(fds[1]);

        /* Registered: the agent closes its end (an agent that failed exits, which closes it too). */
        struct pollfd p = { .fd = rfd, .events = POLLIN };
        int r;
        do
                r = poll(&p, 1, AGENT_REGISTER_TIMEOUT_MSEC);
        while (r < 0 && errno == EINTR);
        if (r == 0)
                log_warning("The polkit agent %s did not register within %d s; going on without waiting.",
                            POLKIT_AGENT_PATH, AGENT_REGISTER_TIMEOUT_MSEC / 1000);
        return 1;
}

void polkit_agent_close(void) {
        if (agent_pid <= 0)
                return;
        (void) kill(agent_pid, SIGTERM);
        (void) kill(agent_pid, SIGCONT);
        (void) waitpid(agent_pid, NULL, 0);
        agent_pid = 0;
}
