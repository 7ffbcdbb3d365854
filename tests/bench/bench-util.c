/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Process measurements of tests/bench/run, section 2 (the cost of the daemon).
 *
 *   bench-util start [OPTIONS] -- COMMAND [ARGS...]
 *       Starts COMMAND and times its start-up from the moment of execve(): with --notify,
 *       until it sends READY=1 on a NOTIFY_SOCKET this program listens on; with
 *       --bus-name=NAME, until NAME gets an owner on the system bus (NameOwnerChanged).
 *       After both (and --settle-ms=MS more, default 500) it prints one line
 *         pid=P notify_us=U bus_us=U rss_kib=K pss_kib=K cpu_ms=C sched_us=S
 *       (VmRSS, Pss of smaps_rollup, utime+stime of /proc/P/stat in 10 ms ticks, the run time
 *       of its live threads from schedstat in us) and, with --stop, stops
 *       COMMAND with SIGTERM and prints "exit=N"; without --stop it stays until COMMAND exits
 *       (the caller kills COMMAND by P), then prints "exit=N". COMMAND's output goes to
 *       --log=FILE (default /dev/null). COMMAND gets SIGTERM when this program dies.
 *   bench-util repeat N [OPTIONS] -- COMMAND [ARGS...]
 *       Runs COMMAND N times, one after the other, and prints the CPU time of the runs
 *       (user+system, from wait4()) and their wall time, per run:
 *         runs=N cpu_us_per_run=C user_us_per_run=U sys_us_per_run=S wall_us_per_run=W
 *   bench-util attr-write FILE VALUE N
 *       Writes VALUE to FILE N times (open, write, close: what a udev ATTR{} assignment does)
 *       and prints this process's CPU time per write: "writes=N cpu_ns_per_write=C".
 *
 * Options of start and repeat:
 *   --tmpfs=DIR        mount a private tmpfs on DIR, in a private mount namespace
 *   --bind=SRC:DST     bind-mount SRC on DST, in that namespace
 * (start: in COMMAND's namespace only; repeat: once, for all runs).
 * Exit status 0 on success, 1 on failure, 2 on usage errors. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#define MAX_MOUNTS 16
#define _cleanup_(f) __attribute__((cleanup(f)))

static const char *arg_tmpfs[MAX_MOUNTS], *arg_bind[MAX_MOUNTS], *arg_bus_name, *arg_log = "/dev/null";
static unsigned arg_n_tmpfs, arg_n_bind, arg_settle_ms = 500, arg_timeout_sec = 60;
static bool arg_notify, arg_stop;

static uint64_t now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

/* Enters a private mount namespace with the --tmpfs and --bind mounts; 0 or -errno. */
static int setup_namespace(void) {
        if (arg_n_tmpfs == 0 && arg_n_bind == 0)
                return 0;
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        for (unsigned i = 0; i < arg_n_tmpfs; i++)
                if (mount("tmpfs", arg_tmpfs[i], "tmpfs", 0, "mode=0755") < 0) {
                        fprintf(stderr, "tmpfs on %s: %m\n", arg_tmpfs[i]);
                        return -errno;
                }
        for (unsigned i = 0; i < arg_n_bind; i++) {
                char src[4096];
                const char *colon = strchr(arg_bind[i], ':');
                if (!colon || (size_t) (colon - arg_bind[i]) >= sizeof src)
                        return -EINVAL;
                memcpy(src, arg_bind[i], (size_t) (colon - arg_bind[i]));
                src[colon - arg_bind[i]] = '\0';
                if (mount(src, colon + 1, NULL, MS_BIND, NULL) < 0) {
                        fprintf(stderr, "bind %s on %s: %m\n", src, colon + 1);
                        return -errno;
                }
        }
        return 0;
}

/* "KEY: <n> kB" of a /proc file, or 0. */
static unsigned long proc_kib(pid_t pid, const char *file, const char *key) {
        char path[64], line[256];
        unsigned long v = 0;
        size_t len = strlen(key);
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, file);
        f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, key, len) == 0 && line[len] == ':') {
                        v = strtoul(line + len + 1, NULL, 10);
                        break;
                }
        fclose(f);
        return v;
}

/* utime+stime of /proc/pid/stat (all threads) in milliseconds, or 0. */
static unsigned long proc_cpu_ms(pid_t pid) {
        char path[64], buf[4096];
        unsigned long utime = 0, stime = 0;
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        char *p = strrchr(buf, ')'); /* comm may hold spaces */
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
                return 0;
        return (utime + stime) * 1000 / (unsigned long) sysconf(_SC_CLK_TCK);
}

/* Run time of pid's live threads from /proc/pid/task/<tid>/schedstat, in microseconds, or 0. */
static unsigned long proc_sched_us(pid_t pid) {
        char path[64];
        unsigned long long sum = 0;
        struct dirent *de;
        DIR *d;

        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char file[384];
                unsigned long long ns;
                FILE *f;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(file, sizeof file, "%s/%s/schedstat", path, de->d_name);
                f = fopen(file, "re");
                if (!f)
                        continue;
                if (fscanf(f, "%llu", &ns) == 1)
                        sum += ns;
                fclose(f);
        }
        closedir(d);
        return (unsigned long) (sum / 1000);
}

/* Creates the notify socket in a fresh directory; returns the fd, path in *ret_path. */
static int notify_socket(char *dir, size_t size, char *ret_path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        snprintf(dir, size, "/tmp/bench-notify.XXXXXX");
        if (!mkdtemp(dir))
                return -errno;
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s/notify", dir);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        strcpy(ret_path, sa.sun_path);
        return fd;
}

/* True when a datagram on fd holds a READY=1 line. */
static bool notify_ready(int fd) {
        char buf[4096];
        ssize_t n;

        while ((n = recv(fd, buf, sizeof buf - 1, 0)) > 0) {
                buf[n] = '\0';
                for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
                        if (strcmp(l, "READY=1") == 0)
                                return true;
        }
        return false;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *e) {
        const char *name, *old, *new;
        uint64_t *when = userdata;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) >= 0 && new[0] && *when == 0)
                *when = now_us();
        return 0;
}

static int do_start(char **cmd) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        char dir[64] = "", sock[128] = "";
        uint64_t *t_exec, notify_at = 0, bus_at = 0;
        int nfd = -1, r, status;
        pid_t pid;

        t_exec = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (t_exec == MAP_FAILED)
                return 1;
        if (arg_notify) {
                nfd = notify_socket(dir, sizeof dir, sock);
                if (nfd < 0) {
                        fprintf(stderr, "notify socket: %s\n", strerror(-nfd));
                        return 1;
                }
        }
        if (arg_bus_name) {
                char match[256];
                snprintf(match, sizeof match,
                         "type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='%s'",
                         arg_bus_name);
                r = sd_bus_open_system(&bus);
                if (r >= 0)
                        r = sd_bus_add_match(bus, NULL, match, on_owner_changed, &bus_at);
                if (r < 0) {
                        fprintf(stderr, "system bus: %s\n", strerror(-r));
                        return 1;
                }
                if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "GetNameOwner", NULL, NULL, "s",
                                       arg_bus_name) >= 0) {
                        fprintf(stderr, "%s already has an owner\n", arg_bus_name);
                        return 1;
                }
        }

        pid = fork();
        if (pid < 0)
                return 1;
        if (pid == 0) {
                int log = open(arg_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                if (log < 0 || dup2(log, STDOUT_FILENO) < 0 || dup2(log, STDERR_FILENO) < 0 ||
                    prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || setup_namespace() < 0)
                        _exit(127);
                if (sock[0])
                        setenv("NOTIFY_SOCKET", sock, 1);
                *t_exec = now_us();
                execvp(cmd[0], cmd);
                _exit(127);
        }

        uint64_t deadline = now_us() + (uint64_t) arg_timeout_sec * 1000000;
        while ((arg_notify && !notify_at) || (arg_bus_name && !bus_at)) {
                struct pollfd p[2] = { { .fd = nfd, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
                if (bus) {
                        while ((r = sd_bus_process(bus, NULL)) > 0)
                                ;
                        /* The name may come before READY=1: then only the notify socket is
                         * waited for (going on without polling spun until the deadline, and
                         * never read READY=1). */
                        if (!bus_at) {
                                p[1].fd = sd_bus_get_fd(bus);
                                p[1].events = (short) sd_bus_get_events(bus);
                        }
                }
                if (waitpid(pid, &status, WNOHANG) == pid) {
                        fprintf(stderr, "%s exited during start-up (status 0x%x)\n", cmd[0], status);
                        return 1;
                }
                if (now_us() > deadline) {
                        fprintf(stderr, "%s not ready within %u s\n", cmd[0], arg_timeout_sec);
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                        return 1;
                }
                if (poll(p, 2, 20) > 0 && (p[0].revents & POLLIN) && notify_ready(nfd) && !notify_at)
                        notify_at = now_us();
        }
        usleep(arg_settle_ms * 1000);
        printf("pid=%d notify_us=%" PRIu64 " bus_us=%" PRIu64
               " rss_kib=%lu pss_kib=%lu cpu_ms=%lu sched_us=%lu\n",
               (int) pid, notify_at ? notify_at - *t_exec : 0, bus_at ? bus_at - *t_exec : 0,
               proc_kib(pid, "status", "VmRSS"), proc_kib(pid, "smaps_rollup", "Pss"), proc_cpu_ms(pid),
               proc_sched_us(pid));
        fflush(stdout);
        if (nfd >= 0) {
                close(nfd);
                unlink(sock);
                rmdir(dir);
        }
        if (arg_stop) {
                kill(pid, SIGTERM);
                for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) != pid; i++)
                        usleep(10000);
                if (kill(pid, 0) == 0) {
                        kill(pid, SIGKILL);
                        waitpid(pid, &status, 0);
                }
        } else
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
        printf("exit=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        return 0;
}

static int do_repeat(long n, char **cmd) {
        uint64_t cpu_user = 0, cpu_sys = 0, start;

        if (setup_namespace() < 0) {
                fprintf(stderr, "cannot set up the mount namespace: %m\n");
                return 1;
        }
        start = now_us();
        for (long i = 0; i < n; i++) {
                struct rusage ru;
                int status;
                pid_t pid = fork();

                if (pid < 0)
                        return 1;
                if (pid == 0) {
                        int log = open(arg_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                        if (log < 0 || dup2(log, STDOUT_FILENO) < 0 || dup2(log, STDERR_FILENO) < 0)
                                _exit(127);
                        execvp(cmd[0], cmd);
                        _exit(127);
                }
                if (wait4(pid, &status, 0, &ru) != pid)
                        return 1;
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        fprintf(stderr, "%s failed (status 0x%x)\n", cmd[0], status);
                        return 1;
                }
                cpu_user += (uint64_t) ru.ru_utime.tv_sec * 1000000 + (uint64_t) ru.ru_utime.tv_usec;
                cpu_sys += (uint64_t) ru.ru_stime.tv_sec * 1000000 + (uint64_t) ru.ru_stime.tv_usec;
        }
        printf("runs=%ld cpu_us_per_run=%" PRIu64 " user_us_per_run=%" PRIu64 " sys_us_per_run=%" PRIu64
               " wall_us_per_run=%" PRIu64 "\n",
               n, (cpu_user + cpu_sys) / (uint64_t) n, cpu_user / (uint64_t) n, cpu_sys / (uint64_t) n,
               (now_us() - start) / (uint64_t) n);
        return 0;
}

static int do_attr_write(const char *path, const char *value, long n) {
        struct rusage a, b;
        size_t len = strlen(value);

        getrusage(RUSAGE_SELF, &a);
        for (long i = 0; i < n; i++) {
                int fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, value, len) != (ssize_t) len) {
                        fprintf(stderr, "%s: %m\n", path);
                        return 1;
                }
                close(fd);
        }
        getrusage(RUSAGE_SELF, &b);
        uint64_t ns =
                ((uint64_t) (b.ru_utime.tv_sec + b.ru_stime.tv_sec - a.ru_utime.tv_sec - a.ru_stime.tv_sec) *
                         1000000 +
                 (uint64_t) (b.ru_utime.tv_usec + b.ru_stime.tv_usec) -
                 (uint64_t) (a.ru_utime.tv_usec + a.ru_stime.tv_usec)) *
                1000;
        printf("writes=%ld cpu_ns_per_write=%" PRIu64 "\n", n, ns / (uint64_t) n);
        return 0;
}

static int parse_options(int argc, char **argv) {
        static const struct option options[] = {
                { "notify", no_argument, NULL, 'n' },
                { "bus-name", required_argument, NULL, 'b' },
                { "settle-ms", required_argument, NULL, 's' },
                { "stop", no_argument, NULL, 'S' },
                { "log", required_argument, NULL, 'l' },
                { "timeout-sec", required_argument, NULL, 't' },
                { "tmpfs", required_argument, NULL, 'T' },
                { "bind", required_argument, NULL, 'B' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "+", options, NULL)) >= 0)
                switch (c) {
                case 'n':
                        arg_notify = true;
                        break;
                case 'b':
                        arg_bus_name = optarg;
                        break;
                case 's':
                        arg_settle_ms = (unsigned) atoi(optarg);
                        break;
                case 'S':
                        arg_stop = true;
                        break;
                case 'l':
                        arg_log = optarg;
                        break;
                case 't':
                        arg_timeout_sec = (unsigned) atoi(optarg);
                        break;
                case 'T':
                        if (arg_n_tmpfs == MAX_MOUNTS)
                                return -EINVAL;
                        arg_tmpfs[arg_n_tmpfs++] = optarg;
                        break;
                case 'B':
                        if (arg_n_bind == MAX_MOUNTS)
                                return -EINVAL;
                        arg_bind[arg_n_bind++] = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        return optind < argc ? 0 : -EINVAL;
}

int main(int argc, char **argv) {
        if (argc >= 3 && strcmp(argv[1], "start") == 0) {
                if (parse_options(argc - 1, argv + 1) < 0)
                        goto usage;
                return do_start(argv + 1 + optind);
        }
        if (argc >= 4 && strcmp(argv[1], "repeat") == 0) {
                long n = strtol(argv[2], NULL, 10);
                if (n <= 0 || parse_options(argc - 2, argv + 2) < 0)
                        goto usage;
                return do_repeat(n, argv + 2 + optind);
        }
        if (argc == 5 && strcmp(argv[1], "attr-write") == 0 && strtol(argv[4], NULL, 10) > 0)
                return do_attr_write(argv[2], argv[3], strtol(argv[4], NULL, 10));
usage:
        fprintf(stderr,
                "usage: %s start [--notify] [--bus-name=NAME] [--settle-ms=MS] [--stop] [--log=FILE]\n"
                "                 [--timeout-sec=S] [--tmpfs=DIR]... [--bind=SRC:DST]... -- COMMAND...\n"
                "       %s repeat N [--log=FILE] [--tmpfs=DIR]... [--bind=SRC:DST]... -- COMMAND...\n"
                "       %s attr-write FILE VALUE N\n",
                argv[0], argv[0], argv[0]);
        return 2;
}
