/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stats: the stall histograms of the daemon's probe, as text bars (like biolatency) or JSON. */
#include <assert.h>
#include <inttypes.h>

#include "bus-api.h"
#include "ctl.h"
#include "json.h"
#include "log.h"
#include "policy.h"
#include "stalls.h"
#include "util.h"

#define BAR_WIDTH 40

typedef struct Stalls {
        const char *name, *mode, *reason;
        int measured, durations;
        uint64_t count, sum_usec, max_usec, p50_usec, p99_usec;
        const uint64_t *hist;
        size_t n_hist;
        struct {
                const char *comm; /* as the daemon escaped it: longer than a comm can be */
                uint64_t count;
        } comms[STALL_TOP_COMMS];
        size_t n_comms;
        uint64_t sync_count, other_count, window_usec, window_count, window_p99_usec, window_max_usec;
        uint64_t lost, lost_comms; /* the probe's, all disks: STALL_UNMEASURED_USEC when not known */
} Stalls;

/* Reads a GetStalls() reply into *s (pointers into reply). Returns 0 or -errno. */
static int read_stalls(sd_bus_message *reply, Stalls *s) {
        const void *hist;
        size_t size;
        int r;

        r = sd_bus_message_read(reply, "sbbttttt", &s->mode, &s->measured, &s->durations, &s->count,
                                &s->sum_usec, &s->max_usec, &s->p50_usec, &s->p99_usec);
        if (r >= 0)
                r = sd_bus_message_read_array(reply, 't', &hist, &size);
        if (r < 0)
                return r;
        s->hist = hist;
        s->n_hist = size / sizeof(uint64_t);
        r = sd_bus_message_enter_container(reply, 'a', "(st)");
        while (r >= 0) {
                const char *comm;
                uint64_t count;
                r = sd_bus_message_read(reply, "(st)", &comm, &count);
                if (r <= 0)
                        break;
                if (s->n_comms < STALL_TOP_COMMS) {
                        s->comms[s->n_comms].comm = comm;
                        s->comms[s->n_comms++].count = count;
                }
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_read(reply, "tttttts", &s->sync_count, &s->other_count, &s->window_usec,
                                        &s->window_count, &s->window_p99_usec, &s->window_max_usec,
                                        &s->reason);
        return r < 0 ? r : 0;
}

/* The probe's losses (Manager properties StallLost, StallCommsLost), STALL_UNMEASURED_USEC when
 * not known. */
static void read_losses(sd_bus *bus, uint64_t *ret_lost, uint64_t *ret_comms) {
        const char *const names[] = { "StallLost", "StallCommsLost" };
        uint64_t *ret[] = { ret_lost, ret_comms };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                *ret[i] = STALL_UNMEASURED_USEC;
                (void) sd_bus_get_property_trivial(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, names[i],
                                                   &error, 't', ret[i]);
        }
}

/* The text lines of the probe's losses, when there are any. */
static void losses_text(uint64_t lost, uint64_t lost_comms) {
        if (lost != STALL_UNMEASURED_USEC && lost > 0)
                printf("\n%" PRIu64
                       " writeback waits were not recorded since the probe started (its tables were "
                       "full): the counts above are lower bounds.\n",
                       lost);
        if (lost_comms != STALL_UNMEASURED_USEC && lost_comms > 0)
                printf("%" PRIu64 " stable-pages waits were counted without their command (the table of "
                       "commands was full).\n",
                       lost_comms);
}

static void print_histogram(const Stalls *s) {
        size_t last = 0;
        uint64_t top = 0;

        for (size_t i = 0; i < s->n_hist; i++)
                if (s->hist[i] > 0) {
                        last = i;
                        top = MAX(top, s->hist[i]);
                }
        printf("\n%18s%-12s : %-8s %s\n", "usecs", "", "count", "distribution");
        for (size_t i = 0; i <= last && top > 0; i++) {
                char bar[BAR_WIDTH + 1];
                size_t n = (size_t) ((s->hist[i] * BAR_WIDTH + top - 1) / top);
                memset(bar, '*', n);
                memset(bar + n, ' ', BAR_WIDTH - n);
                bar[BAR_WIDTH] = '\0';
                /* the last bucket the daemon sent is open-ended */
                uint64_t hi = i + 1 >= s->n_hist ? UINT64_MAX : stall_hist_bucket_upper_usec(i);
                char his[24];
                if (hi == UINT64_MAX)
                        snprintf(his, sizeof his, "...");
                else
                        snprintf(his, sizeof his, "%" PRIu64, hi);
                printf("%14" PRIu64 " -> %-12s : %-8" PRIu64 " |%s|\n", stall_hist_bucket_lower_usec(i), his,
                       s->hist[i], bar);
        }
}

static void stalls_text(const Stalls *s, bool first) {
        char a[32], b[32], c[32], win[32];

        if (!first)
                putchar('\n');
        if (!s->measured) {
                printf("%s: not measured (probe %s: %s)\n", s->name, s->mode, s->reason);
                return;
        }
        format_usec(s->window_usec, win);
        if (!s->durations)
                printf("%s: %" PRIu64
                       " stable-pages waits since the probe started (%s mode: counts only, no "
                       "durations); %" PRIu64 " in the last %s\n",
                       s->name, s->count, s->mode, s->window_count, win);
        else if (s->count == 0)
                printf("%s: no stable-pages waits since the probe started (%s)\n", s->name, s->mode);
        else
                printf("%s: %" PRIu64
                       " stable-pages waits since the probe started (%s); p50 <= %s, p99 <= %s, "
                       "max %s; %" PRIu64 " in the last %s\n",
                       s->name, s->count, s->mode, format_usec(s->p50_usec, a), format_usec(s->p99_usec, b),
                       format_usec(s->max_usec, c), s->window_count, win);
        if (s->n_comms > 0) {
                printf("  top commands:");
                for (size_t i = 0; i < s->n_comms; i++)
                        printf(" %s (%" PRIu64 ")", s->comms[i].comm, s->comms[i].count);
                putchar('\n');
        }
        if (s->sync_count != STALL_UNMEASURED_USEC)
                printf("  other writeback waits, paid whatever stable writes say: %" PRIu64
                       " data-integrity "
                       "(fsync, sync), %" PRIu64 " other (truncation, reclaim)\n",
                       s->sync_count, s->other_count);
        if (!isempty(s->reason))
                printf("  policy: %s\n", s->reason);
        if (s->durations && s->count > 0)
                print_histogram(s);
}

/* The names of every disk the daemon knows (ListDevices), in its order, appended to *names.
 * Returns 0 or -errno (logged). */
static int list_disk_names(sd_bus *bus, char ***names) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *list = NULL;
        int r;

        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "ListDevices", &error, &list,
                               "");
        if (r < 0)
                return ctl_call_error("stats", &error, r);
        r = sd_bus_message_enter_container(list, 'a', "(sossssbt)");
        while (r >= 0) {
                const char *name;
                r = sd_bus_message_read(list, "(sossssbt)", &name, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
                if (r <= 0)
                        break;
                if (strv_extend(names, name) < 0)
                        return log_oom();
        }
        if (r < 0)
                return log_error_errno(r, "Bad reply: %m");
        return 0;
}

int verb_stats(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_strv_free_ char **names = NULL, **shown_names = NULL;
        int r;

        assert(argv);

        r = ctl_bus_open(&bus);
        if (r < 0 || !ctl_daemon_running(bus))
                return log_error_errno(
                        SYNTHETIC_ERRNO(ESRCH),
                        "stats: stablepagesd is not running: the stall figures are the daemon's.");
        if (argc > 0)
                r = strv_extend(&names, argv[0]) < 0 ? log_oom() : 0;
        else
                r = list_disk_names(bus, &names);
        if (r < 0)
                return r;

        uint64_t lost, lost_comms;
        read_losses(bus, &lost, &lost_comms);
        if (arg_json == JSON_OFF)
                ctl_pager_open();
        bool first = true;
        size_t shown = 0;
        STRV_FOREACH (n, names) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                Stalls s = { .name = *n, .lost = lost, .lost_comms = lost_comms };

                r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "GetStalls", &error,
                                       &reply, "s", *n);
                if (r < 0)
                        return ctl_call_error(*n, &error, r);
                r = read_stalls(reply, &s);
                if (r < 0)
                        return log_error_errno(r, "Bad reply: %m");
                /* Without a device: only the disks with waits, like biolatency. */
                if (argc == 0 && s.measured && s.count == 0)
                        continue;
                if (arg_json != JSON_OFF) {
                        if (strv_extend(&shown_names, *n) < 0)
                                return log_oom();
                } else if (argc == 0 && !s.measured) {
                        printf("No stall figures: the probe is %s (%s).\n", s.mode, s.reason);
                        shown++;
                        break; /* the same for every disk */
                } else
                        stalls_text(&s, first);
                first = false;
                shown++;
        }
        if (arg_json != JSON_OFF) {
                /* The daemon's one JSON of stall figures, as status --json holds them. */
                if (shown_names)
                        return ctl_dump_json(bus, "stats", shown_names, DUMP_FLAG_STALLS);
                JsonWriter w;
                ctl_json_begin(&w);
                json_array_begin(&w);
                json_array_end(&w);
                ctl_json_end(&w);
        } else {
                if (shown == 0)
                        printf("No stable-pages waits measured on any disk.\n");
                losses_text(lost, lost_comms);
        }
        return fflush(stdout) == 0 ? 0 : -EIO;
}
