/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "bus-introspect.h"
#include "bus-polkit.h"
#include "bus.h"
#include "config-build.h"
#include "identity.h"
#include "log.h"
#include "overrides.h"
#include "remount.h"
#include "stalls.h"
#include "utf8.h"
#include "util.h"

/* A disk's stall figures as the API reports them: STALL_UNMEASURED_USEC for what is not
 * measured. */
typedef struct StallFigures {
        bool measured;  /* a probe runs */
        bool durations; /* ... and measures how long each wait lasts */
        StallStats total, window;
        uint64_t p50_usec, p99_usec, window_p99_usec;
        char *reason; /* why not measured, or what limits the figures; "" when nothing does */
} StallFigures;

struct BusService {
        Manager *manager;
        sd_bus *bus;
        bool named; /* owns BUS_NAME: before, nobody can address our objects or care for signals */
        BusAuth *auth;
        sd_event_source *drain, *trim;
        /* The stall figures of the disk whose Stall* properties the current request reads (a
         * GetAll, or GetManagedObjects, reads seven of each disk): computed once per request and
         * disk. */
        sd_bus_message *stall_request;
        dev_t stall_devnum;
        StallFigures stall_figures;
};

/* Messages handled per event loop iteration beyond sd-bus's one (see on_drain). */
#define BUS_DRAIN_MAX 64
/* After a burst of calls, how long the bus must be quiet before memory goes back (on_trim). */
#define BUS_TRIM_DELAY_USEC (1 * USEC_PER_SEC)

/* An error whose message may quote strings from the kernel or from users: made valid UTF-8
 * (utf8.h), which sd-bus needs to send it at all. */
static int reply_error(sd_bus_error *error, const char *name, const char *format, ...) _printf_(3, 4);
static int reply_error(sd_bus_error *error, const char *name, const char *format, ...) {
        _cleanup_free_ char *text = NULL, *escaped = NULL;
        va_list ap;

        va_start(ap, format);
        int r = vasprintf(&text, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (!utf8_is_clean(text)) {
                escaped = utf8_escape(text);
                if (!escaped)
                        return -ENOMEM;
        }
        return sd_bus_error_set(error, name, escaped ?: text);
}

/* Strings from the kernel and from users that go out in one message, made valid UTF-8: the
 * escaped copies live until the set is freed. A failed copy makes the string "" and sets
 * error: the message must not be sent then. */
typedef struct BusStrings {
        char **copies;
        size_t n;
        int error;
} BusStrings;

static const char *bus_string(BusStrings *s, const char *text) {
        char *e, **l;

        if (!text || utf8_is_clean(text))
                return text ?: "";
        e = utf8_escape(text);
        l = e ? reallocarray(s->copies, s->n + 1, sizeof(char *)) : NULL;
        if (!l) {
                free(e);
                s->error = -ENOMEM;
                return "";
        }
        s->copies = l;
        s->copies[s->n++] = e;
        return e;
}

static void bus_strings_done(BusStrings *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->copies[i]);
        free(s->copies);
        *s = (BusStrings){};
}

/* Appends text, escaped, as an "s". */
static int append_string_escaped(sd_bus_message *reply, const char *text) {
        _cleanup_(bus_strings_done) BusStrings strings = {};
        const char *t = bus_string(&strings, text);
        return strings.error < 0 ? strings.error : sd_bus_message_append(reply, "s", t);
}

/* Appends the strings of l, escaped, as an "as". */
static int append_strv_escaped(sd_bus_message *reply, char *const *l) {
        _cleanup_(bus_strings_done) BusStrings strings = {};
        int r = sd_bus_message_open_container(reply, 'a', "s");

        STRV_FOREACH (s, l)
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", bus_string(&strings, *s));
        if (r >= 0)
                r = strings.error;
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* The first bytes of a caller's string for an error message: at most max bytes, cut on a
 * character boundary, "…" when cut. */
#define QUOTE_LENGTH(s, max) (int) utf8_prefix_length((s), (max))
#define QUOTE_MORE(s, max) (strlen(s) > (max) ? "…" : "")

/* Reads the name array of a call (the "as" at the current position): at most max names, and
 * more is InvalidArgs (answered at once, the rest of the array unread). Returns 0 (*ret may
 * be NULL for an empty array), or what a method handler returns. */
static int read_names(sd_bus_message *m, size_t max, char ***ret, sd_bus_error *error) {
        _cleanup_strv_free_ char **names = NULL;
        size_t n = 0;
        const char *name;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "s");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read_basic(m, 's', &name)) > 0) {
                if (n >= max)
                        return reply_error(error, SD_BUS_ERROR_INVALID_ARGS,
                                           "More names than the %zu disks there are: name each disk once (a "
                                           "partition names its disk)",
                                           max);
                if (strv_extend_with_size(&names, &n, name) < 0)
                        return -ENOMEM;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(names);
        return 0;
}

/* How many names a call may give: one per disk (at least one, so that an unknown name is
 * answered NoSuchDevice rather than InvalidArgs). */
static size_t max_names(BusService *b) {
        return MAX(manager_n_devices(b->manager), (size_t) 1);
}

static char *device_path(const char *name) {
        char *p = NULL;
        return sd_bus_path_encode(BUS_DEVICE_PREFIX, name, &p) < 0 ? NULL : p;
}

/* Validates a caller's device name and finds its disk. */
static int find_device(BusService *b, const char *name, EngineDevice **ret, sd_bus_error *error) {
        if (!device_name_is_valid(name))
                return reply_error(
                        error, BUS_ERROR_INVALID_NAME,
                        "Invalid device name \"%.*s%s\": at most 64 characters of [A-Za-z0-9._:+-], "
                        "not \".\" or \"..\"",
                        QUOTE_LENGTH(name, 64), name, QUOTE_MORE(name, 64));
        EngineDevice *d = manager_find_device(b->manager, name);
        if (!d)
                return reply_error(error, BUS_ERROR_NO_SUCH_DEVICE, "%s: no such block device", name);
        *ret = d;
        return 0;
}

/* The q-quantile of the waits of s: 0 without waits, STALL_UNMEASURED_USEC when durations are
 * not measured. */
static uint64_t stall_percentile(const StallStats *s, double q) {
        uint64_t usec;
        int r = stall_stats_percentile(s, q, &usec);
        return r == -ENODATA ? 0 : r < 0 ? STALL_UNMEASURED_USEC : usec;
}

static void stall_figures_done(StallFigures *f) {
        f->reason = mfree(f->reason);
}

/* Reads the stall figures of d once, for every figure a request reports. */
static int stall_figures_compute(Manager *m, const EngineDevice *d, StallFigures *ret) {
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
        ret->reason = strdup(ret->measured ? reason ?: "" : manager_stall_reason(m));
        return ret->reason ? 0 : -ENOMEM;
}

/* --- Manager methods -------------------------------------------------------------------- */

/* "TARGET:on TARGET:off(pending) ..." of the filesystems on disk, escaped (utf8.h), at most
 * MOUNTS_SUMMARY_MAX bytes: cut on a character boundary and ended with "…" when longer. */
#define MOUNTS_SUMMARY_MAX 1024
static char *mounts_summary(Manager *m, const char *disk) {
        _cleanup_free_ const TrackedMount **mounts = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        if (manager_get_mounts(m, disk, &mounts) >= 0)
                for (const TrackedMount **t = mounts; t && *t; t++) {
                        _cleanup_free_ char *target = utf8_escape((*t)->target);
                        fprintf(f, "%s%s:%s%s", t == mounts ? "" : " ", target ?: "?",
                                (*t)->effective ? "on" : "off", (*t)->pending ? "(pending)" : "");
                }
        if (fclose(f) != 0)
                return NULL;
        if (size > MOUNTS_SUMMARY_MAX)
                strcpy(buf + utf8_prefix_length(buf, MOUNTS_SUMMARY_MAX - strlen("…")), "…");
        return TAKE_PTR(buf);
}

static int method_list_devices(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sossssbt)");
        for (size_t i = 0; r >= 0 && i < manager_n_devices(b->manager); i++) {
                EngineDevice *d = manager_device(b->manager, i);
                _cleanup_free_ char *path = device_path(d->facts->name),
                                    *mounts = mounts_summary(b->manager, d->facts->name);
                StallStats total;
                if (!path || !mounts)
                        return -ENOMEM;
                uint64_t p99 = manager_device_stalls(b->manager, d, &total, NULL, NULL) >= 0
                                       ? stall_percentile(&total, 0.99)
                                       : STALL_UNMEASURED_USEC;
                r = sd_bus_message_append(reply, "(sossssbt)", d->facts->name, path,
                                          need_to_string(d->class.need),
                                          kernel_state_to_string(d->facts->stable_writes, d->class.in_force),
                                          desired_to_string(d->decision.desired), mounts,
                                          manager_count_pending(b->manager, d->facts->name) > 0, p99);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_filesystems(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ const TrackedMount **mounts = NULL;
        _cleanup_(bus_strings_done) BusStrings strings = {};
        int r;

        r = manager_get_mounts(b->manager, NULL, &mounts);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssssssbs)");
        for (const TrackedMount **t = mounts; r >= 0 && t && *t; t++)
                r = sd_bus_message_append(reply, "(ssssssbs)", bus_string(&strings, (*t)->target),
                                          bus_string(&strings, (*t)->source),
                                          bus_string(&strings, (*t)->fstype), (*t)->disk ?: "",
                                          (*t)->effective ? "on" : "off",
                                          effective_origin_to_string((*t)->origin), (*t)->pending,
                                          bus_string(&strings, (*t)->reason));
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = strings.error;
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_overrides(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(bus_strings_done) BusStrings strings = {};
        OverrideEntry *entries = NULL;
        size_t n = 0;
        int r;

        if (manager_n_devices(b->manager) > 0) {
                r = engine_list_overrides(&b->manager->engine, NULL, &entries, &n);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssbsss)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(ssbsss)", entries[i].disk ?: "",
                                          setting_to_string(entries[i].setting), entries[i].force,
                                          entries[i].scope, bus_string(&strings, entries[i].binding),
                                          bus_string(&strings, entries[i].source));
        override_entries_free(entries, n);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = strings.error;
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_get_device(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        EngineDevice *d;
        const char *name;

        int r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        r = find_device(b, name, &d, error);
        if (r < 0)
                return r;
        _cleanup_free_ char *path = device_path(d->facts->name);
        if (!path)
                return -ENOMEM;
        return sd_bus_reply_method_return(m, "o", path);
}

static void mounts_json(Manager *m, const char *disk, JsonWriter *w) {
        _cleanup_free_ const TrackedMount **mounts = NULL;

        json_key(w, "mounts");
        json_array_begin(w);
        if (manager_get_mounts(m, disk, &mounts) >= 0)
                for (const TrackedMount **t = mounts; t && *t; t++)
                        tracked_mount_json(*t, w);
        json_array_end(w);
}

typedef struct UnmountedJson {
        JsonWriter *w;
        const char *disk;
} UnmountedJson;

/* One filesystem a cycle left unmounted, in the object of its disk. */
static void unmounted_json(const char *target, const char *disk, const char *reason, bool retrying,
                           void *userdata) {
        UnmountedJson *u = userdata;

        if (!streq(disk, u->disk))
                return;
        json_object_begin(u->w);
        json_key(u->w, "target");
        json_string(u->w, target);
        json_key(u->w, "reason");
        json_string(u->w, reason);
        json_key(u->w, "retrying");
        json_bool(u->w, retrying);
        json_object_end(u->w);
}

static int method_dump_json(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_strv_free_ char **names = NULL, **disks = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        uint64_t flags;
        JsonWriter w;
        int r;

        r = read_names(m, max_names(b), &names, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "t", &flags);
        if (r < 0)
                return r;
        if (flags & ~DUMP_FLAGS_ALL)
                return reply_error(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64,
                                   flags & ~DUMP_FLAGS_ALL);
        STRV_FOREACH (n, names) {
                EngineDevice *d;
                r = find_device(b, *n, &d, error);
                if (r < 0)
                        return r;
                if (!strv_contains(disks, d->facts->name) && strv_extend(&disks, d->facts->name) < 0)
                        return -ENOMEM;
        }

        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        json_init(&w, f, flags & DUMP_FLAG_PRETTY);
        json_array_begin(&w);
        for (size_t i = 0; i < manager_n_devices(b->manager); i++) {
                EngineDevice *d = manager_device(b->manager, i);
                if (disks && !strv_contains(disks, d->facts->name))
                        continue;
                json_object_begin(&w);
                engine_device_json_members(&b->manager->engine, d, &w);
                manager_device_stalls_json(b->manager, d, &w);
                mounts_json(b->manager, d->facts->name, &w);
                json_key(&w, "unmounted");
                json_array_begin(&w);
                remount_foreach_unmounted(b->manager->remount, unmounted_json,
                                          &(UnmountedJson){ &w, d->facts->name });
                json_array_end(&w);
                json_object_end(&w);
        }
        json_array_end(&w);
        if (fclose(f) != 0)
                return -ENOMEM;
        return sd_bus_reply_method_return(m, "s", buf);
}

static int set_device_policy_authorized(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_free_ char *disk = NULL;
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
        bool force = flags & SET_FLAG_FORCE;
        r = find_device(b, name, &d, error);
        if (r < 0)
                return r;
        disk = strdup(d->facts->name);
        if (!disk)
                return -ENOMEM;

        /* The interlock, before anything is written anywhere. */
        if (setting == SETTING_OFF && need_is_protected(d->class.need) && !force) {
                log_notice("%s: refused a request to turn stable writes off: need is %s.", disk,
                           need_to_string(d->class.need));
                (void) sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Refused", "ss", disk,
                                          "need is required or unknown and force was not given");
                return reply_error(
                        error, BUS_ERROR_REFUSED,
                        "refusing to turn off stable writes on %s: need is %s (%s); use --force to "
                        "override",
                        disk, need_to_string(d->class.need),
                        d->class.reasons ? d->class.reasons[0] : "no reason");
        }

        _cleanup_free_ char *done = NULL;
        if (flags & SET_FLAG_RUNTIME) {
                r = manager_set_override(b->manager, disk, setting, force);
                if (r == -EOPNOTSUPP)
                        return reply_error(error, BUS_ERROR_NO_IDENTITY,
                                           "%s: the kernel gives this disk no diskseq (Linux 5.15 and later "
                                           "do): a runtime override could not be told apart from the next "
                                           "disk that takes the name; use a persistent override",
                                           disk);
        } else {
                r = manager_set_persistent(b->manager, disk, setting, force, flags & SET_FLAG_BIND_NAME,
                                           &done);
                if (r < 0 && r != -ENOMEM)
                        return reply_error(error,
                                           r == -ENXIO    ? BUS_ERROR_NO_IDENTITY
                                           : r == -EINVAL ? BUS_ERROR_CONFIG_INVALID
                                           : r == -ENODEV ? BUS_ERROR_NO_SUCH_DEVICE
                                                          : BUS_ERROR_APPLY_FAILED,
                                           "%s", done ?: strerror(-r));
        }
        if (r < 0)
                return r;

        if (flags & SET_FLAG_APPLY) {
                _cleanup_(apply_result_done) ApplyResult res = {};
                r = manager_apply_device(b->manager, disk, &res);
                if (r < 0 && r != -ENOMEM)
                        return reply_error(error, r == -EPERM ? BUS_ERROR_REFUSED : BUS_ERROR_APPLY_FAILED,
                                           "%s", res.message ?: strerror(-r));
                if (r < 0)
                        return r;
        }

        d = manager_find_device(b->manager, disk);
        if (!d)
                return reply_error(error, BUS_ERROR_NO_SUCH_DEVICE, "%s: disappeared", disk);
        if (flags & SET_FLAG_RUNTIME)
                done = setting == SETTING_AUTO && !force
                               ? strdup("removed")
                               : strdup_printf("until the disk goes away, bound to %s",
                                               d->override_binding ?: "?");
        _cleanup_free_ char *msg =
                done ? strdup_printf("%s: StableWrites=%s (%s), %s: %s; desired %s: %s; kernel %s", disk,
                                     setting_to_string(setting), force ? "force" : "no force",
                                     flags & SET_FLAG_RUNTIME ? "runtime" : "persistent", done,
                                     desired_to_string(d->decision.desired), d->decision.reason,
                                     kernel_state_to_string(d->facts->stable_writes, d->class.in_force))
                     : NULL;
        if (!msg)
                return -ENOMEM;
        _cleanup_(bus_strings_done) BusStrings strings = {};
        const char *text = bus_string(&strings, msg);
        return strings.error < 0 ? strings.error : sd_bus_reply_method_return(m, "s", text);
}

/* The polkit actions of the calls: a runtime change, a persistent one (a drop-in in /etc, whether
 * bound to the disk's stable id or, with SET_FLAG_BIND_NAME, to its kernel name; a reset without
 * the runtime flag removes drop-ins too), and on top the force (on
 * a device that needs stable writes: the flag is what counts, so that a need that changes
 * while polkit decides cannot let a call through unforced) and the unmount + mount cycle. */
static const char *const actions_runtime[] = { BUS_POLKIT_RUNTIME, NULL };
static const char *const actions_persistent[] = { BUS_POLKIT_PERSISTENT, NULL };
static const char *const actions_runtime_force[] = { BUS_POLKIT_RUNTIME, BUS_POLKIT_FORCE, NULL };
static const char *const actions_persistent_force[] = { BUS_POLKIT_PERSISTENT, BUS_POLKIT_FORCE, NULL };
static const char *const actions_remount[] = { BUS_POLKIT_RUNTIME, BUS_POLKIT_REMOUNT, NULL };

static const char *const *set_device_policy_actions(uint64_t flags) {
        if (flags & SET_FLAG_FORCE)
                return flags & SET_FLAG_RUNTIME ? actions_runtime_force : actions_persistent_force;
        return flags & SET_FLAG_RUNTIME ? actions_runtime : actions_persistent;
}

static int method_set_device_policy(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        const char *name, *mode;
        uint64_t flags;
        EngineDevice *d;

        int r = sd_bus_message_read(m, "sst", &name, &mode, &flags);
        if (r < 0)
                return r;
        if (setting_from_string(mode) < 0)
                return reply_error(error, SD_BUS_ERROR_INVALID_ARGS,
                                   "Unknown mode \"%.*s%s\": expected on, off or auto",
                                   QUOTE_LENGTH(mode, 32), mode, QUOTE_MORE(mode, 32));
        if (flags & ~SET_FLAGS_ALL)
                return reply_error(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64,
                                   flags & ~SET_FLAGS_ALL);
        if ((flags & SET_FLAG_RUNTIME) && (flags & SET_FLAG_BIND_NAME))
                return reply_error(error, SD_BUS_ERROR_INVALID_ARGS,
                                   "A runtime override is bound to the disk itself (its diskseq), never to "
                                   "its name: flag 0x%" PRIx64 " is for persistent overrides",
                                   SET_FLAG_BIND_NAME);
        r = find_device(b, name, &d, error);
        if (r < 0)
                return r;
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
        r = find_device(b, name, &d, error);
        if (r < 0)
                return r;
        r = manager_reset_overrides(b->manager, name, flags & SET_FLAG_RUNTIME, &removed, &problem);
        if (r < 0 && r != -ENOMEM)
                return reply_error(error,
                                   r == -EINVAL   ? BUS_ERROR_CONFIG_INVALID
                                   : r == -ENODEV ? BUS_ERROR_NO_SUCH_DEVICE
                                                  : BUS_ERROR_APPLY_FAILED,
                                   "%s", problem ?: strerror(-r));
        if (r < 0)
                return r;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = append_strv_escaped(reply, removed);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_reset_device_policy(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        const char *name;
        uint64_t flags;
        EngineDevice *d;

        int r = sd_bus_message_read(m, "st", &name, &flags);
        if (r < 0)
                return r;
        if (flags & ~SET_FLAG_RUNTIME)
                return reply_error(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64,
                                   flags & ~SET_FLAG_RUNTIME);
        r = find_device(b, name, &d, error);
        if (r < 0)
                return r;
        return bus_authorize(b->auth, m, flags & SET_FLAG_RUNTIME ? actions_runtime : actions_persistent,
                             reset_device_policy_authorized, b, error);
}

/* Apply() with the remount flag: the results of the flag writes, completed by those of the
 * cycles when they are all over. */
typedef struct ApplyEntry {
        char *disk;
        bool ok, changed, value;
        char *message;
} ApplyEntry;

typedef struct PendingApply {
        sd_bus_message *call;
        ApplyEntry *entries;
        size_t n, outstanding;
} PendingApply;

static void pending_apply_free(PendingApply *p) {
        for (size_t i = 0; i < p->n; i++) {
                free(p->entries[i].disk);
                free(p->entries[i].message);
        }
        free(p->entries);
        sd_bus_message_unref(p->call);
        free(p);
}

static int pending_apply_reply(PendingApply *p) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(bus_strings_done) BusStrings strings = {};
        int r = sd_bus_message_new_method_return(p->call, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sbbbs)");
        for (size_t i = 0; r >= 0 && i < p->n; i++)
                r = sd_bus_message_append(reply, "(sbbbs)", p->entries[i].disk, p->entries[i].ok,
                                          p->entries[i].changed, p->entries[i].value,
                                          bus_string(&strings, p->entries[i].message));
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = strings.error;
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

/* One disk's cycles are over: each filesystem's sentence goes on a line of its own. */
static void on_remount_done(Manager *m, const RemountResult *results, size_t n, void *userdata) {
        PendingApply *p = userdata;

        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < p->n; j++) {
                        ApplyEntry *e = &p->entries[j];
                        char *s;
                        if (!streq(e->disk, results[i].disk))
                                continue;
                        s = strdup_printf("%s\n%s", e->message ?: "", results[i].message);
                        if (s) {
                                free(e->message);
                                e->message = s;
                        }
                        e->ok = e->ok && results[i].ok;
                        break;
                }
        if (--p->outstanding > 0)
                return;
        int r = pending_apply_reply(p);
        if (r < 0)
                log_debug_errno(r, "Cannot send the reply of Apply: %m");
        pending_apply_free(p);
}

/* Applies the flags, then queues the cycles and replies when they are over. */
static int apply_remount(BusService *b, sd_bus_message *m, char **disks, sd_bus_error *error) {
        PendingApply *p = calloc(1, sizeof(PendingApply));
        int r;

        if (!p)
                return -ENOMEM;
        p->call = sd_bus_message_ref(m);
        p->entries = calloc(strv_length(disks) + 1, sizeof(ApplyEntry));
        if (!p->entries) {
                pending_apply_free(p);
                return -ENOMEM;
        }
        STRV_FOREACH (disk, disks) {
                _cleanup_(apply_result_done) ApplyResult res = {};
                int k = manager_apply_device(b->manager, *disk, &res);
                if (k == -ENOMEM) {
                        pending_apply_free(p);
                        return k;
                }
                ApplyEntry *e = &p->entries[p->n++];
                /* -EBUSY: a cycle holds the flag; the one asked for is queued after it and says
                 * how it went. */
                *e = (ApplyEntry){ .disk = strdup(*disk),
                                   .ok = k >= 0 || k == -EBUSY,
                                   .changed = res.changed,
                                   .value = res.new_value == 1,
                                   .message = strdup(res.message ?: (k < 0 ? strerror(-k) : "")) };
                if (!e->disk || !e->message) {
                        pending_apply_free(p);
                        return -ENOMEM;
                }
        }
        /* Callbacks come from the event loop; the extra count keeps the reply until all are queued. */
        p->outstanding = p->n + 1;
        for (size_t i = 0; i < p->n; i++) {
                r = manager_remount_device(b->manager, p->entries[i].disk, on_remount_done, p);
                if (r < 0) {
                        char *s = strdup_printf("%s\n%s: cannot queue the cycle: %s", p->entries[i].message,
                                                p->entries[i].disk, strerror(-r));
                        if (s) {
                                free(p->entries[i].message);
                                p->entries[i].message = s;
                        }
                        p->entries[i].ok = false;
                        p->outstanding--;
                }
        }
        on_remount_done(b->manager, NULL, 0, p); /* drops the extra count; replies if all are done */
        return 1;
}

static int apply_authorized(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_strv_free_ char **names = NULL, **disks = NULL;
        uint64_t flags;
        int r;

        r = sd_bus_message_rewind(m, true);
        if (r >= 0)
                r = read_names(m, max_names(b), &names, error);
        if (r >= 0)
                r = sd_bus_message_read(m, "t", &flags);
        if (r < 0)
                return r;
        STRV_FOREACH (n, names) {
                EngineDevice *d;
                r = find_device(b, *n, &d, error);
                if (r < 0)
                        return r;
                if (!strv_contains(disks, d->facts->name) && strv_extend(&disks, d->facts->name) < 0)
                        return -ENOMEM;
        }
        if (!names)
                for (size_t i = 0; i < manager_n_devices(b->manager); i++) {
                        EngineDevice *d = manager_device(b->manager, i);
                        if (d->managed && d->decision.desired >= 0 &&
                            strv_extend(&disks, d->facts->name) < 0)
                                return -ENOMEM;
                }
        if (flags & APPLY_FLAG_REMOUNT)
                return apply_remount(b, m, disks, error);

        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sbbbs)");
        STRV_FOREACH (disk, disks) {
                _cleanup_(apply_result_done) ApplyResult res = {};
                _cleanup_(bus_strings_done) BusStrings strings = {};
                int k = manager_apply_device(b->manager, *disk, &res);
                if (k == -ENOMEM)
                        return k;
                if (r >= 0)
                        r = sd_bus_message_append(
                                reply, "(sbbbs)", *disk, k >= 0, res.changed, res.new_value == 1,
                                bus_string(&strings, res.message ?: (k < 0 ? strerror(-k) : "")));
                if (r >= 0)
                        r = strings.error;
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_apply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_strv_free_ char **names = NULL;
        uint64_t flags;
        EngineDevice *d;

        /* Every name is checked before polkit is asked: a caller cannot keep a huge message
         * waiting for it. */
        int r = read_names(m, max_names(b), &names, error);
        if (r >= 0)
                r = sd_bus_message_read(m, "t", &flags);
        if (r < 0)
                return r;
        if (flags & ~APPLY_FLAGS_ALL)
                return reply_error(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64,
                                   flags & ~APPLY_FLAGS_ALL);
        STRV_FOREACH (n, names) {
                r = find_device(b, *n, &d, error);
                if (r < 0)
                        return r;
        }
        return bus_authorize(b->auth, m, flags & APPLY_FLAG_REMOUNT ? actions_remount : actions_runtime,
                             apply_authorized, b, error);
}

static int reload_authorized(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        int r = manager_reload(b->manager, &diags);
        if (r == -EINVAL) {
                _cleanup_free_ char *text = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&text, &size);
                if (!f)
                        return -ENOMEM;
                fputs("The configuration has errors; the last good one stays in force:\n", f);
                config_diags_print(&diags, f);
                if (fclose(f) != 0)
                        return -ENOMEM;
                return reply_error(error, BUS_ERROR_CONFIG_INVALID, "%s", strstrip_trailing(text));
        }
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "");
}

static int method_reload(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        return bus_authorize(b->auth, m, actions_runtime, reload_authorized, b, error);
}

/* --- stalls ------------------------------------------------------------------------------ */

static int method_get_stalls(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(stall_figures_done) StallFigures f = {};
        _cleanup_(bus_strings_done) BusStrings strings = {};
        uint64_t na = STALL_UNMEASURED_USEC;
        const char *name;
        EngineDevice *d;

        int r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        r = find_device(b, name, &d, error);
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
                return reply_error(error, SD_BUS_ERROR_NOT_SUPPORTED, "No stall probe is running: %s",
                                   manager_stall_reason(b->manager));
        if (r == -ENODEV)
                return reply_error(error, BUS_ERROR_NO_SUCH_DEVICE, "%s: no such block device", name);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "");
}

static int method_reset_stalls(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        const char *name;
        EngineDevice *d;

        int r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        if (!isempty(name)) {
                r = find_device(b, name, &d, error);
                if (r < 0)
                        return r;
        }
        return bus_authorize(b->auth, m, actions_runtime, reset_stalls_authorized, b, error);
}

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
        return append_string_escaped(reply, manager_stall_reason(b->manager));
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

static const sd_bus_vtable manager_vtable[] = {
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
        SD_BUS_METHOD_WITH_NAMES("GetDevice", "s", SD_BUS_PARAM(name), "o", SD_BUS_PARAM(path),
                                 method_get_device, SD_BUS_VTABLE_UNPRIVILEGED),
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
static int device_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
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

static int device_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes,
                            sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        for (size_t i = 0; i < manager_n_devices(b->manager); i++) {
                char *p = device_path(manager_device(b->manager, i)->facts->name);
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
                return append_string_escaped(reply, expr);                                                  \
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

static int property_get_reasons(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const EngineDevice *d = userdata;
        return append_strv_escaped(reply, d->class.reasons);
}

static int property_get_stable_id(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const EngineDevice *d = userdata;
        _cleanup_(stable_id_done) StableId id = {};
        _cleanup_free_ char *match = NULL;

        int r = stable_id_pick(d->facts, &device_service(bus)->manager->engine.table, false, &id, NULL);
        if (r == -ENOMEM)
                return r;
        match = r >= 0 ? stable_id_match_text(&id) : NULL;
        if (r >= 0 && !match)
                return -ENOMEM;
        return append_string_escaped(reply, match);
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

static int property_get_stall_reason(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        const StallFigures *f;
        int r = device_stall_figures(bus, userdata, &f);
        return r < 0 ? r : append_string_escaped(reply, f->reason);
}

#define DEVICE_PROPERTY(name, sig, getter)                                                                  \
        SD_BUS_PROPERTY(name, sig, property_get_##getter, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE)

#define STALL_PROPERTY(name, sig, getter) SD_BUS_PROPERTY(name, sig, property_get_##getter, 0, 0)

static const sd_bus_vtable device_vtable[] = {
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
        SD_BUS_VTABLE_END,
};

/* --- events ------------------------------------------------------------------------------ */

static void on_manager_event(Manager *m, const ManagerEvent *ev, void *userdata) {
        BusService *b = userdata;
        _cleanup_free_ char *path = ev->device ? device_path(ev->device) : NULL;
        _cleanup_(bus_strings_done) BusStrings strings = {};
        int r = 0;

        switch (ev->type) {
        case MANAGER_DEVICE_ADDED:
                /* The disks of the first scan are there when the name is taken: announcing each
                 * (a thousand GetAll-sized signals) would only slow the start. */
                if (path && b->named)
                        r = sd_bus_emit_object_added(b->bus, path);
                break;
        case MANAGER_DEVICE_REMOVED:
                if (path)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, "org.freedesktop.DBus.ObjectManager",
                                               "InterfacesRemoved", "oas", path, 1, BUS_DEVICE_INTERFACE);
                break;
        case MANAGER_DEVICE_CHANGED:
                if (path)
                        r = sd_bus_emit_properties_changed_strv(b->bus, path, BUS_DEVICE_INTERFACE, NULL);
                break;
        case MANAGER_APPLIED: {
                EngineDevice *d = manager_find_device(m, ev->device);
                if (ev->result && ev->result->changed)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Applied", "sbbs",
                                               ev->device, ev->result->old_value == 1,
                                               ev->result->new_value == 1,
                                               bus_string(&strings, d ? d->decision.reason : NULL));
                else if (d && d->decision.refused)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Refused", "ss",
                                               ev->device, bus_string(&strings, d->decision.reason));
                break;
        }
        case MANAGER_REMOUNT_FINISHED:
                if (ev->remount)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "RemountFinished",
                                               "ssbts", bus_string(&strings, ev->remount->target),
                                               ev->remount->disk, ev->remount->ok,
                                               ev->remount->duration_usec,
                                               bus_string(&strings, ev->remount->message));
                if (r >= 0)
                        r = sd_bus_emit_properties_changed(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE,
                                                           "Unmounted", NULL);
                break;
        case MANAGER_BUDGET_EXCEEDED:
                if (ev->window)
                        r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "BudgetExceeded",
                                               "sttt", ev->device, ev->p99_usec,
                                               m->engine.config.stall_budget_usec, ev->window->count);
                break;
        case MANAGER_RELOADED:
                r = sd_bus_emit_signal(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Reloaded", "bas", true, 0);
                if (r >= 0)
                        r = sd_bus_emit_properties_changed(b->bus, BUS_PATH, BUS_MANAGER_INTERFACE, "Policy",
                                                           "ApplyMounted", "StallBudgetUSec",
                                                           "ConfigProblems", NULL);
                break;
        default:
                break;
        }
        if (r < 0)
                log_debug_errno(r, "Cannot send a D-Bus signal: %m");
}

/* sd-bus handles one message per event loop iteration and re-arms its timeout timer around each
 * (a timer reprogramming, which in a virtual machine traps to the hypervisor: 45% of the
 * daemon's CPU in a storm of 10,000 calls). After each event, handle up to BUS_DRAIN_MAX more
 * that are already queued. */
static int on_drain(sd_event_source *s, void *userdata) {
        BusService *b = userdata;
        unsigned n = 0;

        while (n < BUS_DRAIN_MAX && sd_bus_process(b->bus, NULL) > 0)
                n++;              /* stops when nothing is queued; an error is the io callback's to handle */
        if (n == BUS_DRAIN_MAX && /* a burst: give the memory back once it is over */
            sd_event_source_set_time_relative(b->trim, BUS_TRIM_DELAY_USEC) >= 0)
                (void) sd_event_source_set_enabled(b->trim, SD_EVENT_ONESHOT);
        return 0;
}

/* A burst of calls faster than dbus-daemon reads the answers queues them in sd-bus (10,000
 * refused calls: 7 MiB), and the allocator keeps what was freed between live blocks: give it
 * back to the system once the bus is quiet again. */
static int on_trim(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) malloc_trim(0);
        return 0;
}

int bus_service_new(Manager *m, BusService **ret) {
        _cleanup_(bus_service_freep) BusService *b = calloc(1, sizeof(BusService));
        int r;

        if (!b)
                return -ENOMEM;
        b->manager = m;
        r = sd_bus_open_system_with_description(&b->bus, "stablepagesd");
        if (r < 0)
                return log_warning_errno(r, "Cannot connect to the system bus: %m");
        r = bus_auth_new(b->bus, &b->auth);
        if (r < 0)
                return r;
        r = sd_bus_add_object_vtable(b->bus, NULL, BUS_PATH, BUS_MANAGER_INTERFACE, manager_vtable, b);
        if (r >= 0)
                r = sd_bus_add_fallback_vtable(b->bus, NULL, BUS_DEVICE_PREFIX, BUS_DEVICE_INTERFACE,
                                               device_vtable, device_find, b);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(b->bus, NULL, BUS_DEVICE_PREFIX, device_enumerate, b);
        if (r >= 0)
                r = sd_bus_add_object_manager(b->bus, NULL, BUS_PATH);
        if (r < 0)
                return log_error_errno(r, "Cannot register the D-Bus objects: %m");
        r = sd_bus_attach_event(b->bus, m->event, 0);
        if (r >= 0)
                r = sd_event_add_post(m->event, &b->drain, on_drain, b);
        if (r >= 0)
                r = sd_event_add_time(m->event, &b->trim, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_SEC, on_trim,
                                      b);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop: %m");
        /* A lost bus ends the event loop with an error: systemd restarts us (Restart=on-failure). */
        (void) sd_bus_set_exit_on_disconnect(b->bus, true);
        manager_set_event_handler(m, on_manager_event, b);
        log_debug("Serving %s on the system bus.", BUS_NAME);
        *ret = TAKE_PTR(b);
        return 0;
}

static int on_request_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BusService *b = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t result = 0;
        int r;

        if (e)
                r = -sd_bus_error_get_errno(e);
        else {
                r = sd_bus_message_read(reply, "u", &result);
                /* 1: we own it now; 4: we did already. Anything else: someone else owns it. */
                if (r >= 0)
                        r = result == 1 || result == 4 ? 0 : -EEXIST;
        }
        if (r < 0) {
                log_error_errno(r, "Cannot take the name %s on the system bus: %s", BUS_NAME,
                                e              ? e->message ?: e->name
                                : r == -EEXIST ? "another process owns it"
                                               : strerror(-r));
                return sd_event_exit(b->manager->event, r);
        }
        log_debug("%s taken on the system bus.", BUS_NAME);
        b->named = true;
        manager_notify_ready(b->manager);
        return 1;
}

int bus_service_take_name(BusService *b) {
        int r = sd_bus_request_name_async(b->bus, NULL, BUS_NAME, 0, on_request_name, b);
        if (r < 0)
                return log_error_errno(r, "Cannot ask for the name %s on the system bus: %m", BUS_NAME);
        return 0;
}

BusService *bus_service_free(BusService *b) {
        if (!b)
                return NULL;
        if (b->manager)
                manager_set_event_handler(b->manager, NULL, NULL);
        sd_event_source_disable_unref(b->drain);
        sd_event_source_disable_unref(b->trim);
        sd_bus_message_unref(b->stall_request);
        stall_figures_done(&b->stall_figures);
        bus_auth_free(b->auth);
        sd_bus_flush_close_unref(b->bus);
        free(b);
        return NULL;
}

/* --- introspection ------------------------------------------------------------------------ */

void bus_introspect(FILE *f) {
        fputs("<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
              "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n",
              f);
        fputs(" <node name=\"" BUS_PATH "\">\n", f);
        bus_introspect_interface(f, BUS_MANAGER_INTERFACE, manager_vtable);
        fputs(" </node>\n <node name=\"" BUS_DEVICE_PREFIX "/DEVICE\">\n", f);
        bus_introspect_interface(f, BUS_DEVICE_INTERFACE, device_vtable);
        fputs(" </node>\n</node>\n", f);
}
