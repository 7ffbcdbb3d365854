/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MetricsFile=: the Prometheus text of every disk, written on the Manager's metrics timer
 * (manager-stalls.h). */
#include "log.h"
#include "manager-stalls.h"
#include "metrics.h"
#include "util.h"

/* The metrics of every disk, written atomically to MetricsFile=. */
static int manager_write_metrics(Manager *m) {
        const char *path = m->engine.config.metrics_file;
        _cleanup_free_ MetricsDevice *devs = calloc(manager_n_devices(m) + 1, sizeof(MetricsDevice));
        _cleanup_free_ StallStats *stats = calloc(manager_n_devices(m) + 1, sizeof(StallStats));
        _cleanup_free_ MirrorFigures *mirrors = calloc(manager_n_devices(m) + 1, sizeof(MirrorFigures));
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;

        if (!path)
                return 0;
        if (!devs || !stats || !mirrors)
                return -ENOMEM;
        for (size_t i = 0; i < manager_n_devices(m); i++) {
                EngineDevice *d = manager_device(m, i);
                devs[i] = (MetricsDevice){ .name = d->facts->name,
                                           .flag = d->facts->stable_writes,
                                           .in_force = d->class.in_force,
                                           .desired = d->decision.desired,
                                           .need = d->class.need,
                                           .pending = manager_count_pending(m, d->facts->name),
                                           .hazards = manager_device_consumers(m, i)
                                                              ? manager_device_consumers(m, i)->hazards
                                                              : 0,
                                           .learned = d->learned };
                if (manager_device_stalls(m, d, &stats[i], NULL, NULL) >= 0)
                        devs[i].stalls = &stats[i];
                devs[i].over_budget = manager_device_over_budget(m, d);
                if (manager_mirror_figures(m, d, &mirrors[i], NULL) >= 0)
                        devs[i].mirror = &mirrors[i];
        }
        uint64_t lost_waits = 0, lost_comms = 0;
        (void) manager_stall_losses(m, &lost_waits, &lost_comms);
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        MetricsProbe probe = { .mode = stall_probe_mode_to_string(manager_stall_mode(m)),
                               .lost = lost_waits,
                               .lost_comms = lost_comms,
                               .budget_usec = m->engine.config.stall_budget_usec };
        metrics_write(f, &probe, devs, manager_n_devices(m));
        if (fclose(f) != 0)
                return -ENOMEM;
        return write_file_atomic(path, buf, size, 0644);
}

static int on_metrics_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r;

        r = manager_write_metrics(m);
        if (r < 0 && r != m->metrics_error)
                log_warning_errno(r, "Cannot write MetricsFile=%s: %m%s (logged once until it changes)",
                                  m->engine.config.metrics_file,
                                  r == -EROFS
                                          ? "; the service's sandbox makes it read-only: add its directory "
                                            "to ReadWritePaths= with a drop-in"
                                          : "");
        else if (r >= 0 && m->metrics_error < 0)
                log_info("MetricsFile=%s written again.", m->engine.config.metrics_file);
        m->metrics_error = MIN(r, 0);
        r = sd_event_source_set_time_relative(s, m->engine.config.metrics_interval_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                log_error_errno(r, "Cannot re-arm the metrics timer, metrics stop: %m");
        return 0;
}

int manager_arm_metrics_timer(Manager *m) {
        int r;

        if (!m->engine.config.metrics_file)
                return m->metrics_timer ? sd_event_source_set_enabled(m->metrics_timer, SD_EVENT_OFF) : 0;
        if (!m->metrics_timer) {
                r = sd_event_add_time_relative(m->event, &m->metrics_timer, CLOCK_MONOTONIC, 0,
                                               100 * USEC_PER_MSEC, on_metrics_timer, m);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(m->metrics_timer, "metrics");
                return 0;
        }
        r = sd_event_source_set_time_relative(m->metrics_timer, 0);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(m->metrics_timer, SD_EVENT_ONESHOT);
}
