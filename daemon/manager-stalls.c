/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Manager's stall figures (manager-stalls.h): the probe polled on a timer, its counts kept in
 * each disk's window, and the adaptive policy run on every disk at each poll. */
#include <inttypes.h>

#include "learned.h"
#include "log.h"
#include "manager-stalls.h"
#include "util.h"

/* The stall probe is polled every StallWindowSec=/5, within these bounds. */
#define STALL_POLL_MIN_USEC (1 * USEC_PER_SEC)
#define STALL_POLL_MAX_USEC (5 * USEC_PER_SEC)

static void device_stalls_done(DeviceStalls *s) {
        stall_window_done(&s->window);
        free(s->reason);
        mirror_watch_free(s->mirror);
}

void manager_stalls_done(Manager *m) {
        for (size_t i = 0; i < m->n_stalls; i++)
                device_stalls_done(&m->stalls[i]);
        m->stalls = mfree(m->stalls);
        m->n_stalls = 0;
        m->live = mfree(m->live);
        m->n_live = 0;
        m->live_valid = false;
}

/* No waits of the disk devnum, as the probe's mode would report them. */
static StallStats stall_stats_empty(const Manager *m, dev_t devnum) {
        bool bpf = manager_stall_mode(m) == STALL_PROBE_BPF;
        return (StallStats){ .devnum = devnum,
                             .has_durations = bpf,
                             .has_shadows = bpf && stall_probe_shadows(m->probe),
                             .shadow_epoch = bpf ? stall_probe_shadow_epoch(m->probe) : 0,
                             .has_direct = bpf && stall_probe_direct(m->probe) };
}

static DeviceStalls *stalls_find(Manager *m, dev_t devnum, bool create) {
        for (size_t i = 0; i < m->n_stalls; i++)
                if (m->stalls[i].devnum == devnum)
                        return &m->stalls[i];
        if (!create)
                return NULL;
        DeviceStalls *l = realloc(m->stalls, sizeof(DeviceStalls) * (m->n_stalls + 1));
        if (!l)
                return NULL;
        m->stalls = l;
        l[m->n_stalls] = (DeviceStalls){ .devnum = devnum,
                                         .total = stall_stats_empty(m, devnum),
                                         .last = stall_stats_empty(m, devnum) };
        return &l[m->n_stalls++];
}

DeviceStalls *manager_stalls_find(Manager *m, dev_t devnum, bool create) {
        return stalls_find(m, devnum, create);
}

/* Takes the probe's counters of every disk with waits into the windows; now is CLOCK_BOOTTIME
 * (a step of the wall clock must neither pile snapshots up nor empty the window). */
static int manager_sample_stalls(Manager *m, uint64_t now) {
        _cleanup_free_ StallStats *list = NULL;
        size_t n = 0;
        int r;

        r = stall_probe_poll(m->probe);
        if (r < 0)
                log_debug_errno(r, "Cannot poll the stall probe: %m");
        r = stall_probe_list(m->probe, &list, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_stalls; i++) {
                DeviceStalls *s = &m->stalls[i];
                const StallStats *now_stats = NULL;
                for (size_t j = 0; j < n && !now_stats; j++)
                        if (list[j].devnum == s->devnum)
                                now_stats = &list[j];
                if (now_stats || s->window.n == 0)
                        continue;
                /* Known, but no waits any more: the probe was reset. */
                StallStats empty = stall_stats_empty(m, s->devnum);
                memcpy(empty.bdi, s->total.bdi, sizeof(empty.bdi));
                s->total = empty;
                if (stall_window_push(&s->window, now, &empty, m->engine.config.stall_window_usec) < 0)
                        return -ENOMEM;
        }
        for (size_t j = 0; j < n; j++) {
                if (list[j].devnum == 0 || !device_table_find_devnum(&m->engine.table, list[j].devnum))
                        continue; /* btrfs, NFS, FUSE: no disk of ours */
                DeviceStalls *s = stalls_find(m, list[j].devnum, true);
                if (!s)
                        return -ENOMEM;
                /* First waits of this disk: they all happened since the last poll. */
                if (s->window.n == 0 &&
                    stall_window_push_empty(&s->window, m->stall_poll_usec, &list[j]) < 0)
                        return -ENOMEM;
                if (stall_window_push(&s->window, now, &list[j], m->engine.config.stall_window_usec) < 0)
                        return -ENOMEM;
                s->total = list[j];
        }
        return 0;
}

/* Forgets the figures of disks that are gone, in the probe too: a new disk with the same
 * number starts from nothing. */
static void manager_forget_stalls(Manager *m) {
        if (!m->scanned)
                return;
        for (size_t i = 0; i < m->n_stalls;) {
                DeviceStalls *s = &m->stalls[i];
                if (device_table_find_devnum(&m->engine.table, s->devnum)) {
                        i++;
                        continue;
                }
                if (manager_stall_mode(m) != STALL_PROBE_UNAVAILABLE)
                        (void) stall_probe_reset(m->probe, s->devnum);
                device_stalls_done(s);
                *s = m->stalls[--m->n_stalls];
        }
}

/* The adapt step: runs the adaptive policy on d's window of waits (s, whose figures of the
 * last poll it updates) into *ret, with the window's p99 in *ret_p99. now_boot (CLOCK_BOOTTIME)
 * times the window, now (CLOCK_REALTIME) what is kept across boots. Returns 0 or -errno. */
static int adapt_decide(Manager *m, EngineDevice *d, DeviceStalls *s, uint64_t now, uint64_t now_boot,
                        AdaptDecision *ret, uint64_t *ret_p99) {
        const Config *c = &m->engine.config;
        StallStats win = stall_stats_empty(m, d->facts->devnum);
        uint64_t p99 = 0, shadow_p99 = 0;
        int r;

        if (s->window.n > 0 && stall_window_get(&s->window, &win, NULL) < 0)
                win = stall_stats_empty(m, d->facts->devnum);
        s->last = win;
        (void) stall_stats_percentile(&win, 0.99, &p99);
        (void) stall_stats_shadow_percentile(&win, 0.99, &shadow_p99);

        AdaptInput in = {
                .name = d->facts->name,
                .mode = c->policy,
                .need = d->class.need,
                .need_reason = d->class.reasons ? d->class.reasons[0] : NULL,
                .learned = d->learned,
                .last_change_usec = d->learned_since_usec,
                /* The policy's clock is the wall clock of the learned record: the age, by
                 * CLOCK_BOOTTIME, of the last window over the budget on that clock. */
                .last_over_usec = s->last_over_usec == 0 ? 0 : now - MIN(now, now_boot - s->last_over_usec),
                .measured = manager_stall_mode(m) == STALL_PROBE_BPF && win.has_durations,
                .count = win.count,
                .p99_usec = p99,
                .max_usec = win.max_usec,
                .shadows_measured = win.has_shadows,
                .shadows_reason = manager_shadows_reason(m),
                .shadow_count = win.shadow_count,
                .shadow_timed = win.shadow_timed,
                .shadow_p99_usec = shadow_p99,
                .shadow_max_usec = win.shadow_max_usec,
                .held_on = manager_mirror_held_on(m, d),
                .window_usec = c->stall_window_usec,
                .budget_usec = c->stall_budget_usec,
                .calm_usec = c->stall_calm_usec,
                .min_waits = c->stall_min_waits,
                .now_usec = now,
        };
        r = policy_adapt(&in, ret);
        if (r < 0)
                return r;
        if (ret->over && !s->over && !ret->changed)
                log_info("%s: %s.", d->facts->name,
                         ret->reason); /* the cost of a disk that is not relaxed */
        if (ret->over)
                s->last_over_usec = now_boot;
        s->over = ret->over;
        free(s->reason);
        s->reason = TAKE_PTR(ret->reason);
        *ret_p99 = p99;
        return 0;
}

/* The persist step: records that Policy=balanced learned learned for d (the window s->last,
 * whose p99 is p99, and s->reason) and saves the records. Returns 1, 0 when d has no key to
 * keep it under (said once), or -errno. */
static int adapt_persist(Manager *m, EngineDevice *d, DeviceStalls *s, Learned learned, uint64_t now,
                         uint64_t p99) {
        const char *name = d->facts->name;
        int r;

        r = engine_learned_key(&m->engine, d);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (!s->unkeyed_logged)
                        log_info("%s: not learning %s: the disk has no identity (no WWN, serial, dm or md "
                                 "UUID, loop backing file), and without a diskseq or this boot's id it "
                                 "cannot be told from the next disk named %s.",
                                 name, learned_to_string(learned), name);
                s->unkeyed_logged = true;
                return 0;
        }

        LearnedRecord rec = { .key = d->learned_key,
                              .disk = (char *) name,
                              .learned = learned,
                              .since_usec = now,
                              .p99_usec = p99,
                              .count = s->last.count,
                              .budget_usec = m->engine.config.stall_budget_usec,
                              .reason = s->reason };
        r = learned_set(&m->engine.learned, &rec);
        if (r < 0)
                return r;
        r = learned_save(m->engine.state_dir, &m->engine.learned);
        if (r < 0)
                log_error_errno(r,
                                "%s: cannot save the learned decision in %s/learned (it applies until the "
                                "daemon stops): %m",
                                name, m->engine.state_dir);
        log_notice("%s: Policy=balanced learned %s: %s.", name, learned_to_string(learned), s->reason);
        if (learned_key_is_boot_local(d->learned_key))
                log_info("%s: what was learned holds for this boot only (diskseq %" PRIu64 "): the disk "
                         "has no identity (no WWN, serial, dm or md UUID, loop backing file) and its kernel "
                         "name may be another disk's after the next boot.",
                         name, d->facts->diskseq);
        return 1;
}

/* The emit step: tells the handler that disk went over its budget (the window s->last, p99). */
static void adapt_emit_budget_exceeded(Manager *m, const char *disk, const DeviceStalls *s, uint64_t p99) {
        if (m->handler)
                m->handler(m,
                           &(ManagerEvent){ .type = MANAGER_BUDGET_EXCEEDED,
                                            .device = disk,
                                            .window = &s->last,
                                            .p99_usec = p99 },
                           m->handler_userdata);
}

/* Runs the adaptive policy on one disk's window: adapt, persist what was learned, emit.
 * Returns 1 when what was learned changed, 0, or -errno. now_boot (CLOCK_BOOTTIME) times the
 * window, now (CLOCK_REALTIME) what is kept across boots. */
static int manager_adapt_device(Manager *m, EngineDevice *d, uint64_t now, uint64_t now_boot) {
        _cleanup_(adapt_decision_done) AdaptDecision dec = {};
        DeviceStalls *s = stalls_find(m, d->facts->devnum, true);
        uint64_t p99 = 0;
        int r;

        if (!s)
                return -ENOMEM;
        r = adapt_decide(m, d, s, now, now_boot, &dec, &p99);
        if (r < 0 || !dec.changed)
                return r;
        r = adapt_persist(m, d, s, dec.learned, now, p99);
        if (r <= 0)
                return r;
        if (dec.learned == LEARNED_OFF)
                adapt_emit_budget_exceeded(m, d->facts->name, s, p99);
        return 1;
}

bool manager_device_over_budget(Manager *m, const EngineDevice *d) {
        const DeviceStalls *s = stalls_find(m, d->facts->devnum, false);
        return s && s->over;
}

int manager_stall_losses(Manager *m, uint64_t *ret_waits, uint64_t *ret_comms) {
        if (manager_stall_mode(m) == STALL_PROBE_UNAVAILABLE)
                return -EOPNOTSUPP;
        *ret_waits = stall_probe_lost(m->probe);
        *ret_comms = stall_probe_lost_comms(m->probe);
        return 0;
}

/* Logs what the probe could not record since the last poll. */
static void manager_log_stall_losses(Manager *m) {
        uint64_t waits, comms;

        if (manager_stall_losses(m, &waits, &comms) < 0)
                return;
        if (waits > m->stall_lost)
                log_warning("%" PRIu64 " writeback waits were not recorded since the last poll (%" PRIu64
                            " since the probe started): the stall probe's tables are full, its counts are "
                            "lower bounds.",
                            waits - m->stall_lost, waits);
        if (comms > m->stall_lost_comms)
                log_notice("%" PRIu64
                           " stable-pages waits were counted without their command since the last "
                           "poll (%" PRIu64 " since the probe started): the table of commands is full.",
                           comms - m->stall_lost_comms, comms);
        m->stall_lost = waits;
        m->stall_lost_comms = comms;

        uint64_t mismatches = stall_probe_frame_mismatches(m->probe);
        if (mismatches > m->stall_frame_mismatches)
                log_warning("Stall probe: a wait's caller read from the learned stack slots differed from "
                            "the one its stack walk found (%" PRIu64 " audits failed): the waits since the "
                            "previous audit (1 in 64 is audited) may be counted under a wrong cause; every "
                            "wait's stack is walked from now on.",
                            mismatches);
        m->stall_frame_mismatches = mismatches;
}

/* One poll: sample the probe, run the adaptive policy on every disk, reconcile when it
 * learned something. */
static void manager_poll_stalls(Manager *m) {
        uint64_t now = now_usec_realtime(), now_boot = now_usec_boottime();
        bool changed = false;
        int r;

        manager_forget_stalls(m);
        r = manager_sample_stalls(m, now_boot);
        if (r < 0 && r != -EOPNOTSUPP)
                log_warning_errno(r, "Cannot read the stall probe: %m");
        manager_log_stall_losses(m);
        m->stall_poll_usec = now_boot;
        r = manager_mirrors_poll(m);
        if (r < 0)
                return;
        changed = r > 0;
        for (size_t i = 0; i < manager_n_devices(m); i++) {
                r = manager_adapt_device(m, manager_device(m, i), now, now_boot);
                if (r < 0) {
                        log_oom();
                        return;
                }
                changed = changed || r > 0;
        }
        if (changed)
                (void) manager_reconcile(m);
        else if ((r = manager_write_dump(m)) < 0)
                log_warning_errno(r, "Cannot write %s/devices.json: %m", m->engine.runtime_dir);
}

static uint64_t stall_poll_interval(const Manager *m) {
        return MIN(STALL_POLL_MAX_USEC, MAX(STALL_POLL_MIN_USEC, m->engine.config.stall_window_usec / 5));
}

static int on_stall_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r;

        manager_poll_stalls(m);
        r = sd_event_source_set_time_relative(s, stall_poll_interval(m));
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                log_error_errno(r, "Cannot re-arm the stall timer, stall figures stop: %m");
        return 0;
}

int manager_arm_stall_timers(Manager *m) {
        int r;

        if (!m->stall_timer) {
                r = sd_event_add_time_relative(m->event, &m->stall_timer, CLOCK_MONOTONIC,
                                               stall_poll_interval(m), 100 * USEC_PER_MSEC, on_stall_timer,
                                               m);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(m->stall_timer, "stalls");
        }
        return manager_arm_metrics_timer(m);
}

StallProbeMode manager_stall_mode(const Manager *m) {
        return m->probe ? stall_probe_mode(m->probe) : STALL_PROBE_UNAVAILABLE;
}

const char *manager_stall_reason(const Manager *m) {
        return m->probe ? stall_probe_mode_reason(m->probe) : "the stall probe is not started yet";
}

/* Whether the probe could measure shadow waits but has their programs detached. */
static bool manager_shadows_gated(const Manager *m) {
        return m->probe && stall_probe_shadows_available(m->probe) && !stall_probe_shadows(m->probe);
}

const char *manager_shadows_reason(const Manager *m) {
        return manager_shadows_gated(m) ? "shadow waits are measured only while a disk that may need "
                                          "stable writes runs without them, and none does now"
                                        : manager_stall_reason(m);
}

#define SHADOWS_ATTACH_FAILED 2

void manager_update_shadows(Manager *m) {
        const EngineDevice *why = NULL;
        int r;

        if (!m->probe || !stall_probe_shadows_available(m->probe))
                return;
        for (size_t i = 0; i < manager_n_devices(m) && !why; i++)
                if (disk_wants_shadows(manager_device(m, i), manager_device_consumers(m, i)))
                        why = manager_device(m, i);
        if (m->shadows_wanted == !!why)
                return; /* set and said before */
        r = stall_probe_set_shadows(m->probe, why);
        if (r < 0) { /* only attaching fails: said once, tried again at each change of the disks */
                if (m->shadows_wanted != SHADOWS_ATTACH_FAILED)
                        log_warning_errno(r,
                                          "Cannot attach the programs of shadow waits, though %s (need %s) "
                                          "runs without stable writes: what they would cost it is not "
                                          "measured: %m",
                                          why->facts->name, need_to_string(why->class.need));
                m->shadows_wanted = SHADOWS_ATTACH_FAILED;
                return;
        }
        m->shadows_wanted = !!why;
        if (why)
                log_info("Stall probe: shadow waits measured from now on: %s (need %s) runs without stable "
                         "writes.",
                         why->facts->name, need_to_string(why->class.need));
        else
                log_info("Stall probe: shadow waits not measured: no disk that may need stable writes runs "
                         "without them (their programs would cost every writer of a page under writeback).");
}

/* The probe's counts of every disk as of this iteration of the event loop: read from the
 * probe at the first call of an iteration, shared by the calls after it (a GetAll, a
 * ListDevices over every disk). */
static int manager_live_stalls(Manager *m, const StallStats **ret, size_t *ret_n) {
        uint64_t now = 0;
        int r;

        if (sd_event_now(m->event, CLOCK_MONOTONIC, &now) < 0)
                now = now_usec_monotonic(); /* not in the loop yet */
        if (!m->live_valid || m->live_usec != now) {
                _cleanup_free_ StallStats *list = NULL;
                size_t n = 0;

                r = stall_probe_list(m->probe, &list, &n);
                if (r < 0)
                        return r;
                free(m->live);
                m->live = TAKE_PTR(list);
                m->n_live = n;
                m->live_usec = now;
                m->live_valid = true; /* also with no waits at all (list NULL) */
        }
        *ret = m->live;
        *ret_n = m->n_live;
        return 0;
}

/* The probe's counts of disk devnum now (every bdi of it merged). */
static int manager_read_stalls(Manager *m, dev_t devnum, StallStats *ret) {
        const StallStats *list;
        size_t n;
        int r = manager_live_stalls(m, &list, &n);
        if (r < 0)
                return r;
        *ret = stall_stats_empty(m, devnum);
        ret->classified = stall_probe_classified(m->probe);
        format_devnum(devnum, ret->bdi);
        for (size_t i = 0; i < n; i++)
                if (list[i].devnum == devnum && devnum != 0) {
                        memcpy(ret->bdi, list[i].bdi, sizeof(ret->bdi));
                        stall_stats_merge(ret, &list[i]);
                }
        return 0;
}

int manager_device_stalls(Manager *m, const EngineDevice *d, StallStats *ret_total, StallStats *ret_window,
                          const char **ret_reason) {
        if (manager_stall_mode(m) == STALL_PROBE_UNAVAILABLE)
                return -EOPNOTSUPP;
        DeviceStalls *s = stalls_find(m, d->facts->devnum, false);
        if (ret_total && manager_read_stalls(m, d->facts->devnum, ret_total) < 0)
                /* The probe cannot be read now: the figures of the last poll. */
                *ret_total = s ? s->total : stall_stats_empty(m, d->facts->devnum);
        if (ret_window)
                *ret_window = s ? s->last : stall_stats_empty(m, d->facts->devnum);
        if (ret_reason)
                *ret_reason = s ? s->reason : NULL;
        return 0;
}

int manager_reset_stalls(Manager *m, const char *name) {
        dev_t devnum = 0;
        int r;

        if (!isempty(name)) {
                if (!device_name_is_valid(name))
                        return -EINVAL;
                EngineDevice *d = manager_find_device(m, name);
                if (!d)
                        return -ENODEV;
                devnum = d->facts->devnum;
        }
        if (manager_stall_mode(m) == STALL_PROBE_UNAVAILABLE)
                return -EOPNOTSUPP;
        r = stall_probe_reset(m->probe, devnum);
        if (r < 0)
                return r;
        m->live_valid = false; /* read again after the reset */
        for (size_t i = 0; i < m->n_stalls; i++) {
                DeviceStalls *s = &m->stalls[i];
                if (devnum != 0 && s->devnum != devnum)
                        continue;
                stall_window_done(&s->window);
                s->total = s->last = stall_stats_empty(m, s->devnum);
                s->over = false;
        }
        log_info("Stall figures of %s reset.", isempty(name) ? "every disk" : name);
        return manager_write_dump(m);
}

int manager_device_cost(Manager *m, const EngineDevice *d, char **ret_on, char **ret_off) {
        StallStats window = stall_stats_empty(m, d->facts->devnum);
        const char *reason = NULL;
        MirrorFigures fig = {};
        uint64_t p99 = 0, shadow_p99 = 0;
        bool measured = manager_device_stalls(m, d, NULL, &window, &reason) >= 0 && window.has_durations;
        bool mirror = manager_mirror_figures(m, d, &fig, NULL) >= 0;

        (void) stall_stats_percentile(&window, 0.99, &p99);
        (void) stall_stats_shadow_percentile(&window, 0.99, &shadow_p99);
        CostInput in = {
                .name = d->facts->name,
                .need = d->class.need,
                .need_reason = d->class.reasons ? d->class.reasons[0] : NULL,
                .in_force = d->class.in_force,
                .measured = measured,
                .unmeasured = manager_stall_reason(m),
                .window_usec = m->engine.config.stall_window_usec,
                .count = window.count,
                .p99_usec = p99,
                .shadows_measured = window.has_shadows,
                .shadows_unmeasured = manager_shadows_gated(m) ? manager_shadows_reason(m) : NULL,
                .shadow_count = window.shadow_count,
                .shadow_p99_usec = shadow_p99,
                .mirror = mirror,
                .shadow_pages = fig.shadow_pages,
                .mismatch_cnt = fig.mismatch_cnt,
                .checked = fig.check_usec > 0,
                .direct_known = window.has_direct,
                .direct_writes = window.direct_count,
        };
        return policy_cost(&in, ret_on, ret_off);
}

void manager_device_stalls_json(Manager *m, const EngineDevice *d, JsonWriter *w) {
        StallStats total, window;
        StallReport report = {
                .mode = stall_probe_mode_to_string(manager_stall_mode(m)),
                .window_usec = m->engine.config.stall_window_usec,
                .total = &total,
                .window = &window,
        };

        report.measured = manager_device_stalls(m, d, &total, &window, &report.reason) >= 0;
        if (!report.measured)
                report.reason = manager_stall_reason(m);
        report.losses_known = manager_stall_losses(m, &report.lost, &report.lost_comms) >= 0;
        json_key(w, "stalls");
        stall_report_json(&report, w);

        _cleanup_free_ char *on = NULL, *off = NULL;
        json_key(w, "cost");
        if (manager_device_cost(m, d, &on, &off) < 0)
                json_null(w);
        else {
                json_object_begin(w);
                json_member_string(w, "on", on);
                json_member_string(w, "off", off);
                json_object_end(w);
        }

        MirrorFigures fig;
        const char *last = NULL;
        json_key(w, "mirror");
        if (manager_mirror_figures(m, d, &fig, &last) < 0)
                json_null(w);
        else {
                json_object_begin(w);
                json_member_uint(w, "shadow_pages", fig.shadow_pages);
                json_member_uint(w, "direct_writes", fig.direct_writes);
                json_key(w, "mismatch_cnt");
                if (fig.check_usec > 0)
                        json_uint(w, fig.mismatch_cnt);
                else
                        json_null(w);
                json_member_uint(w, "check_usec", fig.check_usec);
                json_member_bool(w, "diverged", fig.diverged);
                json_key(w, "last_check");
                json_string(w, last);
                json_object_end(w);
        }
}
