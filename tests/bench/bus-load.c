/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A D-Bus load generator for stablepagesd: CLIENTS processes, each with its own system bus
 * connection, make CALLS calls each, as fast as the daemon answers, and record the latency
 * of every call. The mix per client is, in turn:
 *
 *     ListDevices, GetDevice(DEV), Get(DEV path, Need), DumpJSON([DEV]), ...
 *     and with --writes=N%: SetDevicePolicy(DEV, on|off, runtime) / ResetDevicePolicy(DEV, runtime)
 *
 * on the device the test owns (--device); --apply makes one set in four apply at once; --list-only makes
 * every call a ListDevices (tests/bench/run: its latency with many disks); --only=stalls every call a
 * GetStalls(DEV), --only=getall every call a Properties.GetAll of DEV's object, --only=properties
 * every call a GetDeviceProperties(DEV) (what explain calls). A call is "answered"
 * when a reply or an error reply from the daemon arrives; it is "unanswered" when the bus reports a timeout,
 * no reply, or a lost connection. While the clients run, the parent samples the daemon's RSS
 * (--pid) after warm-up (the first 10% of all calls) and at the end.
 *
 * Usage: bus-load --device=NAME [--clients=32] [--calls=500] [--writes=20] [--pid=PID]
 *                 [--timeout-sec=30] [--allow-missing] [--apply] [--list-only]
 *                 [--only=stalls|getall|properties] [--stop-file=PATH]
 * Prints one "key=value ..." summary line and one "error NAME COUNT" line per error name.
 * --allow-missing counts NoSuchDevice/UnknownObject errors as expected (a device removed
 * while the calls run). --stop-file makes the clients call until PATH exists (--calls is then
 * the number of latencies kept per client, the last ones). Exit status: 0 when every call was
 * answered and (without --allow-missing) none failed, 1 otherwise, 2 on usage errors.
 *
 * Hostile callers and the open-loop latency monitor (bus-hostile.c):
 *        bus-load --device=NAME --hostile=names|long-name|storm [--method=M] [--count=N]
 *                 [--connections=C] [--agent] [--settle-ms=MS] [--timeout-sec=N] [--dest=NAME]
 *        bus-load --monitor --stop-file=PATH [--rate-hz=100] [--timeout-sec=N] */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "bus-load.h"

#define DEST BUS_LOAD_DEST
#define PATH BUS_LOAD_PATH
#define IFACE BUS_LOAD_IFACE
#define MAX_ERROR_NAMES 16

#define _cleanup_(f) __attribute__((cleanup(f)))

typedef struct Shared {
        pthread_mutex_t lock;   /* process-shared: guards errors[] */
        volatile uint64_t done; /* calls finished, all clients */
        struct {
                char name[96];
                volatile uint64_t count;
        } errors[MAX_ERROR_NAMES];
        volatile uint64_t unanswered, ok, failed, expected_missing;
        uint32_t latency_usec[]; /* clients * calls */
} Shared;

static unsigned arg_clients = 32, arg_calls = 500, arg_writes = 20;
static pid_t arg_pid;
static bool arg_allow_missing, arg_apply, arg_monitor;
static int arg_only = -1; /* the one kind of call made, -1: the mix */
static const char *arg_hostile;
static Shared *shared;

const char *arg_device, *arg_method, *arg_stop_file, *arg_dest;
unsigned arg_timeout_sec = 30, arg_rate_hz = 100, arg_settle_ms = 2000;
size_t arg_count, arg_connections = 100;
bool arg_agent;

uint64_t bus_load_now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

#define now_usec bus_load_now_usec

static void count_error(const char *name) {
        pthread_mutex_lock(&shared->lock);
        for (unsigned i = 0; i < MAX_ERROR_NAMES; i++) {
                if (shared->errors[i].name[0] == '\0')
                        snprintf(shared->errors[i].name, sizeof shared->errors[i].name, "%s", name);
                if (strcmp(shared->errors[i].name, name) == 0) {
                        shared->errors[i].count++;
                        break;
                }
        }
        pthread_mutex_unlock(&shared->lock);
}

bool bus_load_error_is_unanswered(const sd_bus_error *e) {
        if (!sd_bus_error_is_set(e))
                return true; /* a local failure: nothing came back */
        return sd_bus_error_has_names(e, SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_TIMEOUT,
                                      SD_BUS_ERROR_DISCONNECTED, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                      SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

/* The errors a call on a device that was just removed may get: no such device or object,
 * or (--apply) an apply that found the device or its flag gone. */
static bool error_is_missing_device(const sd_bus_error *e) {
        if (sd_bus_error_has_names(e, "org.stablepages1.Error.NoSuchDevice", SD_BUS_ERROR_UNKNOWN_OBJECT,
                                   SD_BUS_ERROR_UNKNOWN_INTERFACE, SD_BUS_ERROR_UNKNOWN_PROPERTY))
                return true;
        return sd_bus_error_has_name(e, "org.stablepages1.Error.ApplyFailed") && e->message &&
               (strstr(e->message, "was removed") || strstr(e->message, "No such device"));
}

/* One call of kind k on bus. Returns 0 on success, the negative errno otherwise (*e set). */
static int one_call(sd_bus *bus, unsigned k, unsigned i, sd_bus_error *e) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        char *path = NULL, *s = NULL;
        int r;

        switch (k) {
        case 0:
                return sd_bus_call_method(bus, DEST, PATH, IFACE, "ListDevices", e, &reply, NULL);
        case 1:
                return sd_bus_call_method(bus, DEST, PATH, IFACE, "GetDevice", e, &reply, "s", arg_device);
        case 2:
                r = sd_bus_path_encode(PATH "/device", arg_device, &path);
                if (r < 0)
                        return r;
                r = sd_bus_get_property_string(bus, DEST, path, "org.stablepages1.Device", "Need", e, &s);
                free(path);
                free(s);
                return r;
        case 3:
                return sd_bus_call_method(bus, DEST, PATH, IFACE, "DumpJSON", e, &reply, "ast", 1,
                                          arg_device, (uint64_t) 0);
        case 4:
                /* flags: runtime (1); with --apply one set in four also applies at once (4) */
                return sd_bus_call_method(bus, DEST, PATH, IFACE, "SetDevicePolicy", e, &reply, "sst",
                                          arg_device, i % 2 ? "on" : "off",
                                          (uint64_t) (arg_apply && (i / 4) % 4 == 0 ? 5 : 1));
        case 5:
                return sd_bus_call_method(bus, DEST, PATH, IFACE, "ResetDevicePolicy", e, &reply, "st",
                                          arg_device, (uint64_t) 1);
        case 6:
                return sd_bus_call_method(bus, DEST, PATH, IFACE, "GetStalls", e, &reply, "s", arg_device);
        case 8:
                return sd_bus_call_method(bus, DEST, PATH, IFACE, "GetDeviceProperties", e, &reply, "s",
                                          arg_device);
        default:
                r = sd_bus_path_encode(PATH "/device", arg_device, &path);
                if (r < 0)
                        return r;
                r = sd_bus_call_method(bus, DEST, path, "org.freedesktop.DBus.Properties", "GetAll", e,
                                       &reply, "s", "org.stablepages1.Device");
                free(path);
                return r;
        }
}

static int client(unsigned c, int start_fd) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        char go;
        int r;

        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "client %u: cannot connect to the system bus: %s\n", c, strerror(-r));
                return 1;
        }
        (void) sd_bus_set_method_call_timeout(bus, (uint64_t) arg_timeout_sec * 1000000);
        if (read(start_fd, &go, 1) < 0) /* all start together: EOF when the parent closes */
                return 1;

        /* With --stop-file, the calls go on (their latencies in a ring of --calls per client) until
         * the file exists. */
        for (unsigned i = 0; arg_stop_file ? access(arg_stop_file, F_OK) < 0 : i < arg_calls; i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                /* Writes: every (100 / writes)-th call; set and reset alternate. */
                bool write = arg_writes > 0 && (i * arg_writes) / 100 != ((i + 1) * arg_writes) / 100;
                unsigned k = arg_only >= 0 ? (unsigned) arg_only : write ? 4 + (i / 2) % 2 : (i + c) % 4;
                uint64_t t0 = now_usec();

                r = one_call(bus, k, i + c, &e);
                uint64_t dt = now_usec() - t0;
                shared->latency_usec[(size_t) c * arg_calls + i % arg_calls] =
                        dt > UINT32_MAX ? UINT32_MAX : (uint32_t) dt;
                if (r >= 0)
                        __atomic_add_fetch(&shared->ok, 1, __ATOMIC_RELAXED);
                else {
                        count_error(sd_bus_error_is_set(&e) ? e.name : strerror(-r));
                        if (bus_load_error_is_unanswered(&e))
                                __atomic_add_fetch(&shared->unanswered, 1, __ATOMIC_RELAXED);
                        else if (arg_allow_missing && error_is_missing_device(&e))
                                __atomic_add_fetch(&shared->expected_missing, 1, __ATOMIC_RELAXED);
                        else {
                                if (__atomic_add_fetch(&shared->failed, 1, __ATOMIC_RELAXED) <= 10)
                                        fprintf(stderr, "client %u call %u: %s: %s\n", c, i, e.name ?: "-",
                                                e.message ?: strerror(-r));
                        }
                        if (bus_load_error_is_unanswered(&e) && (!sd_bus_is_open(bus) || r == -ECONNRESET))
                                return 1; /* the connection is gone: the rest would fail the same way */
                }
                __atomic_add_fetch(&shared->done, 1, __ATOMIC_RELAXED);
        }
        return 0;
}

/* VmRSS of pid in KiB, or 0. */
static unsigned long rss_kib(pid_t pid) {
        char path[64], line[256];
        unsigned long v = 0;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "VmRSS: %lu kB", &v) == 1)
                        break;
        fclose(f);
        return v;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

static int parse_argv(int argc, char **argv) {
        static const struct option options[] = {
                { "device", required_argument, NULL, 'd' },
                { "clients", required_argument, NULL, 'c' },
                { "calls", required_argument, NULL, 'n' },
                { "writes", required_argument, NULL, 'w' },
                { "pid", required_argument, NULL, 'p' },
                { "timeout-sec", required_argument, NULL, 't' },
                { "allow-missing", no_argument, NULL, 'm' },
                { "apply", no_argument, NULL, 'a' },
                { "list-only", no_argument, NULL, 'L' },
                { "only", required_argument, NULL, 'O' },
                { "hostile", required_argument, NULL, 'H' },
                { "method", required_argument, NULL, 'M' },
                { "count", required_argument, NULL, 'N' },
                { "connections", required_argument, NULL, 'C' },
                { "agent", no_argument, NULL, 'A' },
                { "settle-ms", required_argument, NULL, 'S' },
                { "monitor", no_argument, NULL, 'W' },
                { "rate-hz", required_argument, NULL, 'R' },
                { "stop-file", required_argument, NULL, 'F' },
                { "dest", required_argument, NULL, 'D' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'd':
                        arg_device = optarg;
                        break;
                case 'c':
                        arg_clients = (unsigned) atoi(optarg);
                        break;
                case 'n':
                        arg_calls = (unsigned) atoi(optarg);
                        break;
                case 'w':
                        arg_writes = (unsigned) atoi(optarg);
                        break;
                case 'p':
                        arg_pid = (pid_t) atoi(optarg);
                        break;
                case 't':
                        arg_timeout_sec = (unsigned) atoi(optarg);
                        break;
                case 'm':
                        arg_allow_missing = true;
                        break;
                case 'a':
                        arg_apply = true;
                        break;
                case 'L':
                        arg_only = 0;
                        break;
                case 'O':
                        if (strcmp(optarg, "stalls") == 0)
                                arg_only = 6;
                        else if (strcmp(optarg, "getall") == 0)
                                arg_only = 7;
                        else if (strcmp(optarg, "properties") == 0)
                                arg_only = 8;
                        else
                                return -EINVAL;
                        break;
                case 'H':
                        arg_hostile = optarg;
                        break;
                case 'M':
                        arg_method = optarg;
                        break;
                case 'N':
                        arg_count = (size_t) strtoull(optarg, NULL, 10);
                        break;
                case 'C':
                        arg_connections = (size_t) strtoull(optarg, NULL, 10);
                        break;
                case 'A':
                        arg_agent = true;
                        break;
                case 'S':
                        arg_settle_ms = (unsigned) atoi(optarg);
                        break;
                case 'W':
                        arg_monitor = true;
                        break;
                case 'R':
                        arg_rate_hz = (unsigned) atoi(optarg);
                        break;
                case 'F':
                        arg_stop_file = optarg;
                        break;
                case 'D':
                        arg_dest = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        if (arg_monitor)
                return 0;
        if (arg_hostile && arg_device && arg_connections > 0 && arg_timeout_sec > 0)
                return 0;
        if (!arg_device || arg_clients == 0 || arg_clients > 1024 || arg_calls == 0 || arg_writes > 100 ||
            arg_timeout_sec == 0) {
                fprintf(stderr, "usage: bus-load --device=NAME [--clients=N] [--calls=N] [--writes=PERCENT] "
                                "[--pid=PID] [--timeout-sec=N] [--allow-missing] [--apply] [--list-only] "
                                "[--only=stalls|getall|properties]\n");
                return -EINVAL;
        }
        return 0;
}

int main(int argc, char **argv) {
        size_t total, size;
        unsigned long rss_warm = 0, rss_end = 0, rss_max = 0;
        pid_t *pids;
        int start[2], exit_code = 0;

        if (parse_argv(argc, argv) < 0)
                return 2;
        if (arg_monitor || arg_hostile)
                return bus_hostile_main(arg_monitor ? NULL : arg_hostile);
        total = (size_t) arg_clients * arg_calls;
        size = sizeof(Shared) + total * sizeof(uint32_t);
        shared = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        pids = calloc(arg_clients, sizeof(pid_t));
        if (shared == MAP_FAILED || !pids || pipe(start) < 0) {
                perror("bus-load");
                return 1;
        }
        pthread_mutexattr_t attr;
        pthread_mutexattr_init(&attr);
        pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&shared->lock, &attr);

        for (unsigned c = 0; c < arg_clients; c++) {
                fflush(NULL);
                pids[c] = fork();
                if (pids[c] < 0) {
                        perror("fork");
                        return 1;
                }
                if (pids[c] == 0) {
                        close(start[1]);
                        _exit(client(c, start[0]));
                }
        }
        close(start[0]);
        usleep(200 * 1000); /* let them connect */
        uint64_t t0 = now_usec();
        close(start[1]);

        /* Sample RSS until every client is done. */
        unsigned running = arg_clients;
        while (running > 0) {
                int status;
                pid_t p = waitpid(-1, &status, WNOHANG);
                if (p > 0) {
                        running--;
                        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                                exit_code = 1;
                        continue;
                }
                if (arg_pid > 0) {
                        unsigned long r = rss_kib(arg_pid);
                        if (r > rss_max)
                                rss_max = r;
                        if (rss_warm == 0 && shared->done >= total / 10)
                                rss_warm = r;
                }
                usleep(20 * 1000);
        }
        uint64_t elapsed = now_usec() - t0;
        if (arg_pid > 0) {
                rss_end = rss_kib(arg_pid);
                if (rss_warm == 0)
                        rss_warm = rss_end;
        }

        uint64_t answered = shared->done - shared->unanswered;
        size_t n = shared->done < total ? shared->done : total;
        /* Unfinished clients leave zeros at their tails: sort all, skip the zeros of the
         * calls never made (total - done of them). */
        qsort(shared->latency_usec, total, sizeof(uint32_t), cmp_u32);
        const uint32_t *lat = shared->latency_usec + (total - n);
        if (arg_stop_file) /* as many calls as were made; the latencies are the last of each client */
                total = shared->done;
#define PCT(p) (n ? lat[(size_t) ((double) (n - 1) * (p))] : 0)
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++)
                sum += lat[i];
        printf("clients=%u calls=%zu done=%" PRIu64 " answered=%" PRIu64 " unanswered=%" PRIu64
               " ok=%" PRIu64 " failed=%" PRIu64 " missing=%" PRIu64 " elapsed_ms=%" PRIu64
               " calls_per_s=%.0f"
               " avg_us=%" PRIu64 " p50_us=%u p90_us=%u p99_us=%u max_us=%u"
               " rss_warm_kib=%lu rss_end_kib=%lu rss_max_kib=%lu\n",
               arg_clients, total, shared->done, answered, shared->unanswered, shared->ok, shared->failed,
               shared->expected_missing, elapsed / 1000,
               elapsed ? (double) shared->done * 1e6 / (double) elapsed : 0.0, n ? sum / n : 0, PCT(0.50),
               PCT(0.90), PCT(0.99), n ? lat[n - 1] : 0, rss_warm, rss_end, rss_max);
        for (unsigned i = 0; i < MAX_ERROR_NAMES && shared->errors[i].name[0]; i++)
                printf("error %s %" PRIu64 "\n", shared->errors[i].name, shared->errors[i].count);

        if (shared->done != total || shared->unanswered > 0 || shared->failed > 0)
                exit_code = 1;
        fflush(stdout);
        free(pids);
        munmap(shared, size);
        return exit_code;
}
