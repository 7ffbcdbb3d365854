/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Manager's methods that read the disks: ListDevices, ListFilesystems, ListConsumers, ListOverrides,
 * GetDevice, GetDeviceProperties, DumpJSON. */
#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "bus-internal.h"
#include "remount.h"
#include "util.h"

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

int method_list_devices(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sossssbt)");
        for (size_t i = 0; r >= 0 && i < manager_n_devices(b->manager); i++) {
                EngineDevice *d = manager_device(b->manager, i);
                _cleanup_free_ char *path = bus_device_path(d->facts->name),
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
        return bus_reply_send_array(reply, NULL, r);
}

int method_list_filesystems(sd_bus_message *m, void *userdata, sd_bus_error *error) {
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
        return bus_reply_send_array(reply, &strings, r);
}

int append_consumer(sd_bus_message *reply, const Consumer *c) {
        _cleanup_(bus_strings_done) BusStrings strings = {};
        int r = sd_bus_message_append(reply, "ssssbstbs", consumer_kind_to_string(c->kind),
                                      bus_string(&strings, c->name), bus_string(&strings, c->what),
                                      captured_to_string(c->captured), c->in_force,
                                      capture_origin_to_string(c->origin), c->since_usec, c->hazard,
                                      bus_string(&strings, c->note));
        return r < 0 ? r : strings.error;
}

int method_list_consumers(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sssssbstbs)");
        for (size_t i = 0; r >= 0 && i < manager_n_devices(b->manager); i++) {
                const DeviceConsumers *c = manager_device_consumers(b->manager, i);
                for (size_t j = 0; r >= 0 && c && j < c->n; j++) {
                        r = sd_bus_message_open_container(reply, 'r', "sssssbstbs");
                        if (r >= 0)
                                r = sd_bus_message_append(reply, "s",
                                                          manager_device(b->manager, i)->facts->name);
                        if (r >= 0)
                                r = append_consumer(reply, &c->items[j]);
                        if (r >= 0)
                                r = sd_bus_message_close_container(reply);
                }
        }
        return bus_reply_send_array(reply, NULL, r);
}

int method_list_overrides(sd_bus_message *m, void *userdata, sd_bus_error *error) {
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
        return bus_reply_send_array(reply, &strings, r);
}

/* The disk a call names and its object path (*ret_path, to free). Returns 0, or what a method
 * handler returns. */
static int read_device_path(sd_bus_message *m, BusService *b, EngineDevice **ret, char **ret_path,
                            sd_bus_error *error) {
        int r = bus_read_device(m, b, ret, error);
        if (r < 0)
                return r;
        *ret_path = bus_device_path((*ret)->facts->name);
        return *ret_path ? 0 : -ENOMEM;
}

int method_get_device(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *path = NULL;
        EngineDevice *d;

        int r = read_device_path(m, userdata, &d, &path, error);
        return r < 0 ? r : sd_bus_reply_method_return(m, "o", path);
}

/* Appends every property of d's Device object as a{sv}, StableId included (GetAll leaves out
 * what is computed when read), each from the getter its Get uses. */
static int append_device_properties(sd_bus *bus, sd_bus_message *reply, const char *path, EngineDevice *d,
                                    sd_bus_error *error) {
        int r = sd_bus_message_open_container(reply, 'a', "{sv}");

        for (const sd_bus_vtable *v = device_vtable; r >= 0 && v->type != _SD_BUS_VTABLE_END; v++) {
                if (v->type != _SD_BUS_VTABLE_PROPERTY)
                        continue;
                r = sd_bus_message_open_container(reply, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", v->x.property.member);
                if (r >= 0)
                        r = sd_bus_message_open_container(reply, 'v', v->x.property.signature);
                if (r >= 0)
                        r = v->x.property.get(bus, path, BUS_DEVICE_INTERFACE, v->x.property.member, reply,
                                              (uint8_t *) d + v->x.property.offset, error);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

int method_get_device_properties(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL;
        EngineDevice *d;

        int r = read_device_path(m, userdata, &d, &path, error);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "o", path);
        if (r >= 0)
                r = append_device_properties(sd_bus_message_get_bus(m), reply, path, d, error);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
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

/* The object of one disk in DumpJSON: everything the daemon knows of it, or with stalls_only its
 * name and stall figures. */
static void device_json(Manager *m, const EngineDevice *d, bool stalls_only, JsonWriter *w) {
        json_object_begin(w);
        if (stalls_only)
                json_member_string(w, "name", d->facts->name);
        else
                engine_device_json_members(&m->engine, d, w);
        manager_device_stalls_json(m, d, w);
        if (!stalls_only) {
                mounts_json(m, d->facts->name, w);
                consumers_json(manager_device_consumers(m, (size_t) (d - m->engine.devices)), w);
                json_key(w, "unmounted");
                json_array_begin(w);
                remount_foreach_unmounted(m->remount, unmounted_json, &(UnmountedJson){ w, d->facts->name });
                json_array_end(w);
        }
        json_object_end(w);
}

int method_dump_json(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusService *b = userdata;
        _cleanup_strv_free_ char **disks = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        uint64_t flags;
        JsonWriter w;
        int r;

        r = bus_read_disks(m, b, DUMP_FLAGS_ALL, &disks, &flags, error);
        if (r < 0)
                return r;

        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        json_init(&w, f, flags & DUMP_FLAG_PRETTY);
        json_array_begin(&w);
        for (size_t i = 0; i < manager_n_devices(b->manager); i++) {
                EngineDevice *d = manager_device(b->manager, i);
                if (disks && !strv_contains(disks, d->facts->name))
                        continue;
                device_json(b->manager, d, flags & DUMP_FLAG_STALLS, &w);
        }
        json_array_end(&w);
        if (fclose(f) != 0)
                return -ENOMEM;
        return sd_bus_reply_method_return(m, "s", buf);
}
