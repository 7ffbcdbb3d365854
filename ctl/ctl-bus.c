/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's side of the verbs: the bus, whether the daemon runs, its errors, names and JSON. */
#include <assert.h>

#include "bus-api.h"
#include "ctl.h"
#include "log.h"
#include "polkit-agent.h"
#include "util.h"

int ctl_bus_open(sd_bus **ret) {
        assert(ret);

        int r = sd_bus_open_system(ret);
        if (r < 0)
                return r;
        return 0;
}

bool ctl_daemon_running(sd_bus *bus) {
        if (!bus)
                return false;
        if (sd_bus_get_name_creds(bus, BUS_NAME, 0, NULL) >= 0)
                return true;
        /* Not on the bus: a call to the name starts the daemon where it is D-Bus activatable
         * (org.stablepages1.service in system-services, as the package installs it); elsewhere
         * the bus answers ServiceUnknown at once. */
        return sd_bus_call_method(bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Peer", "Ping", NULL, NULL,
                                  NULL) >= 0;
}

int ctl_call_error(const char *what, const sd_bus_error *error, int r) {
        assert(what);
        assert(error);

        if (sd_bus_error_has_name(error, "org.freedesktop.DBus.Error.ServiceUnknown") ||
            sd_bus_error_has_name(error, "org.freedesktop.DBus.Error.NameHasNoOwner"))
                return log_error_errno(SYNTHETIC_ERRNO(ESRCH),
                                       "%s: stablepagesd is not running (%s is not on the system bus).",
                                       what, BUS_NAME);
        const char *message = error->message ?: error->name;
        size_t n = strlen(what);
        /* The daemon's messages name the device already: no "sdb: sdb: ...". */
        if (sd_bus_error_is_set(error) && strneq(message, what, n) && message[n] == ':')
                log_error("%s", message);
        else if (sd_bus_error_is_set(error))
                log_error("%s: %s", what, message);
        else
                log_error_errno(r, "%s: %m", what);
        if (sd_bus_error_has_name(error, BUS_ERROR_NO_SUCH_DEVICE))
                return -ENODEV;
        if (sd_bus_error_has_name(error, BUS_ERROR_INVALID_NAME))
                return -EINVAL;
        /* Any other reply is a failure (exit 1), whatever errno sd-bus gives its name
         * (org.freedesktop.DBus.Error.InvalidArgs is -EINVAL). */
        return sd_bus_error_is_set(error) ? -EIO : r;
}

void ctl_ask_password(sd_bus *bus) {
        assert(bus);

        if (!arg_ask_password)
                return;
        (void) polkit_agent_open();
        (void) sd_bus_set_allow_interactive_authorization(bus, true);
        /* The daemon's answer comes when polkit's does, after the password; a little later when
         * polkit gave up waiting for it. */
        (void) sd_bus_set_method_call_timeout(bus, BUS_POLKIT_TIMEOUT_USEC + 10 * USEC_PER_SEC);
}

int ctl_daemon_bus(const char *verb, sd_bus **ret) {
        assert(verb);
        assert(ret);

        int r = ctl_bus_open(ret);
        if (r < 0) {
                log_error_errno(r, "%s: stablepagesd is not running: cannot connect to the system bus: %m",
                                verb);
                return -ESRCH;
        }
        if (!ctl_daemon_running(*ret))
                return log_error_errno(SYNTHETIC_ERRNO(ESRCH),
                                       "%s: stablepagesd is not running (%s is not on the system bus).",
                                       verb, BUS_NAME);
        return 0;
}

int ctl_resolve_names(sd_bus *bus, int argc, char **argv, char ***ret) {
        _cleanup_strv_free_ char **disks = NULL;

        for (int i = 0; i < argc; i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                const char *path;
                _cleanup_free_ char *disk = NULL;

                int r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "GetDevice",
                                           &error, &reply, "s", argv[i]);
                if (r < 0)
                        return ctl_call_error(argv[i], &error, r);
                r = sd_bus_message_read(reply, "o", &path);
                if (r < 0)
                        return log_error_errno(r, "Bad reply: %m");
                r = sd_bus_path_decode(path, BUS_DEVICE_PREFIX, &disk);
                if (r <= 0)
                        return log_error_errno(SYNTHETIC_ERRNO(EBADMSG), "Bad device path %s.", path);
                if (!strv_contains(disks, disk) && strv_extend(&disks, disk) < 0)
                        return log_oom();
        }
        *ret = TAKE_PTR(disks);
        return 0;
}

int ctl_dump_json(sd_bus *bus, const char *verb, char **disks, uint64_t flags) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        const char *json;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "DumpJSON");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, disks);
        if (r >= 0)
                r = sd_bus_message_append(m, "t", flags | (arg_json == JSON_PRETTY ? DUMP_FLAG_PRETTY : 0));
        if (r < 0)
                return log_error_errno(r, "Cannot build the call: %m");
        r = sd_bus_call(bus, m, 0, &error, &reply);
        if (r < 0)
                return ctl_call_error(verb, &error, r);
        r = sd_bus_message_read(reply, "s", &json);
        if (r < 0)
                return log_error_errno(r, "Bad reply: %m");
        fputs(json, stdout);
        if (!*json || json[strlen(json) - 1] != '\n')
                fputc('\n', stdout);
        return 0;
}
