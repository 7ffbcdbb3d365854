/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* explain: one disk's reasons, decision, override, stalls and consumers, as the daemon reports them. */
#include <assert.h>
#include <inttypes.h>

#include "bus-api.h"
#include "ctl-consumers.h"
#include "ctl-local.h"
#include "ctl-show.h"
#include "ctl.h"
#include "log.h"
#include "policy.h"
#include "util.h"

/* What explain shows of a disk: its Device properties, from one GetDeviceProperties call. */
typedef struct DeviceView {
        char *name, *need, *kind, *devnum, *desired, *source, *decision, *setting;
        char *stall_reason, *shadow_reason, *learned, *learned_reason, *cost_on, *cost_off;
        char *override_scope, *override_binding, *override_source, *stable_id;
        char **reasons;
        char **mounts; /* one line each */
        DeviceConsumers consumers;
        int flag, in_force, measured, shadows;
        uint64_t count, p99, max, wcount, since, diskseq;
        uint64_t shadow_count, shadow_p99, wshadow_count, direct; /* shadow waits, O_DIRECT writes */
} DeviceView;

static void device_view_done(DeviceView *v) {
        free(v->name);
        free(v->need);
        free(v->kind);
        free(v->devnum);
        free(v->desired);
        free(v->source);
        free(v->decision);
        free(v->setting);
        free(v->stall_reason);
        free(v->shadow_reason);
        free(v->learned);
        free(v->learned_reason);
        free(v->cost_on);
        free(v->cost_off);
        free(v->override_scope);
        free(v->override_binding);
        free(v->override_source);
        free(v->stable_id);
        strv_free(v->reasons);
        strv_free(v->mounts);
        device_consumers_done(&v->consumers);
}

static int read_mounts(sd_bus_message *m, DeviceView *v) {
        int r = sd_bus_message_enter_container(m, 'a', "(sssbs)");
        while (r >= 0) {
                const char *target, *fstype, *effective, *reason;
                int pending;
                r = sd_bus_message_read(m, "(sssbs)", &target, &fstype, &effective, &pending, &reason);
                if (r <= 0)
                        break;
                if (strv_extendf(&v->mounts, "%s (%s): effective %s%s%s", target, fstype, effective,
                                 pending ? ", pending: " : "; ", reason) < 0)
                        return -ENOMEM;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

/* The properties of one type that go into a member of DeviceView as they are. */
static const struct {
        const char *name;
        char type;
        size_t offset;
} device_view_fields[] = {
        { "Name", 's', offsetof(DeviceView, name) },
        { "Need", 's', offsetof(DeviceView, need) },
        { "Kind", 's', offsetof(DeviceView, kind) },
        { "DevNum", 's', offsetof(DeviceView, devnum) },
        { "Desired", 's', offsetof(DeviceView, desired) },
        { "DesiredSource", 's', offsetof(DeviceView, source) },
        { "DecisionReason", 's', offsetof(DeviceView, decision) },
        { "Setting", 's', offsetof(DeviceView, setting) },
        { "StallReason", 's', offsetof(DeviceView, stall_reason) },
        { "StallShadowReason", 's', offsetof(DeviceView, shadow_reason) },
        { "Learned", 's', offsetof(DeviceView, learned) },
        { "LearnedReason", 's', offsetof(DeviceView, learned_reason) },
        { "KernelFlag", 'i', offsetof(DeviceView, flag) },
        { "InForce", 'b', offsetof(DeviceView, in_force) },
        { "StallMeasured", 'b', offsetof(DeviceView, measured) },
        { "StallCount", 't', offsetof(DeviceView, count) },
        { "StallP99USec", 't', offsetof(DeviceView, p99) },
        { "StallMaxUSec", 't', offsetof(DeviceView, max) },
        { "StallWindowCount", 't', offsetof(DeviceView, wcount) },
        { "StallShadowMeasured", 'b', offsetof(DeviceView, shadows) },
        { "StallShadowCount", 't', offsetof(DeviceView, shadow_count) },
        { "StallShadowP99USec", 't', offsetof(DeviceView, shadow_p99) },
        { "StallWindowShadowCount", 't', offsetof(DeviceView, wshadow_count) },
        { "StallDirectWrites", 't', offsetof(DeviceView, direct) },
        { "CostOn", 's', offsetof(DeviceView, cost_on) },
        { "CostOff", 's', offsetof(DeviceView, cost_off) },
        { "LearnedUSec", 't', offsetof(DeviceView, since) },
        { "OverrideScope", 's', offsetof(DeviceView, override_scope) },
        { "OverrideBinding", 's', offsetof(DeviceView, override_binding) },
        { "OverrideSource", 's', offsetof(DeviceView, override_source) },
        { "DiskSeq", 't', offsetof(DeviceView, diskseq) },
        { "StableId", 's', offsetof(DeviceView, stable_id) },
};

/* Reads the container properties of DeviceView: the reasons, the mounts, the consumers. Returns
 * 1 when prop was one of them, 0 when not, or -errno. */
static int read_container_property(sd_bus_message *m, const char *prop, const char *contents,
                                   DeviceView *v) {
        int r;

        if (streq(prop, "Reasons") && streq(contents, "as")) {
                r = sd_bus_message_enter_container(m, 'v', "as");
                if (r >= 0)
                        r = sd_bus_message_read_strv(m, &v->reasons);
        } else if (streq(prop, "Mounts") && streq(contents, "a(sssbs)")) {
                r = sd_bus_message_enter_container(m, 'v', "a(sssbs)");
                if (r >= 0)
                        r = read_mounts(m, v);
        } else if (streq(prop, "Consumers") && streq(contents, "a(ssssbstbs)")) {
                r = sd_bus_message_enter_container(m, 'v', "a(ssssbstbs)");
                if (r >= 0)
                        r = ctl_read_consumers(m, &v->consumers);
        } else
                return 0;
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 1;
}

/* Reads one property of device_view_fields into its member of v. Returns 1 when prop was one
 * of them, 0 when not, or -errno. */
static int read_field_property(sd_bus_message *m, const char *prop, const char *contents, DeviceView *v) {
        for (size_t i = 0; i < ELEMENTSOF(device_view_fields); i++) {
                char sig[2] = { device_view_fields[i].type, '\0' };
                int r;

                if (!streq(prop, device_view_fields[i].name) || !streq(contents, sig))
                        continue;
                void *p = (char *) v + device_view_fields[i].offset;
                if (device_view_fields[i].type == 's') {
                        const char *str;
                        r = sd_bus_message_read(m, "v", "s", &str);
                        if (r >= 0 && !(*(char **) p = strdup(str)))
                                r = -ENOMEM;
                } else
                        r = sd_bus_message_read(m, "v", sig, p);
                return r < 0 ? r : 1;
        }
        return 0;
}

/* Reads the a{sv} of GetDeviceProperties into v; properties it does not know are skipped. */
static int read_device_view(sd_bus_message *m, DeviceView *v) {
        int r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        for (;;) {
                const char *prop, *contents;

                r = sd_bus_message_enter_container(m, 'e', "sv");
                if (r <= 0)
                        break;
                r = sd_bus_message_read(m, "s", &prop);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(m, NULL, &contents);
                if (r < 0)
                        return r;
                r = read_container_property(m, prop, contents, v);
                if (r == 0)
                        r = read_field_property(m, prop, contents, v);
                if (r == 0)
                        r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (!v->name || !v->need || !v->kind || !v->devnum || !v->desired || !v->source || !v->decision ||
            !v->setting || !v->stall_reason || !v->learned || !v->learned_reason || !v->override_scope ||
            !v->override_binding || !v->override_source || !v->stable_id)
                return -EBADMSG; /* a daemon that does not have them all */
        return sd_bus_message_exit_container(m);
}

/* The stall lines of explain: the figures, what the policy made of them, what it learned. */
static void explain_stalls(const DeviceView *v) {
        char a[32], b[32];

        if (!v->measured)
                printf("  %-9snot measured: %s\n", "stalls:", v->stall_reason);
        else if (v->p99 == STALL_UNMEASURED_USEC)
                printf("  %-9s%" PRIu64 " waits since the probe started, %" PRIu64
                       " in the window (no durations)\n",
                       "stalls:", v->count, v->wcount);
        else
                printf("  %-9s%" PRIu64 " waits since the probe started, p99 <= %s, max %s; %" PRIu64
                       " in the window\n",
                       "stalls:", v->count, format_usec(v->p99, a), format_usec(v->max, b), v->wcount);
        if (v->measured && v->shadows && v->shadow_p99 != STALL_UNMEASURED_USEC)
                printf("  %-9s%" PRIu64 " shadow waits since the probe started, shadow p99 <= %s; %" PRIu64
                       " in the window\n",
                       "shadows:", v->shadow_count, format_usec(v->shadow_p99, a), v->wshadow_count);
        else if (v->measured)
                printf("  %-9snot measured: %s\n",
                       "shadows:", isempty(v->shadow_reason) ? "not by this probe" : v->shadow_reason);
        if (v->measured && v->direct != STALL_UNMEASURED_USEC && v->direct > 0)
                printf("  %-9s%" PRIu64 " O_DIRECT writes since the probe started\n", "direct:", v->direct);
        if (v->measured && !isempty(v->stall_reason))
                printf("  %-9s%s\n", "cost:", v->stall_reason);
        if (v->cost_on)
                printf("  %-9s%s\n", "on:", v->cost_on);
        if (v->cost_off)
                printf("  %-9s%s\n", "off:", v->cost_off);
        if (!isempty(v->learned))
                ctl_print_learned(v->learned, v->since, v->learned_reason);
}

int verb_explain(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(device_view_done) DeviceView v = { .flag = -1 };
        const char *path;
        int r;

        assert(argv);

        /* The disk's record of status --json has all that explain shows (the reasons, the
         * decision, the override, what was learned, the stall figures, the mounts): one schema. */
        if (arg_json != JSON_OFF)
                return verb_status(argc, argv);
        if (ctl_bus_open(&bus) < 0 || !ctl_daemon_running(bus))
                return ctl_explain_local(argv[0]);

        /* Every property, StableId included, in one round trip. */
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "GetDeviceProperties", &error,
                               &reply, "s", argv[0]);
        if (r < 0)
                return ctl_call_error(argv[0], &error, r);
        if ((r = sd_bus_message_read(reply, "o", &path)) < 0)
                return log_error_errno(r, "Bad reply: %m");
        r = read_device_view(reply, &v);
        if (r < 0)
                return log_error_errno(r, "Bad reply to GetDeviceProperties of %s: %m", path);

        printf("%s (%s, %s): need %s\n", v.name, v.devnum, v.kind, v.need);
        ctl_print_lines("because:", v.reasons);
        printf("  %-9sstable writes %s (queue/stable_writes=%d)\n",
               "kernel:", kernel_state_to_string(v.flag, v.in_force), v.flag);
        printf("  %-9s%s (%s): %s\n", "desired:", v.desired, v.source, v.decision);
        printf("  %-9s%s\n", "setting:", v.setting);
        ctl_print_override(v.override_scope, v.override_binding, v.override_source, v.diskseq);
        ctl_print_stable_id(v.stable_id);
        explain_stalls(&v);
        ctl_print_lines("mounts:", v.mounts);
        ctl_print_consumers(&v.consumers);
        ctl_say_consumer_hazards(v.name, &v.consumers);
        if (need_is_protected(need_from_string(v.need)) && !v.in_force && v.flag != ATTR_ABSENT)
                ctl_say_flag_off(v.name, v.need, v.reasons ? v.reasons[0] : NULL);
        return 0;
}
