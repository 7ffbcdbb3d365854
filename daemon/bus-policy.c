/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SetDevicePolicy and ResetDevicePolicy: overrides at run time or in drop-ins, behind the
 * interlock and polkit. */
#include <inttypes.h>
#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "bus-internal.h"
#include "log.h"
#include "manager-overrides.h"
#include "util.h"

/* The interlock, before anything is written anywhere: turning stable writes off on a disk that
 * needs them takes the force. Returns 0 when the request may go on, else the refusal (logged,
 * signalled and set in error). */
static int check_interlock(BusService *b, const EngineDevice *d, Setting setting, bool force,
                           sd_bus_error *error) {
        const char *disk = d->facts->name;

        if (setting != SETTING_OFF || !need_is_protected(d->class.need) || force)
                return 0;
        log_notice("%s: refused a request to turn stable writes off: need is %s.", disk,
                   need_to_string(d->class.need));
        (void) sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Refused", "ss", disk,
                                  "need is required or unknown and force was not given");
        return bus_reply_error(
                error, BUS_ERROR_REFUSED,
                "refusing to turn off stable writes on %s: need is %s (%s); use --force to override", disk,
                need_to_string(d->class.need), d->class.reasons ? d->class.reasons[0] : "no reason");
}

/* Keeps the override of d (disk: its name, a copy): at run time, bound to the disk's diskseq,
 * or in a drop-in, whose sentence goes to *ret_done. d is not valid after. Returns 0, or what a
 * method handler returns. */
static int store_override(BusService *b, const EngineDevice *d, const char *disk, Setting setting,
                          uint64_t flags, char **ret_done, sd_bus_error *error) {
        bool force = flags & SET_FLAG_FORCE;
        int r;

        if (flags & SET_FLAG_RUNTIME) {
                r = manager_set_override(b->manager, d, setting, force);
                if (r == -EOPNOTSUPP)
                        return bus_reply_error(
                                error, BUS_ERROR_NO_IDENTITY,
                                "%s: the kernel gives this disk no diskseq (Linux 5.15 and later "
                                "do): a runtime override could not be told apart from the next "
                                "disk that takes the name; use a persistent override",
                                disk);
                return r;
        }
        r = manager_set_persistent(b->manager, d, setting, force, flags & SET_FLAG_BIND_NAME, ret_done);
        if (r < 0 && r != -ENOMEM)
                return bus_reply_error(error,
                                       r == -ENXIO    ? BUS_ERROR_NO_IDENTITY
                                       : r == -EINVAL ? BUS_ERROR_CONFIG_INVALID
                                                      : BUS_ERROR_APPLY_FAILED,
                                       "%s", *ret_done ?: strerror(-r));
        return r;
}

/* Writes the flag of disk as its decision now says. Returns 0, or what a method handler
 * returns. */
static int apply_now(BusService *b, const char *disk, sd_bus_error *error) {
        _cleanup_(apply_result_done) ApplyResult res = {};
        int r = manager_apply_device(b->manager, disk, &res);

        if (r < 0 && r != -ENOMEM)
                return bus_reply_error(error, r == -EPERM ? BUS_ERROR_REFUSED : BUS_ERROR_APPLY_FAILED, "%s",
                                       res.message ?: strerror(-r));
        return r;
}

/* The reply of SetDevicePolicy: what was set and where it is kept (done: the drop-in's
 * sentence, for a persistent override), then the decision and the kernel state of d now. NULL
 * on ENOMEM. */
static char *set_device_policy_reply(const EngineDevice *d, Setting setting, uint64_t flags,
                                     const char *done) {
        _cleanup_free_ char *kept = NULL;
        bool force = flags & SET_FLAG_FORCE;

        if (flags & SET_FLAG_RUNTIME)
                kept = setting == SETTING_AUTO && !force
                               ? strdup("removed")
                               : strdup_printf("until the disk goes away, bound to %s",
                                               d->override_binding ?: "?");
        else
                kept = done ? strdup(done) : NULL;
        if (!kept)
                return NULL;
        return strdup_printf("%s: StableWrites=%s (%s), %s: %s; desired %s: %s; kernel %s", d->facts->name,
                             setting_to_string(setting), force ? "force" : "no force",
                             flags & SET_FLAG_RUNTIME ? "runtime" : "persistent", kept,
                             desired_to_string(d->decision.desired), d->decision.reason,
                             kernel_state_to_string(d->facts->stable_writes, d->class.in_force));
}

static int set_device_policy_authorized(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_free_ char *disk = NULL, *done = NULL, *msg = NULL;
        const char *name, *mode;
        uint64_t flags;
        EngineDevice *d;
        int r;

        r = sd_bus_message_rewind(m, true);
        if (r >= 0)
                r = sd_bus_message_read(m, "sst", &name, &mode, &flags);
        if (r < 0)
                return r;
        Setting setting = setting_from_string(mode);
        r = bus_find_device(b, name, &d, error);
        if (r < 0)
                return r;
        r = check_interlock(b, d, setting, flags & SET_FLAG_FORCE, error);
        if (r < 0)
                return r;
        disk = strdup(d->facts->name); /* d may go with the next scan */
        if (!disk)
                return -ENOMEM;
        r = store_override(b, d, disk, setting, flags, &done, error);
        if (r < 0)
                return r;
        if (flags & SET_FLAG_APPLY) {
                r = apply_now(b, disk, error);
                if (r < 0)
                        return r;
        }

        d = manager_find_device(b->manager, disk);
        if (!d)
                return bus_reply_error(error, BUS_ERROR_NO_SUCH_DEVICE, "%s: disappeared", disk);
        msg = set_device_policy_reply(d, setting, flags, done);
        if (!msg)
                return -ENOMEM;
        _cleanup_(bus_strings_done) BusStrings strings = {};
        const char *text = bus_string(&strings, msg);
        return strings.error < 0 ? strings.error : sd_bus_reply_method_return(m, "s", text);
}

static const char *const *set_device_policy_actions(uint64_t flags) {
        if (flags & SET_FLAG_FORCE)
                return flags & SET_FLAG_RUNTIME ? bus_actions_runtime_force : bus_actions_persistent_force;
        return flags & SET_FLAG_RUNTIME ? bus_actions_runtime : bus_actions_persistent;
}

int method_set_device_policy(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        const char *name, *mode;
        uint64_t flags;
        EngineDevice *d;

        int r = sd_bus_message_read(m, "sst", &name, &mode, &flags);
        if (r < 0)
                return r;
        if (setting_from_string(mode) < 0)
                return bus_reply_error(error, SD_BUS_ERROR_INVALID_ARGS,
                                       "Unknown mode \"%.*s%s\": expected on, off or auto",
                                       QUOTE_LENGTH(mode, 32), mode, QUOTE_MORE(mode, 32));
        if (flags & ~SET_FLAGS_ALL)
                return bus_reply_error(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64,
                                       flags & ~SET_FLAGS_ALL);
        if ((flags & SET_FLAG_RUNTIME) && (flags & SET_FLAG_BIND_NAME))
                return bus_reply_error(
                        error, SD_BUS_ERROR_INVALID_ARGS,
                        "A runtime override is bound to the disk itself (its diskseq), never to "
                        "its name: flag 0x%" PRIx64 " is for persistent overrides",
                        SET_FLAG_BIND_NAME);
        r = bus_find_device(b, name, &d, error);
        if (r < 0)
                return r;
        if ((flags & SET_FLAG_FORCE) && (flags & SET_FLAG_BIND_NAME))
                return bus_reply_error(
                        error, SD_BUS_ERROR_INVALID_ARGS,
                        "%s: a forced override is never bound to the kernel name, which goes to "
                        "whichever disk takes it: bind it to the disk's identity (without flag "
                        "0x%" PRIx64 ") or set it at run time (flag 0x%" PRIx64
                        ", bound to this disk's diskseq)",
                        d->facts->name, SET_FLAG_BIND_NAME, SET_FLAG_RUNTIME);
        return bus_authorize(b->auth, m, set_device_policy_actions(flags), set_device_policy_authorized, b,
                             error);
}

static int reset_device_policy_authorized(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_strv_free_ char **removed = NULL;
        _cleanup_free_ char *problem = NULL;
        const char *name;
        uint64_t flags;
        EngineDevice *d;
        int r;

        r = sd_bus_message_rewind(m, true);
        if (r >= 0)
                r = sd_bus_message_read(m, "st", &name, &flags);
        if (r < 0)
                return r;
        r = bus_find_device(b, name, &d, error);
        if (r < 0)
                return r;
        r = manager_reset_overrides(b->manager, d, flags & SET_FLAG_RUNTIME, &removed, &problem);
        if (r < 0 && r != -ENOMEM)
                return bus_reply_error(error,
                                       r == -EINVAL ? BUS_ERROR_CONFIG_INVALID : BUS_ERROR_APPLY_FAILED,
                                       "%s", problem ?: strerror(-r));
        if (r < 0)
                return r;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = bus_append_strv_escaped(reply, removed);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

int method_reset_device_policy(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        const char *name;
        uint64_t flags;
        EngineDevice *d;

        int r = sd_bus_message_read(m, "st", &name, &flags);
        if (r < 0)
                return r;
        if (flags & ~SET_FLAG_RUNTIME)
                return bus_reply_error(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64,
                                       flags & ~SET_FLAG_RUNTIME);
        r = bus_find_device(b, name, &d, error);
        if (r < 0)
                return r;
        return bus_authorize(b->auth, m,
                             flags & SET_FLAG_RUNTIME ? bus_actions_runtime : bus_actions_persistent,
                             reset_device_policy_authorized, b, error);
}
