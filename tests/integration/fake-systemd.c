/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A stand-in for systemd's D-Bus API, only as much of it as stablepagesd's unmount + mount
 * cycle uses, for test-remount-systemd.sh on a machine where systemd does not run:
 *
 *   fake-systemd UNIT WHERE WHAT TYPE OPTIONS FAIL_MOUNTS [REQUIRED_BY]
 *
 * owns org.freedesktop.systemd1 on the system bus ($DBUS_SYSTEM_BUS_ADDRESS) and serves
 *   Manager: GetUnit(s) -> o, Subscribe(), Unsubscribe(), RestartUnit(ss) -> o,
 *            StartUnit(ss) -> o, signal JobRemoved(u id, o job, s unit, s result);
 *   Unit (UNIT, and REQUIRED_BY when given, "active"): LoadState, ActiveState,
 *            FragmentPath, SourcePath, RequiredBy, BoundBy; Mount (UNIT): Where.
 * A restart job unmounts WHERE (umount2, no flags) and mounts WHAT there with TYPE and
 * OPTIONS; a start job mounts it. The first FAIL_MOUNTS mounts fail (result "failed"),
 * as a mount unit whose mount command fails. Every call is printed on stdout, flushed.
 * This checks the client's use of the protocol, not systemd's behaviour. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <libmount/libmount.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#define PREFIX "/org/freedesktop/systemd1/unit"

typedef struct Unit {
        const char *name;
        char *path;
        const char *active;
        char **required_by; /* NULL-terminated */
        bool mount;
} Unit;

static Unit units[2];
static size_t n_units;
static const char *where, *what, *type, *options;
static int fail_mounts;
static uint32_t job_id;
static sd_bus *bus;

static Unit *unit_by_name(const char *name) {
        for (size_t i = 0; i < n_units; i++)
                if (strcmp(units[i].name, name) == 0)
                        return &units[i];
        return NULL;
}

static Unit *unit_by_path(const char *path) {
        for (size_t i = 0; i < n_units; i++)
                if (strcmp(units[i].path, path) == 0)
                        return &units[i];
        return NULL;
}

static int do_mount(void) {
        struct libmnt_context *c = mnt_new_context();
        int r;

        if (fail_mounts > 0) {
                fail_mounts--;
                printf("mount %s: failing on purpose\n", where);
                return -EINVAL;
        }
        mnt_context_disable_helpers(c, 1);
        mnt_context_set_source(c, what);
        mnt_context_set_target(c, where);
        mnt_context_set_fstype(c, type);
        mnt_context_set_options(c, options);
        r = mnt_context_mount(c);
        if (r == 0 && mnt_context_get_syscall_errno(c) != 0)
                r = -mnt_context_get_syscall_errno(c);
        mnt_free_context(c);
        printf("mount %s: %s\n", where, r == 0 ? "ok" : strerror(-r));
        return r;
}

typedef struct Job {
        uint32_t id;
        char path[128];
        Unit *unit;
        bool restart;
} Job;

static int run_job(sd_event_source *s, void *userdata) {
        Job *j = userdata;
        const char *result = "done";

        if (j->restart) {
                if (umount2(where, 0) < 0) {
                        printf("umount %s: %s\n", where, strerror(errno));
                        result = "failed";
                } else {
                        printf("umount %s: ok\n", where);
                        j->unit->active = "inactive";
                }
        }
        if (strcmp(result, "done") == 0) {
                if (do_mount() < 0) {
                        result = "failed";
                        j->unit->active = "failed";
                } else
                        j->unit->active = "active";
        }
        printf("job %u %s %s: %s\n", j->id, j->restart ? "restart" : "start", j->unit->name, result);
        fflush(stdout);
        sd_bus_emit_signal(bus, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                           "JobRemoved", "uoss", j->id, j->path, j->unit->name, result);
        sd_event_source_disable_unref(s);
        free(j);
        return 0;
}

static int method_job(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *name, *mode;
        bool restart = strcmp(sd_bus_message_get_member(m), "RestartUnit") == 0;
        Unit *u;
        Job *j;
        int r = sd_bus_message_read(m, "ss", &name, &mode);

        if (r < 0)
                return r;
        printf("%s %s %s\n", sd_bus_message_get_member(m), name, mode);
        fflush(stdout);
        u = unit_by_name(name);
        if (!u || !u->mount)
                return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.",
                                         name);
        j = calloc(1, sizeof(Job));
        if (!j)
                return -ENOMEM;
        j->id = ++job_id;
        j->unit = u;
        j->restart = restart;
        snprintf(j->path, sizeof j->path, "/org/freedesktop/systemd1/job/%u", j->id);
        r = sd_event_add_defer(sd_bus_get_event(bus), NULL, run_job, j);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "o", j->path);
}

static int method_get_unit(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *name;
        Unit *u;
        int r = sd_bus_message_read(m, "s", &name);

        if (r < 0)
                return r;
        printf("GetUnit %s\n", name);
        fflush(stdout);
        u = unit_by_name(name);
        if (!u)
                return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.",
                                         name);
        return sd_bus_reply_method_return(m, "o", u->path);
}

static int method_subscribe(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        printf("%s\n", sd_bus_message_get_member(m));
        fflush(stdout);
        return sd_bus_reply_method_return(m, "");
}

static int get_property(sd_bus *b, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Unit *u = unit_by_path(path);
        char *empty[] = { NULL };

        if (!u)
                return -ENOENT;
        if (strcmp(property, "LoadState") == 0)
                return sd_bus_message_append(reply, "s", "loaded");
        if (strcmp(property, "ActiveState") == 0)
                return sd_bus_message_append(reply, "s", u->active);
        if (strcmp(property, "FragmentPath") == 0)
                return sd_bus_message_append(reply, "s",
                                             u->mount ? "/run/systemd/generator/fake.mount" : "");
        if (strcmp(property, "SourcePath") == 0)
                return sd_bus_message_append(reply, "s", u->mount ? "/etc/fstab" : "");
        if (strcmp(property, "RequiredBy") == 0)
                return sd_bus_message_append_strv(reply, u->required_by ? u->required_by : empty);
        if (strcmp(property, "BoundBy") == 0)
                return sd_bus_message_append_strv(reply, empty);
        if (strcmp(property, "Where") == 0)
                return sd_bus_message_append(reply, "s", where);
        return -ENOENT;
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("GetUnit", "s", "o", method_get_unit, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Subscribe", "", "", method_subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Unsubscribe", "", "", method_subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("RestartUnit", "ss", "o", method_job, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("StartUnit", "ss", "o", method_job, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL("JobRemoved", "uoss", 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable unit_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("LoadState", "s", get_property, 0, 0),
        SD_BUS_PROPERTY("ActiveState", "s", get_property, 0, 0),
        SD_BUS_PROPERTY("FragmentPath", "s", get_property, 0, 0),
        SD_BUS_PROPERTY("SourcePath", "s", get_property, 0, 0),
        SD_BUS_PROPERTY("RequiredBy", "as", get_property, 0, 0),
        SD_BUS_PROPERTY("BoundBy", "as", get_property, 0, 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable mount_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Where", "s", get_property, 0, 0),
        SD_BUS_VTABLE_END,
};

int main(int argc, char *argv[]) {
        sd_event *event = NULL;
        static char *required_by[2];
        int r;

        if (argc < 7 || argc > 8) {
                fprintf(stderr, "usage: %s UNIT WHERE WHAT TYPE OPTIONS FAIL_MOUNTS [REQUIRED_BY]\n",
                        argv[0]);
                return 2;
        }
        where = argv[2];
        what = argv[3];
        type = argv[4];
        options = argv[5];
        fail_mounts = atoi(argv[6]);
        units[n_units++] = (Unit){ .name = argv[1], .active = "active", .mount = true };
        if (argc == 8) {
                required_by[0] = argv[7];
                units[0].required_by = required_by;
                units[n_units++] = (Unit){ .name = argv[7], .active = "active" };
        }

        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1",
                                             "org.freedesktop.systemd1.Manager", manager_vtable, NULL);
        for (size_t i = 0; r >= 0 && i < n_units; i++) {
                r = sd_bus_path_encode(PREFIX, units[i].name, &units[i].path);
                if (r >= 0)
                        r = sd_bus_add_object_vtable(bus, NULL, units[i].path,
                                                     "org.freedesktop.systemd1.Unit", unit_vtable, NULL);
                if (r >= 0 && units[i].mount)
                        r = sd_bus_add_object_vtable(bus, NULL, units[i].path,
                                                     "org.freedesktop.systemd1.Mount", mount_vtable, NULL);
        }
        if (r >= 0)
                r = sd_bus_request_name(bus, "org.freedesktop.systemd1", 0);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, 0);
        if (r < 0) {
                fprintf(stderr, "fake-systemd: %s\n", strerror(-r));
                return 1;
        }
        printf("ready %s\n", units[0].path);
        fflush(stdout);
        r = sd_event_loop(event);
        return r < 0 ? 1 : 0;
}
