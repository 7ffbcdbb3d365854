/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A disk's stall figures as the API reports them, GetStalls and ResetStalls. */
#include <inttypes.h>
#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "bus-internal.h"
#include "manager-stalls.h"
#include "util.h"

/* The q-quantile of the waits of s: 0 without waits, STALL_UNMEASURED_USEC when durations are
 * not measured. */
uint64_t stall_percentile(const StallStats *s, double q) {
        uint64_t usec;
        int r = stall_stats_percentile(s, q, &usec);
        return r == -ENODATA ? 0 : r < 0 ? STALL_UNMEASURED_USEC : usec;
}

/* The q-quantile of the shadow waits of s, as stall_percentile(). */
static uint64_t shadow_percentile(const StallStats *s, double q) {
        uint64_t usec;
        int r = stall_stats_shadow_percentile(s, q, &usec);
        return r == -ENODATA ? 0 : r < 0 ? STALL_UNMEASURED_USEC : usec;
}

void stall_figures_done(StallFigures *f) {
        f->reason = mfree(f->reason);
        f->cost_on = mfree(f->cost_on);
        f->cost_off = mfree(f->cost_off);
}

/* Reads the stall figures of d once, for every figure a request reports. */
int stall_figures_compute(Manager *m, const EngineDevice *d, StallFigures *ret) {
        const char *reason = NULL;

        stall_figures_done(ret);
        *ret = (StallFigures){ .p50_usec = STALL_UNMEASURED_USEC,
                               .p99_usec = STALL_UNMEASURED_USEC,
                               .window_p99_usec = STALL_UNMEASURED_USEC };
        ret->measured = manager_device_stalls(m, d, &ret->total, &ret->window, &reason) >= 0;
        ret->durations = ret->measured && ret->total.has_durations;
        if (ret->durations) {
                ret->p50_usec = stall_percentile(&ret->total, 0.5);
                ret->p99_usec = stall_percentile(&ret->total, 0.99);
        }
        if (ret->measured)
                ret->window_p99_usec = stall_percentile(&ret->window, 0.99);
        ret->shadow_p99_usec = ret->measured ? shadow_percentile(&ret->total, 0.99) : STALL_UNMEASURED_USEC;
        ret->window_shadow_p99_usec =
                ret->measured ? shadow_percentile(&ret->window, 0.99) : STALL_UNMEASURED_USEC;
        ret->mirror = manager_mirror_figures(m, d, &ret->fig, NULL) >= 0;
        ret->reason = strdup(ret->measured ? reason ?: "" : manager_stall_reason(m));
        if (!ret->reason)
                return -ENOMEM;
        return manager_device_cost(m, d, &ret->cost_on, &ret->cost_off);
}

int method_get_stalls(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(stall_figures_done) StallFigures f = {};
        _cleanup_(bus_strings_done) BusStrings strings = {};
        uint64_t na = STALL_UNMEASURED_USEC;
        EngineDevice *d;

        int r = bus_read_device(m, b, &d, error);
        if (r < 0)
                return r;
        r = stall_figures_compute(b->manager, d, &f);
        if (r < 0)
                return r;
        const StallStats *total = &f.total, *win = &f.window;

        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_append(
                        reply, "sbbtttt", stall_probe_mode_to_string(manager_stall_mode(b->manager)),
                        f.measured, f.durations, f.measured ? total->count : na,
                        f.durations ? total->sum_usec : na, f.durations ? total->max_usec : na, f.p50_usec);
        if (r >= 0)
                r = sd_bus_message_append(reply, "t", f.p99_usec);
        if (r >= 0)
                r = sd_bus_message_append_array(reply, 't', total->hist,
                                                f.durations ? sizeof total->hist : 0);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(st)");
        for (size_t i = 0; r >= 0 && f.measured && i < total->n_comms; i++)
                r = sd_bus_message_append(reply, "(st)", bus_string(&strings, total->comms[i].comm),
                                          total->comms[i].count);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "tttttts",
                                          f.measured && total->classified ? total->sync_count : na,
                                          f.measured && total->classified ? total->other_count : na,
                                          b->manager->engine.config.stall_window_usec,
                                          f.measured ? win->count : na, f.durations ? f.window_p99_usec : na,
                                          f.durations ? win->max_usec : na, bus_string(&strings, f.reason));
        if (r >= 0)
                r = strings.error;
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int reset_stalls_authorized(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        const char *name;
        int r;

        r = sd_bus_message_rewind(m, true);
        if (r >= 0)
                r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        r = manager_reset_stalls(b->manager, name);
        if (r == -EOPNOTSUPP)
                return bus_reply_error(error, SD_BUS_ERROR_NOT_SUPPORTED, "No stall probe is running: %s",
                                       manager_stall_reason(b->manager));
        if (r == -ENODEV)
                return bus_reply_error(error, BUS_ERROR_NO_SUCH_DEVICE, "%s: no such block device", name);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "");
}

int method_reset_stalls(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        const char *name;
        EngineDevice *d;

        int r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        if (!isempty(name)) {
                r = bus_find_device(b, name, &d, error);
                if (r < 0)
                        return r;
        }
        return bus_authorize(b->auth, m, bus_actions_runtime, reset_stalls_authorized, b, error);
}
