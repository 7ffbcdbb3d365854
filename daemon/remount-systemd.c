/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "remount-check.h"
#include "remount-systemd.h"
#include "util.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT "org.freedesktop.systemd1.Unit"
#define SD_MOUNT "org.freedesktop.systemd1.Mount"

static void bus_unrefp(sd_bus **b) {
        sd_bus_flush_close_unref(*b);
}

static int why(char **ret_why, char *s) {
        *ret_why = s;
        return s ? 0 : -ENOMEM;
}

/* The object path of a loaded unit, or NULL (not loaded: NoSuchUnit). */
static int get_unit(sd_bus *bus, const char *unit, char **ret_path) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *path;
        int r;

        *ret_path = NULL;
        r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnit", &error, &reply, "s", unit);
        if (r < 0)
                return sd_bus_error_has_name(&error, "org.freedesktop.systemd1.NoSuchUnit") ? 0 : r;
        r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0) {
                *ret_path = strdup(path);
                r = *ret_path ? 0 : -ENOMEM;
        }
        sd_bus_message_unref(reply);
        return r;
}

static int get_string(sd_bus *bus, const char *path, const char *iface, const char *prop, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        return sd_bus_get_property_string(bus, SD_DEST, path, iface, prop, &error, ret);
}

int remount_systemd_find(const char *target, sd_bus **ret_bus, char **ret_unit, char **ret_why) {
        _cleanup_(bus_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *unit = NULL, *path = NULL, *load = NULL, *active = NULL, *where = NULL,
                            *fragment = NULL, *source = NULL;
        sd_bus_message *reply = NULL;
        int has = 0, r;

        *ret_bus = NULL;
        *ret_unit = *ret_why = NULL;
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return why(ret_why, strdup_printf("no system bus (%s)", strerror(-r)));
        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", &error, &reply, "s", SD_DEST);
        if (r >= 0) {
                r = sd_bus_message_read(reply, "b", &has);
                sd_bus_message_unref(reply);
        }
        if (r < 0)
                return why(ret_why,
                           strdup_printf("cannot ask the system bus for systemd (%s)", strerror(-r)));
        if (!has)
                return why(ret_why, strdup("systemd is not on the system bus"));

        r = remount_unit_name_from_path(target, &unit);
        if (r < 0)
                return r;
        r = get_unit(bus, unit, &path);
        if (r < 0)
                return why(ret_why, strdup_printf("cannot ask systemd about %s (%s)", unit, strerror(-r)));
        if (!path)
                return why(ret_why, strdup_printf("systemd has no unit %s loaded", unit));
        if ((r = get_string(bus, path, SD_UNIT, "LoadState", &load)) < 0 ||
            (r = get_string(bus, path, SD_UNIT, "ActiveState", &active)) < 0 ||
            (r = get_string(bus, path, SD_UNIT, "FragmentPath", &fragment)) < 0 ||
            (r = get_string(bus, path, SD_UNIT, "SourcePath", &source)) < 0 ||
            (r = get_string(bus, path, SD_MOUNT, "Where", &where)) < 0)
                return why(ret_why,
                           strdup_printf("cannot read the properties of %s (%s)", unit, strerror(-r)));
        if (!streq(load, "loaded") || !streq(active, "active"))
                return why(ret_why, strdup_printf("%s is %s and %s", unit, load, active));
        if (!streq(where, target))
                return why(ret_why, strdup_printf("%s is for %s, not %s", unit, where, target));
        if (isempty(fragment) && isempty(source))
                /* Made from the mount table: systemd knows no way to mount it again. */
                return why(ret_why, strdup_printf("%s has no unit file or fstab line", unit));

        *ret_bus = TAKE_PTR(bus);
        *ret_unit = TAKE_PTR(unit);
        return 1;
}

int remount_systemd_dependents(sd_bus *bus, const char *unit, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_strv_free_ char **required = NULL, **bound = NULL, **active = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        *ret = NULL;
        r = get_unit(bus, unit, &path);
        if (r < 0 || !path)
                return r;
        r = sd_bus_get_property_strv(bus, SD_DEST, path, SD_UNIT, "RequiredBy", &error, &required);
        if (r >= 0)
                r = sd_bus_get_property_strv(bus, SD_DEST, path, SD_UNIT, "BoundBy", &error, &bound);
        if (r < 0)
                return r;
        if (strv_extend_strv(&required, bound) < 0)
                return -ENOMEM;
        STRV_FOREACH (u, required) {
                _cleanup_free_ char *p = NULL, *state = NULL;
                size_t n = strlen(*u);
                if (n > 7 && streq(*u + n - 7, ".target"))
                        continue; /* targets have no processes; restarting them is harmless */
                if (get_unit(bus, *u, &p) < 0 || !p ||
                    get_string(bus, p, SD_UNIT, "ActiveState", &state) < 0)
                        continue;
                if ((streq(state, "active") || streq(state, "activating") || streq(state, "reloading")) &&
                    !strv_contains(active, *u) && strv_extend(&active, *u) < 0)
                        return -ENOMEM;
        }
        if (!active)
                return 0;
        size_t len = 1;
        STRV_FOREACH (u, active)
                len += strlen(*u) + 2;
        char *s = calloc(len, 1);
        if (!s)
                return -ENOMEM;
        STRV_FOREACH (u, active) {
                if (u != active)
                        strcat(s, ", ");
                strcat(s, *u);
        }
        *ret = s;
        return 0;
}

typedef struct JobWait {
        char *job;    /* object path of our job */
        char *result; /* its result once removed */
} JobWait;

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        JobWait *w = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (w->job && streq(path, w->job) && !w->result)
                w->result = strdup(result);
        return 0;
}

int remount_systemd_run_job(sd_bus *bus, const char *unit, const char *method, uint64_t timeout_usec,
                            char **ret_result) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_slot *slot = NULL;
        sd_bus_message *reply = NULL;
        JobWait w = {};
        const char *job;
        uint64_t deadline = now_usec_monotonic() + timeout_usec;
        int r;

        *ret_result = NULL;
        /* Match first, then subscribe (systemd sends job signals only to subscribers), then
         * queue the job: the JobRemoved signal cannot be missed. */
        r = sd_bus_match_signal(bus, &slot, SD_DEST, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed, &w);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", &error, NULL, "");
        if (r < 0 && !sd_bus_error_has_name(&error, "org.freedesktop.systemd1.AlreadySubscribed"))
                goto finish;
        sd_bus_error_free(&error);
        r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, method, &error, &reply, "ss", unit,
                               "replace");
        if (r < 0)
                goto finish;
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0)
                goto finish;
        w.job = strdup(job);
        if (!w.job) {
                r = -ENOMEM;
                goto finish;
        }
        while (!w.result) {
                uint64_t now = now_usec_monotonic();
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        goto finish;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        goto finish;
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, deadline - now);
                if (r < 0)
                        goto finish;
        }
        if (streq(w.result, "done"))
                r = 0;
        else {
                *ret_result = TAKE_PTR(w.result);
                r = -EIO;
        }
finish:
        (void) sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Unsubscribe", NULL, NULL, "");
        sd_bus_message_unref(reply);
        sd_bus_slot_unref(slot);
        free(w.job);
        free(w.result);
        return r;
}
