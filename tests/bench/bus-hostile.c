/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bus-load's hostile callers (--hostile=MODE) and its open-loop latency monitor (--monitor):
 *
 *   --hostile=names --method=DumpJSON|Apply --count=N
 *       One call whose name array holds --device N times (200,000 names: about 1.6 MB).
 *   --hostile=long-name --method=GetDevice|SetDevicePolicy|DumpJSON|Apply --count=BYTES
 *       One call with a name of BYTES bytes: "x" then "é" (2 bytes) repeated, so that a cut
 *       after 64 bytes falls inside a character.
 *   --hostile=storm --count=N --connections=C [--agent] [--settle-ms=MS] [--stop-file=PATH]
 *                  [--method=M] [--dest=NAME]
 *       N SetDevicePolicy(DEV, on|off, runtime) calls at once, spread over C connections, all
 *       allowing interactive authorization. --agent first registers, in a child process, a
 *       polkit authentication agent for this process that never answers: polkit keeps the
 *       checks it hands to it pending. Once no answer came for MS ms (default 2000), the
 *       "held=" line is printed; then (when PATH exists, with --stop-file) the agent is
 *       killed, which makes polkit answer what it held. --method= sends another method with the
 *       same arguments; --dest=NAME sends the calls to another bus name: one nobody owns measures
 *       the floor, what the bus alone costs (dbus-daemon answers ServiceUnknown, which then counts
 *       as an answer).
 *   --monitor --rate-hz=R --stop-file=PATH
 *       ListDevices R times a second (default 100) whether or not the earlier calls were
 *       answered (open loop: a daemon that stops answering for a second delays R calls), until
 *       PATH exists.
 *
 * Each prints one "key=value ..." line (and "error NAME COUNT" lines for the storm). Latencies
 * are from the send of a call to its answer. Exit status: 0 when every call was answered (a
 * reply or an error reply), 1 otherwise. */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "bus-load.h"

#define AGENT_PATH "/org/stablepages1/test/agent"

typedef struct Call {
        uint64_t sent_usec, answered_usec;
        char error[96]; /* empty: a method return */
} Call;

/* The p-quantile of the n sorted values v (0 when there are none). */
static uint64_t percentile(const uint64_t *v, size_t n, double p) {
        return n ? v[(size_t) ((double) (n - 1) * p)] : 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* The name of --hostile=long-name: "x" then "é" until size bytes. */
static char *long_name(size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                return NULL;
        size_t i = 0;
        s[i++] = 'x';
        while (i + 2 <= size) {
                s[i++] = (char) 0xc3;
                s[i++] = (char) 0xa9;
        }
        s[i] = '\0';
        return s;
}

static int build_call(sd_bus *bus, const char *method, char **names, const char *name,
                      sd_bus_message **ret) {
        sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(bus, &m, BUS_LOAD_DEST, BUS_LOAD_PATH, BUS_LOAD_IFACE,
                                               method);

        if (r >= 0 && (streq(method, "DumpJSON") || streq(method, "Apply"))) {
                if (names)
                        r = sd_bus_message_append_strv(m, names);
                else
                        r = sd_bus_message_append(m, "as", 1, name);
                if (r >= 0)
                        r = sd_bus_message_append(m, "t", (uint64_t) 0);
        } else if (r >= 0 && streq(method, "GetDevice"))
                r = sd_bus_message_append(m, "s", name);
        else if (r >= 0 && streq(method, "SetDevicePolicy"))
                r = sd_bus_message_append(m, "sst", name, "on", (uint64_t) 1);
        else if (r >= 0)
                r = -EINVAL;
        if (r < 0) {
                sd_bus_message_unref(m);
                return r;
        }
        *ret = m;
        return 0;
}

/* --hostile=names and --hostile=long-name: one call, timed. */
static int hostile_one(const char *mode) {
        sd_bus *bus = NULL;
        sd_bus_message *m = NULL, *reply = NULL;
        sd_bus_error e = SD_BUS_ERROR_NULL;
        char **names = NULL, *name = NULL;
        size_t bytes;
        int r;

        if (!arg_method || arg_count == 0)
                return fprintf(stderr, "--hostile=%s needs --method= and --count=\n", mode), 2;
        if (streq(mode, "names")) {
                names = calloc(arg_count + 1, sizeof(char *));
                if (!names)
                        return 1;
                for (size_t i = 0; i < arg_count; i++)
                        names[i] = (char *) arg_device;
                bytes = arg_count * (strlen(arg_device) + 5);
        } else {
                name = long_name(arg_count);
                if (!name)
                        return 1;
                bytes = arg_count;
        }
        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_set_method_call_timeout(bus, (uint64_t) arg_timeout_sec * 1000000);
        if (r >= 0)
                r = build_call(bus, arg_method, names, name, &m);
        if (r < 0) {
                fprintf(stderr, "cannot build the call: %s\n", strerror(-r));
                return 1;
        }
        uint64_t t0 = bus_load_now_usec();
        r = sd_bus_call(bus, m, 0, &e, &reply);
        uint64_t dt = bus_load_now_usec() - t0;
        bool answered = r >= 0 || (sd_bus_error_is_set(&e) && !bus_load_error_is_unanswered(&e));
        printf("hostile=%s method=%s count=%zu bytes=%zu latency_us=%" PRIu64 " answered=%d error=%s "
               "message=%.200s\n",
               mode, arg_method, arg_count, bytes, dt, answered, r >= 0 ? "-" : e.name ?: strerror(-r),
               r >= 0 ? "" : e.message ?: "");
        fflush(stdout);
        sd_bus_error_free(&e);
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
        sd_bus_flush_close_unref(bus);
        free(names);
        free(name);
        return answered ? 0 : 1;
}

/* ---- the agent that never answers ---- */

static sd_bus_message **held;
static size_t n_held;

static int agent_begin(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        sd_bus_message **l = realloc(held, sizeof(*held) * (n_held + 1));
        if (!l)
                return -ENOMEM;
        held = l;
        held[n_held++] = sd_bus_message_ref(m); /* never answered */
        return 1;
}

static int agent_cancel(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return sd_bus_reply_method_return(m, NULL);
}

static const sd_bus_vtable agent_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("BeginAuthentication", "sssa{ss}sa(sa{sv})", "", agent_begin,
                      SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("CancelAuthentication", "s", "", agent_cancel, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

/* Field 22 of /proc/PID/stat, what polkit calls the start time of a process. */
static uint64_t process_start_time(pid_t pid) {
        char path[64], buf[1024];
        unsigned long long t = 0;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        if (fgets(buf, sizeof buf, f)) {
                char *p = strrchr(buf, ')'); /* the command may hold spaces */
                if (p && sscanf(p + 2,
                                "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                                "%*d %*d %llu",
                                &t) != 1)
                        t = 0;
        }
        fclose(f);
        return t;
}

/* The child: registers the agent for the parent and serves it until killed. */
static int agent_run(pid_t parent, int ready_fd) {
        sd_bus *bus = NULL;
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, AGENT_PATH,
                                             "org.freedesktop.PolicyKit1.AuthenticationAgent", agent_vtable,
                                             NULL);
        if (r >= 0)
                r = sd_bus_call_method(
                        bus, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                        "org.freedesktop.PolicyKit1.Authority", "RegisterAuthenticationAgent", &e, NULL,
                        "(sa{sv})ss", "unix-process", 3, "pid", "u", (uint32_t) parent, "start-time", "t",
                        process_start_time(parent), "uid", "i", (int32_t) getuid(), "C", AGENT_PATH);
        if (r < 0) {
                fprintf(stderr, "agent: cannot register: %s\n", e.message ?: strerror(-r));
                return 1;
        }
        if (write(ready_fd, "1", 1) != 1)
                return 1;
        close(ready_fd);
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return 1;
                if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
                        return 1;
        }
}

/* ---- the storm ---- */

typedef struct Storm {
        Call *calls;
        size_t n, answered;
        uint64_t last_answer_usec;
} Storm;

static Storm storm;

/* The message of the first error of each name, to print. */
static struct { char name[96], message[256]; } first_errors[16];

static void note_error(const sd_bus_error *e) {
        for (size_t k = 0; k < 16; k++) {
                if (first_errors[k].name[0] && !streq(first_errors[k].name, e->name))
                        continue;
                if (!first_errors[k].name[0]) {
                        snprintf(first_errors[k].name, sizeof first_errors[k].name, "%s", e->name);
                        snprintf(first_errors[k].message, sizeof first_errors[k].message, "%s",
                                 e->message ?: "");
                }
                return;
        }
}

static int on_storm_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Call *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        c->answered_usec = bus_load_now_usec();
        if (e) {
                snprintf(c->error, sizeof c->error, "%s",
                         bus_load_error_is_unanswered(e) && !arg_dest ? "(unanswered)" : e->name);
                note_error(e);
        }
        storm.answered++;
        storm.last_answer_usec = c->answered_usec;
        return 0;
}

/* Runs the loop until every call is answered, or nothing was answered for idle_usec, or until
 * deadline. */
static void storm_wait(sd_event *event, uint64_t idle_usec, uint64_t deadline) {
        while (storm.answered < storm.n) {
                uint64_t now = bus_load_now_usec();
                if (now >= deadline ||
                    (idle_usec && now - MAX(storm.last_answer_usec, storm.calls[0].sent_usec) >= idle_usec))
                        return;
                if (sd_event_run(event, 50 * 1000) < 0)
                        return;
        }
}

/* The answers that came between since and until; latencies from the send, or from base when later. */
static void storm_summary(const char *phase, uint64_t since, uint64_t until, uint64_t base) {
        uint64_t *lat = calloc(storm.n + 1, sizeof(uint64_t)), max = 0;
        struct {
                char name[96];
                size_t count;
        } errors[16] = {};
        size_t n = 0, replies = 0;

        if (!lat)
                return;
        for (size_t i = 0; i < storm.n; i++) {
                Call *c = &storm.calls[i];
                if (!c->answered_usec || c->answered_usec <= since || c->answered_usec > until)
                        continue;
                uint64_t from = MAX(c->sent_usec, base);
                lat[n++] = c->answered_usec > from ? c->answered_usec - from : 0;
                max = MAX(max, lat[n - 1]);
                if (!c->error[0]) {
                        replies++;
                        continue;
                }
                for (size_t k = 0; k < 16; k++)
                        if (!errors[k].name[0] || streq(errors[k].name, c->error)) {
                                snprintf(errors[k].name, sizeof errors[k].name, "%s", c->error);
                                errors[k].count++;
                                break;
                        }
        }
        qsort(lat, n, sizeof(uint64_t), cmp_u64);
        printf("storm phase=%s answered=%zu replies=%zu p50_us=%" PRIu64 " p99_us=%" PRIu64
               " max_us=%" PRIu64 "\n",
               phase, n, replies, percentile(lat, n, 0.5), percentile(lat, n, 0.99), max);
        for (size_t k = 0; k < 16 && errors[k].name[0]; k++)
                printf("error phase=%s %s %zu\n", phase, errors[k].name, errors[k].count);
        free(lat);
}

static int hostile_storm(void) {
        sd_bus **buses = calloc(arg_connections, sizeof(sd_bus *));
        sd_event *event = NULL;
        pid_t agent = 0;
        int r, ready[2];

        storm.n = arg_count;
        storm.calls = calloc(arg_count + 1, sizeof(Call));
        if (!buses || !storm.calls || arg_count == 0)
                return 1;
        if (arg_agent) {
                char ok;
                if (pipe(ready) < 0)
                        return 1;
                pid_t parent = getpid();
                agent = fork();
                if (agent < 0)
                        return 1;
                if (agent == 0) {
                        close(ready[0]);
                        _exit(agent_run(parent, ready[1]));
                }
                close(ready[1]);
                if (read(ready[0], &ok, 1) != 1) {
                        fprintf(stderr, "the polkit agent did not register\n");
                        (void) waitpid(agent, NULL, 0);
                        return 1;
                }
                close(ready[0]);
        }
        r = sd_event_new(&event);
        for (size_t i = 0; r >= 0 && i < arg_connections; i++) {
                r = sd_bus_open_system(&buses[i]);
                if (r >= 0)
                        r = sd_bus_attach_event(buses[i], event, 0);
        }
        if (r < 0) {
                fprintf(stderr, "cannot connect: %s\n", strerror(-r));
                return 1;
        }
        for (size_t i = 0; i < storm.n; i++) {
                sd_bus *bus = buses[i % arg_connections];
                sd_bus_message *m = NULL;
                r = sd_bus_message_new_method_call(bus, &m, arg_dest ?: BUS_LOAD_DEST, BUS_LOAD_PATH,
                                                   BUS_LOAD_IFACE, arg_method ?: "SetDevicePolicy");
                if (r >= 0)
                        r = sd_bus_message_append(m, "sst", arg_device, i % 2 ? "on" : "off", (uint64_t) 1);
                if (r >= 0)
                        r = sd_bus_message_set_allow_interactive_authorization(m, true);
                storm.calls[i].sent_usec = bus_load_now_usec();
                if (r >= 0)
                        r = sd_bus_call_async(bus, NULL, m, on_storm_reply, &storm.calls[i],
                                              (uint64_t) arg_timeout_sec * 1000000);
                sd_bus_message_unref(m);
                if (r < 0) {
                        fprintf(stderr, "call %zu: %s\n", i, strerror(-r));
                        return 1;
                }
        }
        uint64_t sent = bus_load_now_usec();
        storm_wait(event, (uint64_t) arg_settle_ms * 1000, sent + (uint64_t) arg_timeout_sec * 1000000);
        uint64_t held_at = bus_load_now_usec(), release;
        size_t held_count = storm.n - storm.answered;
        printf("storm calls=%zu connections=%zu agent=%d sent_ms=%" PRIu64 " held=%zu\n", storm.n,
               arg_connections, arg_agent, (sent - storm.calls[0].sent_usec) / 1000, held_count);
        storm_summary("before-release", 0, held_at, 0);
        fflush(stdout);
        while (arg_stop_file && access(arg_stop_file, F_OK) < 0)
                if (sd_event_run(event, 20 * 1000) < 0) /* answers keep coming in meanwhile */
                        break;
        release = bus_load_now_usec();
        if (agent > 0) {
                kill(agent, SIGTERM);
                (void) waitpid(agent, NULL, 0);
        }
        storm_wait(event, 0, release + (uint64_t) arg_timeout_sec * 1000000);
        storm_summary("after-release", held_at, UINT64_MAX, release);
        for (size_t k = 0; k < 16 && first_errors[k].name[0]; k++)
                printf("message %s: %s\n", first_errors[k].name, first_errors[k].message);
        printf("storm unanswered=%zu\n", storm.n - storm.answered);
        size_t lost = storm.n - storm.answered;
        for (size_t i = 0; i < storm.n; i++)
                if (streq(storm.calls[i].error, "(unanswered)"))
                        lost++;
        fflush(stdout);
        for (size_t i = 0; i < arg_connections; i++)
                sd_bus_flush_close_unref(buses[i]);
        sd_event_unref(event);
        free(buses);
        free(storm.calls);
        return lost == 0 ? 0 : 1;
}

/* ---- the open-loop monitor ---- */

typedef struct Monitor {
        Call *calls;
        size_t n, allocated, answered;
} Monitor;

static Monitor monitor;

static int on_monitor_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Call *c = &monitor.calls[(size_t) (uintptr_t) userdata];
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        c->answered_usec = bus_load_now_usec();
        if (e)
                snprintf(c->error, sizeof c->error, "%s", e->name);
        monitor.answered++;
        return 0;
}

static int on_monitor_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        sd_bus *bus = userdata;
        int r;

        if (access(arg_stop_file, F_OK) == 0)
                return sd_event_exit(sd_event_source_get_event(s), 0);
        if (monitor.n >= monitor.allocated) {
                size_t a = monitor.allocated ? monitor.allocated * 2 : 4096;
                Call *l = realloc(monitor.calls, sizeof(Call) * a);
                if (!l)
                        return sd_event_exit(sd_event_source_get_event(s), -ENOMEM);
                monitor.calls = l;
                monitor.allocated = a;
        }
        monitor.calls[monitor.n] = (Call){ .sent_usec = bus_load_now_usec() };
        r = sd_bus_call_method_async(bus, NULL, BUS_LOAD_DEST, BUS_LOAD_PATH, BUS_LOAD_IFACE, "ListDevices",
                                     on_monitor_reply, (void *) (uintptr_t) monitor.n, NULL);
        if (r < 0)
                snprintf(monitor.calls[monitor.n].error, sizeof monitor.calls[0].error, "%s", strerror(-r));
        monitor.n++;
        r = sd_event_source_set_time_relative(s, 1000000 / arg_rate_hz);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return r < 0 ? sd_event_exit(sd_event_source_get_event(s), r) : 0;
}

static int run_monitor(void) {
        sd_bus *bus = NULL;
        sd_event *event = NULL;
        sd_event_source *tick = NULL;
        size_t n = 0, failed = 0, slow = 0;
        int r;

        if (!arg_stop_file || arg_rate_hz == 0)
                return fprintf(stderr, "--monitor needs --stop-file= and --rate-hz=\n"), 2;
        r = sd_event_new(&event);
        if (r >= 0)
                r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_set_method_call_timeout(bus, (uint64_t) arg_timeout_sec * 1000000);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, 0);
        if (r >= 0)
                r = sd_event_add_time_relative(event, &tick, CLOCK_MONOTONIC, 0, 1, on_monitor_tick, bus);
        if (r >= 0)
                r = sd_event_loop(event);
        if (r < 0) {
                fprintf(stderr, "monitor: %s\n", strerror(-r));
                return 1;
        }
        /* The calls still out get the timeout to come back. */
        uint64_t deadline = bus_load_now_usec() + (uint64_t) arg_timeout_sec * 1000000;
        while (monitor.answered < monitor.n && bus_load_now_usec() < deadline)
                if (sd_event_run(event, 100 * 1000) < 0)
                        break;
        uint64_t *lat = calloc(monitor.n + 1, sizeof(uint64_t));
        if (!lat)
                return 1;
        for (size_t i = 0; i < monitor.n; i++) {
                Call *c = &monitor.calls[i];
                if (!c->answered_usec || c->error[0]) {
                        if (failed++ < 3)
                                printf("monitor failed call %zu: %s\n", i,
                                       c->error[0] ? c->error : "no answer");
                        continue;
                }
                lat[n++] = c->answered_usec - c->sent_usec;
                slow += lat[n - 1] > 50 * 1000;
        }
        qsort(lat, n, sizeof(uint64_t), cmp_u64);
        printf("monitor calls=%zu answered=%zu failed=%zu over_50ms=%zu p50_us=%" PRIu64 " p99_us=%" PRIu64
               " max_us=%" PRIu64 "\n",
               monitor.n, n, failed, slow, percentile(lat, n, 0.5), percentile(lat, n, 0.99),
               n ? lat[n - 1] : 0);
        fflush(stdout);
        free(lat);
        sd_event_source_unref(tick);
        sd_bus_flush_close_unref(bus);
        sd_event_unref(event);
        return failed == 0 ? 0 : 1;
}

int bus_hostile_main(const char *mode) {
        if (!mode)
                return run_monitor();
        if (streq(mode, "names") || streq(mode, "long-name"))
                return hostile_one(mode);
        if (streq(mode, "storm"))
                return hostile_storm();
        fprintf(stderr, "unknown --hostile=%s (names, long-name or storm)\n", mode);
        return 2;
}
