/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A call that can hang in the kernel, made in a child process and waited for a bounded time
 * (bounded.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bounded.h"
#include "macro.h"

/* What the grandchild writes to the pipe. */
typedef struct BoundedAnswer {
        int r;
        uint64_t value;
} BoundedAnswer;

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* True when the child pid ended within timeout_usec (then reaped). */
static bool child_ended(pid_t pid, uint64_t timeout_usec) {
        uint64_t deadline = now_usec() + timeout_usec;
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);

        if (pidfd >= 0) {
                struct pollfd p = { .fd = pidfd, .events = POLLIN };
                int ms = (int) ((timeout_usec + USEC_PER_MSEC - 1) / USEC_PER_MSEC);
                while (poll(&p, 1, ms) < 0 && errno == EINTR)
                        ms = (int) ((deadline - MIN(deadline, now_usec()) + USEC_PER_MSEC - 1) /
                                    USEC_PER_MSEC);
                close(pidfd);
                return waitpid(pid, NULL, WNOHANG) == pid;
        }
        for (;;) { /* no pidfd (before Linux 5.3): look every millisecond */
                if (waitpid(pid, NULL, WNOHANG) == pid)
                        return true;
                if (now_usec() >= deadline)
                        return false;
                (void) usleep(1000);
        }
}

/* The child: runs fn in a grandchild that writes its answer to fd, and waits for it at most
 * timeout_usec, killing it when the time is up. Exits 0 when the grandchild ended. */
_noreturn_ static void bounded_child(bounded_fn_t fn, void *userdata, uint64_t timeout_usec, int fd) {
        pid_t pid = fork();

        if (pid < 0)
                _exit(2);
        if (pid == 0) {
                BoundedAnswer a = { 0 };
                a.r = fn(userdata, &a.value);
                _exit(write(fd, &a, sizeof a) == (ssize_t) sizeof a ? 0 : 1);
        }
        if (child_ended(pid, timeout_usec))
                _exit(0);
        (void) kill(pid, SIGKILL); /* not reaped: it may take time to leave the kernel */
        _exit(1);
}

int bounded_call(bounded_fn_t fn, void *userdata, uint64_t timeout_usec, uint64_t *ret) {
        BoundedAnswer a;
        int fds[2], status = 0;
        pid_t pid;

        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(fds[0]);
                close(fds[1]);
                return r;
        }
        if (pid == 0) {
                close(fds[0]);
                bounded_child(fn, userdata, timeout_usec, fds[1]);
        }
        close(fds[1]);
        /* The child ends within timeout_usec, whatever the grandchild does. */
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (read(fds[0], &a, sizeof a) != (ssize_t) sizeof a)
                a = (BoundedAnswer){ .r = !WIFEXITED(status)         ? -ECHILD
                                          : WEXITSTATUS(status) == 1 ? -ETIMEDOUT
                                          : WEXITSTATUS(status) == 2 ? -EAGAIN /* fork failed */
                                                                     : -EIO };
        close(fds[0]);
        if (a.r >= 0 && ret)
                *ret = a.value;
        return a.r;
}
