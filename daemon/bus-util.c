/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replies and argument checks shared by the method handlers (bus-internal.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "bus-internal.h"
#include "util.h"

int bus_reply_error(sd_bus_error *error, const char *name, const char *format, ...) {
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

const char *bus_string(BusStrings *s, const char *text) {
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

void bus_strings_done(BusStrings *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->copies[i]);
        free(s->copies);
        *s = (BusStrings){};
}

int bus_append_string_escaped(sd_bus_message *reply, const char *text) {
        _cleanup_(bus_strings_done) BusStrings strings = {};
        const char *t = bus_string(&strings, text);
        return strings.error < 0 ? strings.error : sd_bus_message_append(reply, "s", t);
}

/* Appends the strings of l, escaped, as an "as". */
int bus_append_strv_escaped(sd_bus_message *reply, char *const *l) {
        _cleanup_(bus_strings_done) BusStrings strings = {};
        int r = sd_bus_message_open_container(reply, 'a', "s");

        STRV_FOREACH (s, l)
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", bus_string(&strings, *s));
        if (r >= 0)
                r = strings.error;
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

int bus_reply_send_array(sd_bus_message *reply, const BusStrings *strings, int r) {
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0 && strings)
                r = strings->error;
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

/* Reads the name array of a call (the "as" at the current position): at most max names, and
 * more is InvalidArgs (answered at once, the rest of the array unread). Returns 0 (*ret may be
 * NULL for an empty array), or what a method handler returns. */
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
                        return bus_reply_error(
                                error, SD_BUS_ERROR_INVALID_ARGS,
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

char *bus_device_path(const char *name) {
        char *p = NULL;
        return sd_bus_path_encode(BUS_DEVICE_PREFIX, name, &p) < 0 ? NULL : p;
}

int bus_find_device(BusService *b, const char *name, EngineDevice **ret, sd_bus_error *error) {
        if (!device_name_is_valid(name))
                return bus_reply_error(
                        error, BUS_ERROR_INVALID_NAME,
                        "Invalid device name \"%.*s%s\": at most 64 characters of [A-Za-z0-9._:+-], "
                        "not \".\" or \"..\"",
                        QUOTE_LENGTH(name, 64), name, QUOTE_MORE(name, 64));
        EngineDevice *d = manager_find_device(b->manager, name);
        if (!d)
                return bus_reply_error(error, BUS_ERROR_NO_SUCH_DEVICE, "%s: no such block device", name);
        *ret = d;
        return 0;
}

int bus_read_disks(sd_bus_message *m, BusService *b, uint64_t known_flags, char ***ret_disks,
                   uint64_t *ret_flags, sd_bus_error *error) {
        _cleanup_strv_free_ char **names = NULL, **disks = NULL;
        uint64_t flags;

        /* One name per disk, at least one, so that an unknown name is answered NoSuchDevice rather
         * than InvalidArgs. */
        int r = read_names(m, MAX(manager_n_devices(b->manager), (size_t) 1), &names, error);
        if (r >= 0)
                r = sd_bus_message_read(m, "t", &flags);
        if (r < 0)
                return r;
        if (flags & ~known_flags)
                return bus_reply_error(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64,
                                       flags & ~known_flags);
        STRV_FOREACH (n, names) {
                EngineDevice *d;
                r = bus_find_device(b, *n, &d, error);
                if (r < 0)
                        return r;
                if (!strv_contains(disks, d->facts->name) && strv_extend(&disks, d->facts->name) < 0)
                        return -ENOMEM;
        }
        *ret_disks = TAKE_PTR(disks);
        *ret_flags = flags;
        return 0;
}

int bus_read_device(sd_bus_message *m, BusService *b, EngineDevice **ret, sd_bus_error *error) {
        const char *name;
        int r = sd_bus_message_read(m, "s", &name);
        return r < 0 ? r : bus_find_device(b, name, ret, error);
}

/* The polkit actions of the calls: a runtime change, a persistent one (a drop-in in /etc, whether
 * bound to the disk's stable id or, with SET_FLAG_BIND_NAME, to its kernel name; a reset without
 * the runtime flag removes drop-ins too), and on top the force (on
 * a device that needs stable writes: the flag is what counts, so that a need that changes
 * while polkit decides cannot let a call through unforced) and the unmount + mount cycle. */
const char *const bus_actions_runtime[] = { BUS_POLKIT_RUNTIME, NULL };
const char *const bus_actions_persistent[] = { BUS_POLKIT_PERSISTENT, NULL };
const char *const bus_actions_runtime_force[] = { BUS_POLKIT_RUNTIME, BUS_POLKIT_FORCE, NULL };
const char *const bus_actions_persistent_force[] = { BUS_POLKIT_PERSISTENT, BUS_POLKIT_FORCE, NULL };
const char *const bus_actions_remount[] = { BUS_POLKIT_RUNTIME, BUS_POLKIT_REMOUNT, NULL };
