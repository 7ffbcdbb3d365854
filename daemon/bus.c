/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The org.stablepages1 objects: the vtables of the Manager and of the Devices, and a getter
 * per property. The method handlers are in bus-devices.c, bus-policy.c, bus-apply.c and
 * bus-stalls.c; the connection and signals in bus-service.c. */
#include <inttypes.h>
#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "bus-internal.h"
#include "config-build.h"
#include "identity.h"
#include "remount.h"
#include "util.h"

/* --- Manager properties ----------------------------------------------------------------- */

static void append_unmounted(const char *target, const char *disk, const char *reason, bool retrying,
                             void *userdata) {
        _cleanup_(bus_strings_done) BusStrings strings = {};
        const char *t = bus_string(&strings, target), *why = bus_string(&strings, reason);

        if (strings.error >= 0)
                (void) sd_bus_message_append(userdata, "(sssb)", t, disk, why, retrying);
}

/* A getter of a Manager property: appends expr, of D-Bus type sig, computed from the service b
 * and the configuration in force c. */
#define DEFINE_MANAGER_PROPERTY(name, sig, expr)                                                            \
        static int property_get_##name(sd_bus *bus, const char *path, const char *interface,                \
                                       const char *property, sd_bus_message *reply, void *userdata,         \
                                       sd_bus_error *error) {                                               \
                _unused_ BusService *b = userdata;                                                          \
                _unused_ const Config *c = &b->manager->engine.config;                                      \
                return sd_bus_message_append(reply, sig, expr);                                             \
        }

/* What the probe could not record, STALL_UNMEASURED_USEC when nothing measures. */
static uint64_t stall_lost(BusService *b, bool comms) {
        uint64_t waits = STALL_UNMEASURED_USEC, lost_comms = STALL_UNMEASURED_USEC;
        (void) manager_stall_losses(b->manager, &waits, &lost_comms);
        return comms ? lost_comms : waits;
}

DEFINE_MANAGER_PROPERTY(version, "s", PACKAGE_VERSION);
DEFINE_MANAGER_PROPERTY(policy, "s", policy_mode_to_string(c->policy));
DEFINE_MANAGER_PROPERTY(apply_mounted, "s", apply_mounted_to_string(c->apply_mounted));
DEFINE_MANAGER_PROPERTY(stall_budget_usec, "t", c->stall_budget_usec);
DEFINE_MANAGER_PROPERTY(stall_probe, "s", stall_probe_mode_to_string(manager_stall_mode(b->manager)));
DEFINE_MANAGER_PROPERTY(stall_lost, "t", stall_lost(b, false));
DEFINE_MANAGER_PROPERTY(stall_comms_lost, "t", stall_lost(b, true));
DEFINE_MANAGER_PROPERTY(n_devices, "u", (uint32_t) manager_n_devices(b->manager));

static int property_get_stall_probe_reason(sd_bus *bus, const char *path, const char *interface,
                                           const char *property, sd_bus_message *reply, void *userdata,
                                           sd_bus_error *error) {
        BusService *b = userdata;
        return bus_append_string_escaped(reply, manager_stall_reason(b->manager));
}

static int property_get_unmounted(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        int r = sd_bus_message_open_container(reply, 'a', "(sssb)");
        if (r >= 0)
                remount_foreach_unmounted(b->manager->remount, append_unmounted, reply);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int property_get_config_problems(sd_bus *bus, const char *path, const char *interface,
                                        const char *property, sd_bus_message *reply, void *userdata,
                                        sd_bus_error *error) {
        BusService *b = userdata;
        const ConfigDiags *d = &b->manager->engine.diags;
        _cleanup_(bus_strings_done) BusStrings strings = {};
        int r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && i < d->n; i++) {
                _cleanup_free_ char *s =
                        d->items[i].line > 0
                                ? strdup_printf("%s:%u: %s", d->items[i].file, d->items[i].line,
                                                d->items[i].message)
                                : strdup_printf("%s: %s", d->items[i].file, d->items[i].message);
                r = s ? sd_bus_message_append(reply, "s", bus_string(&strings, s)) : -ENOMEM;
        }
        /* Need= lines that would lower a detected need: known per disk only. */
        for (size_t i = 0; r >= 0 && i < manager_n_devices(b->manager); i++) {
                const char *p = manager_device(b->manager, i)->need_problem;
                if (p)
                        r = sd_bus_message_append(reply, "s", bus_string(&strings, p));
        }
        if (r >= 0)
                r = strings.error;
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

const sd_bus_vtable manager_vtable[] = {
        /* Reads are open to everyone; each mutating method asks polkit itself. */
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Policy", "s", property_get_policy, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ApplyMounted", "s", property_get_apply_mounted, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("StallBudgetUSec", "t", property_get_stall_budget_usec, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ConfigProblems", "as", property_get_config_problems, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("NDevices", "u", property_get_n_devices, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Unmounted", "a(sssb)", property_get_unmounted, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("StallProbe", "s", property_get_stall_probe, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("StallProbeReason", "s", property_get_stall_probe_reason, 0,
                        SD_BUS_VTABLE_PROPERTY_CONST),
        /* Counters of the probe: read them, no signal announces them. */
        SD_BUS_PROPERTY("StallLost", "t", property_get_stall_lost, 0, SD_BUS_VTABLE_PROPERTY_EXPLICIT),
        SD_BUS_PROPERTY("StallCommsLost", "t", property_get_stall_comms_lost, 0,
                        SD_BUS_VTABLE_PROPERTY_EXPLICIT),
        SD_BUS_METHOD_WITH_NAMES("ListDevices", NULL, , "a(sossssbt)", SD_BUS_PARAM(devices),
                                 method_list_devices, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListFilesystems", NULL, , "a(ssssssbs)", SD_BUS_PARAM(filesystems),
                                 method_list_filesystems, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListConsumers", NULL, , "a(sssssbstbs)", SD_BUS_PARAM(consumers),
                                 method_list_consumers, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetDevice", "s", SD_BUS_PARAM(name), "o", SD_BUS_PARAM(path),
                                 method_get_device, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetDeviceProperties", "s", SD_BUS_PARAM(name), "oa{sv}",
                                 SD_BUS_PARAM(path) SD_BUS_PARAM(properties), method_get_device_properties,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("DumpJSON", "ast", SD_BUS_PARAM(names) SD_BUS_PARAM(flags), "s",
                                 SD_BUS_PARAM(json), method_dump_json, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES(
                "SetDevicePolicy", "sst", SD_BUS_PARAM(name) SD_BUS_PARAM(mode) SD_BUS_PARAM(flags), "s",
                SD_BUS_PARAM(message), method_set_device_policy, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ResetDevicePolicy", "st", SD_BUS_PARAM(name) SD_BUS_PARAM(flags), "as",
                                 SD_BUS_PARAM(removed), method_reset_device_policy,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListOverrides", NULL, , "a(ssbsss)", SD_BUS_PARAM(overrides),
                                 method_list_overrides, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Apply", "ast", SD_BUS_PARAM(names) SD_BUS_PARAM(flags), "a(sbbbs)",
                                 SD_BUS_PARAM(results), method_apply, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Reload", NULL, NULL, method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES(
                "GetStalls", "s", SD_BUS_PARAM(name), "sbbtttttata(st)tttttts",
                SD_BUS_PARAM(mode) SD_BUS_PARAM(measured) SD_BUS_PARAM(durations) SD_BUS_PARAM(count)
                        SD_BUS_PARAM(sum_usec) SD_BUS_PARAM(max_usec) SD_BUS_PARAM(p50_usec) SD_BUS_PARAM(
                                p99_usec) SD_BUS_PARAM(hist) SD_BUS_PARAM(comms) SD_BUS_PARAM(sync_count)
                                SD_BUS_PARAM(other_count) SD_BUS_PARAM(window_usec)
                                        SD_BUS_PARAM(window_count) SD_BUS_PARAM(window_p99_usec)
                                                SD_BUS_PARAM(window_max_usec) SD_BUS_PARAM(reason),
                method_get_stalls, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ResetStalls", "s", SD_BUS_PARAM(name), NULL, , method_reset_stalls,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetConfig", NULL, , "asa(ssssa(su))",
                                 SD_BUS_PARAM(files) SD_BUS_PARAM(entries), method_get_config,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_NAMES(
                "Applied", "sbbs",
                SD_BUS_PARAM(name) SD_BUS_PARAM(old_value) SD_BUS_PARAM(new_value) SD_BUS_PARAM(reason), 0),
        SD_BUS_SIGNAL_WITH_NAMES("Refused", "ss", SD_BUS_PARAM(name) SD_BUS_PARAM(reason), 0),
        SD_BUS_SIGNAL_WITH_NAMES(
                "BudgetExceeded", "sttt",
                SD_BUS_PARAM(name) SD_BUS_PARAM(p99_usec) SD_BUS_PARAM(budget_usec) SD_BUS_PARAM(count), 0),
        SD_BUS_SIGNAL_WITH_NAMES("Reloaded", "bas", SD_BUS_PARAM(ok) SD_BUS_PARAM(problems), 0),
        SD_BUS_SIGNAL_WITH_NAMES("RemountFinished", "ssbts",
                                 SD_BUS_PARAM(target) SD_BUS_PARAM(device) SD_BUS_PARAM(ok)
                                         SD_BUS_PARAM(duration_usec) SD_BUS_PARAM(message),
                                 0),
        SD_BUS_VTABLE_END,
};

/* --- Device objects ---------------------------------------------------------------------- */

/* Finds the disk of a device object: its getters' userdata. */
int device_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_free_ char *name = NULL;

        if (sd_bus_path_decode(path, BUS_DEVICE_PREFIX, &name) <= 0 || !device_name_is_valid(name))
                return 0;
        EngineDevice *d = manager_find_device(b->manager, name);
        if (!d || !streq(d->facts->name, name))
                return 0;
        *found = d;
        return 1;
}

int device_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        for (size_t i = 0; i < manager_n_devices(b->manager); i++) {
                char *p = bus_device_path(manager_device(b->manager, i)->facts->name);
                if (!p)
                        return -ENOMEM;
                int r = strv_extend_with_size(&l, &n, p);
                free(p);
                if (r < 0)
                        return r;
        }
        *nodes = TAKE_PTR(l);
        return 1;
}

/* The service of a device object, whose getters have the disk as userdata: the userdata the
 * fallback vtable was registered with. */
static BusService *device_service(sd_bus *bus) {
        return sd_bus_slot_get_userdata(sd_bus_get_current_slot(bus));
}

/* The stall figures of d for the current request: read once per request and disk. */
static int device_stall_figures(sd_bus *bus, const EngineDevice *d, const StallFigures **ret) {
        BusService *b = device_service(bus);
        sd_bus_message *request = sd_bus_get_current_message(bus);

        if (!request || request != b->stall_request || d->facts->devnum != b->stall_devnum) {
                b->stall_request = sd_bus_message_unref(b->stall_request);
                int r = stall_figures_compute(b->manager, d, &b->stall_figures);
                if (r < 0)
                        return r;
                /* Held until the next request: its address names no other message meanwhile. */
                b->stall_request = sd_bus_message_ref(request);
                b->stall_devnum = d->facts->devnum;
        }
        *ret = &b->stall_figures;
        return 0;
}

/* A getter of a device property: appends expr, of D-Bus type sig, computed from the disk d. */
#define DEFINE_DEVICE_PROPERTY(name, sig, expr)                                                             \
        static int property_get_##name(sd_bus *bus, const char *path, const char *interface,                \
                                       const char *property, sd_bus_message *reply, void *userdata,         \
                                       sd_bus_error *error) {                                               \
                const EngineDevice *d = userdata;                                                           \
                return sd_bus_message_append(reply, sig, expr);                                             \
        }

/* The same for a string from the kernel or from users: escaped (utf8.h). */
#define DEFINE_DEVICE_PROPERTY_ESCAPED(name, expr)                                                          \
        static int property_get_##name(sd_bus *bus, const char *path, const char *interface,                \
                                       const char *property, sd_bus_message *reply, void *userdata,         \
                                       sd_bus_error *error) {                                               \
                const EngineDevice *d = userdata;                                                           \
                return bus_append_string_escaped(reply, expr);                                              \
        }

/* The same for a stall figure: f holds the figures of the request. */
#define DEFINE_DEVICE_STALL_PROPERTY(name, sig, expr)                                                       \
        static int property_get_##name(sd_bus *bus, const char *path, const char *interface,                \
                                       const char *property, sd_bus_message *reply, void *userdata,         \
                                       sd_bus_error *error) {                                               \
                const StallFigures *f;                                                                      \
                int r = device_stall_figures(bus, userdata, &f);                                            \
                return r < 0 ? r : sd_bus_message_append(reply, sig, expr);                                 \
        }

DEFINE_DEVICE_PROPERTY(name, "s", d->facts->name);
DEFINE_DEVICE_PROPERTY(devnum, "s", format_devnum(d->facts->devnum, (char[32]){}));
DEFINE_DEVICE_PROPERTY(kind, "s", device_kind_to_string(d->facts->kind));
DEFINE_DEVICE_PROPERTY(need, "s", need_to_string(d->class.need));
DEFINE_DEVICE_PROPERTY(kernel_flag, "i", (int32_t) d->facts->stable_writes);
DEFINE_DEVICE_PROPERTY(in_force, "b", d->class.in_force);
DEFINE_DEVICE_PROPERTY(desired, "s", desired_to_string(d->decision.desired));
DEFINE_DEVICE_PROPERTY(desired_source, "s", desired_source_to_string(d->decision.source));
DEFINE_DEVICE_PROPERTY_ESCAPED(decision_reason, d->decision.reason);
DEFINE_DEVICE_PROPERTY(setting, "s", setting_to_string(d->setting));
DEFINE_DEVICE_PROPERTY(managed, "b", d->managed);
DEFINE_DEVICE_PROPERTY(diskseq, "t", d->facts->diskseq);
DEFINE_DEVICE_PROPERTY(override_scope, "s", d->override_scope ?: "");
DEFINE_DEVICE_PROPERTY_ESCAPED(override_binding, d->override_binding);
DEFINE_DEVICE_PROPERTY_ESCAPED(override_source, d->override_source);
DEFINE_DEVICE_PROPERTY(pending, "b",
                       manager_count_pending(device_service(bus)->manager, d->facts->name) > 0);
DEFINE_DEVICE_PROPERTY(learned, "s", learned_to_string(d->learned) ?: "");
DEFINE_DEVICE_PROPERTY(learned_usec, "t", d->learned == LEARNED_NONE ? UINT64_C(0) : d->learned_since_usec);
DEFINE_DEVICE_PROPERTY_ESCAPED(learned_reason, d->learned_reason);
DEFINE_DEVICE_STALL_PROPERTY(stall_measured, "b", f->measured);
DEFINE_DEVICE_STALL_PROPERTY(stall_count, "t", f->measured ? f->total.count : STALL_UNMEASURED_USEC);
DEFINE_DEVICE_STALL_PROPERTY(stall_p99_usec, "t", f->p99_usec);
DEFINE_DEVICE_STALL_PROPERTY(stall_max_usec, "t", f->durations ? f->total.max_usec : STALL_UNMEASURED_USEC);
DEFINE_DEVICE_STALL_PROPERTY(stall_window_count, "t", f->measured ? f->window.count : STALL_UNMEASURED_USEC);
DEFINE_DEVICE_STALL_PROPERTY(stall_window_p99_usec, "t", f->window_p99_usec);
DEFINE_DEVICE_STALL_PROPERTY(stall_shadow_measured, "b", f->measured && f->total.has_shadows);
DEFINE_DEVICE_STALL_PROPERTY(stall_shadow_count, "t",
                             f->measured && f->total.has_shadows ? f->total.shadow_count
                                                                 : STALL_UNMEASURED_USEC);
DEFINE_DEVICE_STALL_PROPERTY(stall_shadow_p99_usec, "t", f->shadow_p99_usec);
DEFINE_DEVICE_STALL_PROPERTY(stall_window_shadow_count, "t",
                             f->measured && f->window.has_shadows ? f->window.shadow_count
                                                                  : STALL_UNMEASURED_USEC);
DEFINE_DEVICE_STALL_PROPERTY(stall_window_shadow_p99_usec, "t", f->window_shadow_p99_usec);
DEFINE_DEVICE_STALL_PROPERTY(stall_direct_writes, "t",
                             f->measured && f->total.has_direct ? f->total.direct_count
                                                                : STALL_UNMEASURED_USEC);
DEFINE_DEVICE_STALL_PROPERTY(mirror_shadow_pages, "t",
                             f->mirror ? f->fig.shadow_pages : STALL_UNMEASURED_USEC);
DEFINE_DEVICE_STALL_PROPERTY(mirror_mismatch_count, "t",
                             f->mirror && f->fig.check_usec > 0 ? f->fig.mismatch_cnt
                                                                : STALL_UNMEASURED_USEC);
DEFINE_DEVICE_STALL_PROPERTY(mirror_check_usec, "t", f->mirror ? f->fig.check_usec : UINT64_C(0));
DEFINE_DEVICE_STALL_PROPERTY(mirror_diverged, "b", f->mirror && f->fig.diverged);

static int property_get_reasons(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const EngineDevice *d = userdata;
        return bus_append_strv_escaped(reply, d->class.reasons);
}

static int property_get_stable_id(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const EngineDevice *d = userdata;
        _cleanup_(stable_id_done) StableId id = {};
        _cleanup_free_ char *match = NULL;

        int r = stable_id_pick(d->facts, &device_service(bus)->manager->engine.table, STABLE_ID_ANY, &id,
                               NULL);
        if (r == -ENOMEM)
                return r;
        match = r >= 0 ? stable_id_match_text(&id) : NULL;
        if (r >= 0 && !match)
                return -ENOMEM;
        return bus_append_string_escaped(reply, match);
}

static int property_get_mounts(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const EngineDevice *d = userdata;
        _cleanup_free_ const TrackedMount **mounts = NULL;
        _cleanup_(bus_strings_done) BusStrings strings = {};

        int r = manager_get_mounts(device_service(bus)->manager, d->facts->name, &mounts);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(sssbs)");
        for (const TrackedMount **t = mounts; r >= 0 && t && *t; t++)
                r = sd_bus_message_append(reply, "(sssbs)", bus_string(&strings, (*t)->target),
                                          bus_string(&strings, (*t)->fstype), (*t)->effective ? "on" : "off",
                                          (*t)->pending, bus_string(&strings, (*t)->reason));
        if (r >= 0)
                r = strings.error;
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int property_get_consumers(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const EngineDevice *d = userdata;
        Manager *m = device_service(bus)->manager;
        const DeviceConsumers *c = manager_device_consumers(m, (size_t) (d - m->engine.devices));
        int r = sd_bus_message_open_container(reply, 'a', "(ssssbstbs)");

        for (size_t i = 0; r >= 0 && c && i < c->n; i++) {
                r = sd_bus_message_open_container(reply, 'r', "ssssbstbs");
                if (r >= 0)
                        r = append_consumer(reply, &c->items[i]);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int property_get_stall_reason(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        const StallFigures *f;
        int r = device_stall_figures(bus, userdata, &f);
        return r < 0 ? r : bus_append_string_escaped(reply, f->reason);
}

static int property_get_stall_shadow_reason(sd_bus *bus, const char *path, const char *interface,
                                            const char *property, sd_bus_message *reply, void *userdata,
                                            sd_bus_error *error) {
        BusService *b = device_service(bus);
        const StallFigures *f;
        int r = device_stall_figures(bus, userdata, &f);
        if (r < 0)
                return r;
        return bus_append_string_escaped(
                reply, f->measured && f->total.has_shadows ? "" : manager_shadows_reason(b->manager));
}

static int property_get_cost(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const StallFigures *f;
        int r = device_stall_figures(bus, userdata, &f);
        return r < 0 ? r
                     : bus_append_string_escaped(reply,
                                                 streq(property, "CostOn") ? f->cost_on : f->cost_off);
}

#define DEVICE_PROPERTY(name, sig, getter)                                                                  \
        SD_BUS_PROPERTY(name, sig, property_get_##getter, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE)

#define STALL_PROPERTY(name, sig, getter) SD_BUS_PROPERTY(name, sig, property_get_##getter, 0, 0)

const sd_bus_vtable device_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", property_get_name, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("DevNum", "s", property_get_devnum, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        DEVICE_PROPERTY("Kind", "s", kind),
        DEVICE_PROPERTY("Need", "s", need),
        DEVICE_PROPERTY("Reasons", "as", reasons),
        DEVICE_PROPERTY("KernelFlag", "i", kernel_flag),
        DEVICE_PROPERTY("InForce", "b", in_force),
        DEVICE_PROPERTY("Desired", "s", desired),
        DEVICE_PROPERTY("DesiredSource", "s", desired_source),
        DEVICE_PROPERTY("DecisionReason", "s", decision_reason),
        DEVICE_PROPERTY("Setting", "s", setting),
        DEVICE_PROPERTY("Managed", "b", managed),
        DEVICE_PROPERTY("DiskSeq", "t", diskseq),
        /* Computed when read (it depends on every other disk): no signal announces it. */
        SD_BUS_PROPERTY("StableId", "s", property_get_stable_id, 0, SD_BUS_VTABLE_PROPERTY_EXPLICIT),
        DEVICE_PROPERTY("OverrideScope", "s", override_scope),
        DEVICE_PROPERTY("OverrideBinding", "s", override_binding),
        DEVICE_PROPERTY("OverrideSource", "s", override_source),
        DEVICE_PROPERTY("Mounts", "a(sssbs)", mounts),
        DEVICE_PROPERTY("Consumers", "a(ssssbstbs)", consumers),
        DEVICE_PROPERTY("Pending", "b", pending),
        DEVICE_PROPERTY("Learned", "s", learned),
        DEVICE_PROPERTY("LearnedUSec", "t", learned_usec),
        DEVICE_PROPERTY("LearnedReason", "s", learned_reason),
        /* Measured figures change with every wait: read them (GetAll too, which explain uses);
         * no signal announces them. */
        STALL_PROPERTY("StallMeasured", "b", stall_measured),
        STALL_PROPERTY("StallCount", "t", stall_count),
        STALL_PROPERTY("StallP99USec", "t", stall_p99_usec),
        STALL_PROPERTY("StallMaxUSec", "t", stall_max_usec),
        STALL_PROPERTY("StallWindowCount", "t", stall_window_count),
        STALL_PROPERTY("StallWindowP99USec", "t", stall_window_p99_usec),
        STALL_PROPERTY("StallReason", "s", stall_reason),
        /* Shadow waits: what stable writes would cost while they are off (not waits that happened). */
        STALL_PROPERTY("StallShadowMeasured", "b", stall_shadow_measured),
        STALL_PROPERTY("StallShadowReason", "s", stall_shadow_reason),
        STALL_PROPERTY("StallShadowCount", "t", stall_shadow_count),
        STALL_PROPERTY("StallShadowP99USec", "t", stall_shadow_p99_usec),
        STALL_PROPERTY("StallWindowShadowCount", "t", stall_window_shadow_count),
        STALL_PROPERTY("StallWindowShadowP99USec", "t", stall_window_shadow_p99_usec),
        STALL_PROPERTY("StallDirectWrites", "t", stall_direct_writes),
        STALL_PROPERTY("CostOn", "s", cost),
        STALL_PROPERTY("CostOff", "s", cost),
        STALL_PROPERTY("MirrorShadowPages", "t", mirror_shadow_pages),
        STALL_PROPERTY("MirrorMismatchCount", "t", mirror_mismatch_count),
        STALL_PROPERTY("MirrorCheckUSec", "t", mirror_check_usec),
        STALL_PROPERTY("MirrorDiverged", "b", mirror_diverged),
        SD_BUS_VTABLE_END,
};
