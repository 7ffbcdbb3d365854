/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Apply (the flag, or with the remount flag the unmount + mount cycle too) and Reload. */
#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "bus-internal.h"
#include "log.h"
#include "remount.h"
#include "util.h"

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
        return bus_reply_send_array(reply, &strings, r);
}

/* One disk's cycles are over: each filesystem's sentence goes on a line of its own. */
static void on_remount_done(const RemountResult *results, size_t n, void *userdata) {
        PendingApply *p = userdata;

        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < p->n; j++) {
                        ApplyEntry *e = &p->entries[j];
                        char *s;
                        if (!streq(e->disk, results[i].disk))
                                continue;
                        /* The requester was authorized to cycle it: the sentence names who keeps
                         * it busy (the published one does not). */
                        s = strdup_printf("%s\n%s", e->message ?: "",
                                          results[i].detail ?: results[i].message);
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
        on_remount_done(NULL, 0, p); /* drops the extra count; replies if all are done */
        return 1;
}

static int apply_authorized(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_strv_free_ char **disks = NULL;
        uint64_t flags;
        int r;

        r = sd_bus_message_rewind(m, true);
        if (r >= 0)
                r = bus_read_disks(m, b, APPLY_FLAGS_ALL, &disks, &flags, error);
        if (r < 0)
                return r;
        if (!disks) /* none named: every managed disk not left alone */
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
        return bus_reply_send_array(reply, NULL, r);
}

int method_apply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_strv_free_ char **disks = NULL;
        uint64_t flags;

        /* Every name is checked before polkit is asked: a caller cannot keep a huge message
         * waiting for it. */
        int r = bus_read_disks(m, b, APPLY_FLAGS_ALL, &disks, &flags, error);
        if (r < 0)
                return r;
        return bus_authorize(b->auth, m,
                             flags & APPLY_FLAG_REMOUNT ? bus_actions_remount : bus_actions_runtime,
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
                return bus_reply_error(error, BUS_ERROR_CONFIG_INVALID, "%s", strstrip_trailing(text));
        }
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "");
}

int method_reload(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        return bus_authorize(b->auth, m, bus_actions_runtime, reload_authorized, b, error);
}
