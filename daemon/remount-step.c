/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every step of the cycle's child uses: its report, the journal's stage, the stop (SIGTERM)
 * and the test hook's pause. */
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>

#include "remount-cycle-internal.h"
#include "util.h"

/* How long systemd may take for a stop or start job of a mount unit (unless a test says). */
#define SYSTEMD_JOB_TIMEOUT_USEC (5 * 60 * USEC_PER_SEC)

volatile sig_atomic_t cycle_stop_requested;

uint64_t cycle_job_timeout(const Cycle *c) {
        return c->job->job_timeout_usec ?: SYSTEMD_JOB_TIMEOUT_USEC;
}

/* Sets the outcome, the errno and the message of the report. */
void cycle_report(RemountReport *rep, RemountOutcome outcome, int error, const char *format, ...) {
        va_list ap;

        rep->outcome = outcome;
        rep->error = error;
        va_start(ap, format);
        vsnprintf(rep->message, sizeof rep->message, format, ap);
        va_end(ap);
}

/* Reports the result r of a check: > 0 refused for reason, < 0 failed. */
void cycle_report_check(RemountReport *rep, int r, const char *reason) {
        cycle_report(rep, r > 0 ? REMOUNT_REFUSED : REMOUNT_FAILED, r > 0 ? 0 : -r, "%s",
                     r > 0 ? reason : strerror(-r));
}

int cycle_save_stage(Cycle *c, RemountStage stage) {
        c->journal->stage = stage;
        c->rep->stage = stage;
        return remount_journal_save(c->job->journal_path, c->journal);
}

/* Whether the daemon stops: SIGTERM came, or waits while blocked (cycle_block_stop_signals()). */
bool cycle_stop_pending(void) {
        sigset_t pending;

        if (cycle_stop_requested)
                return true;
        return sigpending(&pending) >= 0 &&
               (sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT));
}

/* From the unmount on, the cycle goes to its end: SIGTERM may not interrupt a single call
 * (sd-bus gives up a call whose poll is interrupted). */
void cycle_block_stop_signals(void) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
}

/* Test hook: tells the test which step the cycle reached and waits for its go (a line
 * written to PAUSE.go), or for SIGTERM. No reader on PAUSE: no pause. */
void cycle_pause_at(Cycle *c, const char *step) {
        _cleanup_free_ char *go = NULL;
        _cleanup_close_ int fd = -EBADF;

        if (!c->job->pause_fifo || cycle_stop_pending())
                return;
        fd = open(c->job->pause_fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return; /* nobody listens */
        dprintf(fd, "%s %d\n", step, (int) getpid());
        close(TAKE_FD(fd));
        go = strdup_printf("%s.go", c->job->pause_fifo);
        if (!go)
                return;
        fd = open(go, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return;
        while (!cycle_stop_pending()) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                char ch;
                if (poll(&p, 1, 100) <= 0)
                        continue;
                while ((p.revents & POLLIN) && read(fd, &ch, 1) == 1)
                        if (ch == '\n')
                                return;
                if (p.revents & POLLHUP)
                        return; /* the writer went without a line */
        }
}

static void on_sigterm(int sig) {
        cycle_stop_requested = 1;
}

/* SIGTERM (the daemon stops, or systemd stops its cgroup) sets cycle_stop_requested and interrupts
 * waits; SIGPIPE (the daemon died: the report pipe has no reader) is ignored. */
void cycle_setup_signals(void) {
        struct sigaction sa = { .sa_handler = on_sigterm };
        sigset_t mask;

        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGINT, &sa, NULL);
        (void) signal(SIGPIPE, SIG_IGN);
        /* The daemon blocks them for its event loop; the child must receive them. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        (void) sigprocmask(SIG_UNBLOCK, &mask, NULL);
}
