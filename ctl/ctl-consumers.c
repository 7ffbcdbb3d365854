/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The consumers of disks, as status and explain show them (ctl-consumers.h). */
#include <time.h>

#include "bus-api.h"
#include "consumers-read.h"
#include "ctl-consumers.h"
#include "ctl.h"
#include "log.h"
#include "openers.h"
#include "utf8.h"
#include "util.h"

void consumer_set_done(ConsumerSet *s) {
        for (size_t i = 0; i < s->n; i++)
                device_consumers_done(&s->lists[i]);
        free(s->lists);
        strv_free(s->disks);
        *s = (ConsumerSet){};
}

const DeviceConsumers *consumer_set_find(const ConsumerSet *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->disks[i], name))
                        return &s->lists[i];
        return NULL;
}

/* The list of disk in s, added (empty) when missing. NULL on -ENOMEM. */
static DeviceConsumers *consumer_set_get(ConsumerSet *s, const char *disk) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->disks[i], disk))
                        return &s->lists[i];
        DeviceConsumers *l = realloc(s->lists, sizeof(DeviceConsumers) * (s->n + 1));
        if (!l)
                return NULL;
        s->lists = l;
        if (strv_extend(&s->disks, disk) < 0)
                return NULL;
        l[s->n] = (DeviceConsumers){};
        return &l[s->n++];
}

/* Reads the members after the disk of a consumer: kind, name, type, captured, in force, origin,
 * since, hazard, note. */
static int read_consumer(sd_bus_message *m, Consumer *ret) {
        const char *kind, *name, *type, *captured, *origin, *note;
        int in_force, hazard, r;
        uint64_t since;

        r = sd_bus_message_read(m, "ssssbstbs", &kind, &name, &type, &captured, &in_force, &origin, &since,
                                &hazard, &note);
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        *ret = (Consumer){
                .kind = consumer_kind_from_string(kind),
                .name = strdup(name),
                .what = strdup(type),
                .captured = streq(captured, "on")    ? 1
                            : streq(captured, "off") ? 0
                                                     : -1,
                .in_force = in_force,
                .origin = capture_origin_from_string(origin),
                .since_usec = since,
                .hazard = hazard,
                .note = strdup(note),
        };
        if (!ret->name || !ret->what || !ret->note) {
                consumer_done(ret);
                return -ENOMEM;
        }
        return 0;
}

int ctl_consumers_from_bus(sd_bus *bus, ConsumerSet *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(consumer_set_done) ConsumerSet s = {};
        int r;

        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "ListConsumers", &error,
                               &reply, "");
        if (r < 0)
                return ctl_call_error("status", &error, r);
        r = sd_bus_message_enter_container(reply, 'a', "(sssssbstbs)");
        while (r >= 0) {
                const char *disk;
                DeviceConsumers *l;
                Consumer c;

                r = sd_bus_message_enter_container(reply, 'r', "sssssbstbs");
                if (r <= 0)
                        break;
                r = sd_bus_message_read(reply, "s", &disk);
                if (r >= 0)
                        r = read_consumer(reply, &c);
                if (r >= 0)
                        r = (l = consumer_set_get(&s, disk)) ? device_consumers_add(l, &c) : -ENOMEM;
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Bad reply to ListConsumers: %m");
        *ret = s;
        s = (ConsumerSet){};
        return 0;
}

/* Replaces *s by its utf8_escape(). Returns 0 or -ENOMEM. */
static int escape(char **s) {
        char *e = utf8_escape(*s);
        if (!e)
                return -ENOMEM;
        free(*s);
        *s = e;
        return 0;
}

int ctl_consumers_local(const Engine *e, ConsumerSet *ret) {
        _cleanup_(local_consumers_done) LocalConsumers local = {};
        _cleanup_(consumer_set_done) ConsumerSet s = {};
        int r = local_consumers_read(e, &local);

        if (r < 0)
                return log_oom();
        ConsumerInputs in = local_consumers_inputs(&local);
        for (size_t i = 0; i < e->table.n; i++) {
                DeviceConsumers *l = consumer_set_get(&s, e->devices[i].facts->name);
                if (!l || consumers_of(e, &e->devices[i], &in, l) < 0)
                        return log_oom();
                /* Shown as the daemon sends them: mount targets and swap paths are the kernel's bytes. */
                for (size_t j = 0; j < l->n; j++)
                        if (escape(&l->items[j].name) < 0 || escape(&l->items[j].what) < 0 ||
                            escape(&l->items[j].note) < 0)
                                return log_oom();
        }
        *ret = s;
        s = (ConsumerSet){};
        return 0;
}

int ctl_read_consumers(sd_bus_message *m, DeviceConsumers *ret) {
        _cleanup_(device_consumers_done) DeviceConsumers l = {};
        int r = sd_bus_message_enter_container(m, 'a', "(ssssbstbs)");

        while (r >= 0) {
                Consumer c;
                r = sd_bus_message_enter_container(m, 'r', "ssssbstbs");
                if (r <= 0)
                        break;
                r = read_consumer(m, &c);
                if (r >= 0)
                        r = device_consumers_add(&l, &c);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r < 0)
                return r;
        *ret = l;
        l = (DeviceConsumers){};
        return sd_bus_message_exit_container(m);
}

char *ctl_mounts_summary(const DeviceConsumers *c) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        bool any = false;

        if (!f)
                return NULL;
        for (size_t i = 0; c && i < c->n; i++)
                if (c->items[i].kind == CONSUMER_FILESYSTEM) {
                        fprintf(f, "%s%s:%s", any ? " " : "", c->items[i].name,
                                captured_to_string(c->items[i].captured));
                        any = true;
                }
        if (!any)
                fputs("-", f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* "at 2026-12-06 14:30:01" of a CLOCK_REALTIME in usec, "" for 0. */
static const char *format_at(uint64_t usec, char buf[static 48]) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;

        buf[0] = '\0';
        if (usec > 0 && localtime_r(&t, &tm))
                strftime(buf, 48, " since %Y-%m-%d %H:%M:%S", &tm);
        return buf;
}

void ctl_print_consumers(const DeviceConsumers *c) {
        char at[48];

        for (size_t i = 0; c && i < c->n; i++) {
                const Consumer *x = &c->items[i];
                _cleanup_free_ char *what = NULL;

                switch (x->kind) {
                case CONSUMER_PAGE_CACHE:
                        what = strdup_printf("page cache of %s", x->name);
                        break;
                case CONSUMER_FILESYSTEM:
                        what = strdup_printf("%s (%s)", x->name, x->what);
                        break;
                case CONSUMER_SWAP:
                        what = strdup_printf("swap %s (%s)", x->name, x->what);
                        break;
                default:
                        what = strdup_printf("%s, stacked on it", x->name);
                        break;
                }
                printf("  consumer: %s: %s%s (%s)%s\n", what ?: x->name, captured_to_string(x->captured),
                       format_at(x->since_usec, at), capture_origin_to_string(x->origin) ?: "?",
                       x->hazard ? ", HAZARD" : "");
                if (!x->hazard)
                        printf("            %s\n", x->note);
        }
}

/* The processes with disk (or a partition of it) open for writing, as this process sees them. */
static char *describe_openers(const char *disk) {
        _cleanup_(device_facts_done) DeviceFacts f = {};
        _cleanup_(openers_done) Openers o = {};
        _cleanup_free_ dev_t *devnums = NULL;

        if (device_facts_read(&(DeviceScanOptions){ .udev_data_dir = "" }, disk, &f) < 0)
                return NULL;
        devnums = calloc(f.n_partitions + 1, sizeof(dev_t));
        if (!devnums)
                return NULL;
        devnums[0] = f.devnum;
        for (size_t i = 0; i < f.n_partitions; i++)
                devnums[i + 1] = f.partitions[i].devnum;
        if (openers_scan(NULL, devnums, f.n_partitions + 1, &o) < 0)
                return NULL;
        return openers_describe(&o, disk);
}

void ctl_say_consumer_hazards(const char *disk, const DeviceConsumers *c) {
        for (size_t i = 0; c && i < c->n; i++) {
                const Consumer *x = &c->items[i];
                _cleanup_free_ char *who = NULL;

                if (!x->hazard)
                        continue;
                if (x->kind == CONSUMER_PAGE_CACHE)
                        who = describe_openers(disk);
                log_error("%s%s%s", x->note, who ? " Now: " : "", who ?: "");
        }
}
