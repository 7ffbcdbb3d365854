/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cycle through systemd (remount-systemd.h): the mount unit found and checked, what its stop
 * would touch, and the stop and start (or transient start) of the unit. */
#include <sys/stat.h>
#include <time.h>

#include "remount-check.h"
#include "remount-systemd.h"
#include "util.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT "org.freedesktop.systemd1.Unit"
#define SD_MOUNT "org.freedesktop.systemd1.Mount"
#define SD_JOB "org.freedesktop.systemd1.Job"

/* At most this many units are looked at for what a stop would touch. */
#define WALK_MAX 512

static void bus_unrefp(sd_bus **b) {
        sd_bus_flush_close_unref(*b);
}

static int why(char **ret_reason, char *s) {
        *ret_reason = s;
        return s ? 0 : -ENOMEM;
}

static bool is_target(const char *unit) {
        size_t n = strlen(unit);
        return n > 7 && streq(unit + n - 7, ".target");
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

static int get_strv(sd_bus *bus, const char *path, const char *prop, char ***ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        return sd_bus_get_property_strv(bus, SD_DEST, path, SD_UNIT, prop, &error, ret);
}

static int get_bool_of(sd_bus *bus, const char *path, const char *iface, const char *prop, int *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        return sd_bus_get_property_trivial(bus, SD_DEST, path, iface, prop, &error, 'b', ret);
}

static int get_bool(sd_bus *bus, const char *path, const char *prop, int *ret) {
        return get_bool_of(bus, path, SD_UNIT, prop, ret);
}

/* The id of the job queued for the unit at path, 0 when none. */
static int get_job_id(sd_bus *bus, const char *path, uint32_t *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *job;
        int r;

        r = sd_bus_get_property(bus, SD_DEST, path, SD_UNIT, "Job", &error, &reply, "(uo)");
        if (r >= 0)
                r = sd_bus_message_read(reply, "(uo)", ret, &job);
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

static bool state_is_active(const char *state) {
        return streq(state, "active") || streq(state, "activating") || streq(state, "reloading");
}

/* A unit in one of these states has a control process at work (mount, umount). */
static bool state_is_changing(const char *state) {
        return streq(state, "activating") || streq(state, "deactivating") || streq(state, "reloading");
}

int remount_systemd_is_active(sd_bus *bus, const char *unit) {
        _cleanup_free_ char *path = NULL, *state = NULL;
        int r = get_unit(bus, unit, &path);

        if (r < 0 || !path)
                return r;
        r = get_string(bus, path, SD_UNIT, "ActiveState", &state);
        return r < 0 ? r : state_is_active(state);
}

int remount_systemd_connect(sd_bus **ret_bus, char **ret_reason) {
        _cleanup_(bus_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int has = 0, r;

        *ret_bus = NULL;
        *ret_reason = NULL;
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return why(ret_reason, strdup_printf("no system bus (%s)", strerror(-r)));
        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", &error, &reply, "s", SD_DEST);
        if (r >= 0) {
                r = sd_bus_message_read(reply, "b", &has);
                sd_bus_message_unref(reply);
        }
        if (r < 0)
                return why(ret_reason,
                           strdup_printf("cannot ask the system bus for systemd (%s)", strerror(-r)));
        if (!has)
                return why(ret_reason, strdup("systemd is not on the system bus"));
        *ret_bus = TAKE_PTR(bus);
        return 1;
}

int remount_systemd_find(sd_bus *bus, const char *target, char **ret_unit, bool *ret_unit_file,
                         char **ret_reason) {
        _cleanup_free_ char *unit = NULL, *path = NULL, *load = NULL, *active = NULL, *where = NULL,
                            *fragment = NULL, *what = NULL;
        int transient = 0, lazy = 0, force = 0, r;
        uint32_t job = 0;

        *ret_unit = *ret_reason = NULL;
        *ret_unit_file = false;
        r = remount_unit_name_from_path(target, &unit);
        if (r < 0)
                return r;
        r = get_unit(bus, unit, &path);
        if (r < 0)
                return r;
        if (!path)
                return why(ret_reason, strdup_printf("systemd has no unit %s loaded", unit));
        if ((r = get_string(bus, path, SD_UNIT, "LoadState", &load)) < 0 ||
            (r = get_string(bus, path, SD_UNIT, "ActiveState", &active)) < 0 ||
            (r = get_string(bus, path, SD_UNIT, "FragmentPath", &fragment)) < 0 ||
            (r = get_bool(bus, path, "Transient", &transient)) < 0 ||
            (r = get_string(bus, path, SD_MOUNT, "Where", &where)) < 0 ||
            (r = get_string(bus, path, SD_MOUNT, "What", &what)) < 0 ||
            (r = get_bool_of(bus, path, SD_MOUNT, "LazyUnmount", &lazy)) < 0 ||
            (r = get_bool_of(bus, path, SD_MOUNT, "ForceUnmount", &force)) < 0 ||
            (r = get_job_id(bus, path, &job)) < 0)
                return r;
        if (!streq(load, "loaded") || !streq(active, "active"))
                return why(ret_reason, strdup_printf("systemd's %s is %s and %s", unit, load, active));
        if (!streq(where, target))
                return why(ret_reason, strdup_printf("systemd's %s is for %s, not %s", unit, where, target));
        if (job != 0)
                return why(ret_reason, strdup_printf("systemd has a job queued for %s", unit));
        /* systemd would unmount it with umount -l or -f: a busy filesystem would be detached
         * (and stay alive out of sight) or forced, instead of refusing the unmount. */
        if (lazy || force)
                return why(ret_reason,
                           strdup_printf("systemd's %s has %s=yes: a busy unmount would %s instead of "
                                         "failing",
                                         unit, lazy ? "LazyUnmount" : "ForceUnmount",
                                         lazy ? "detach it" : "be forced"));
        bool unit_file = !isempty(fragment) && !transient;
        if (unit_file && isempty(what))
                return why(ret_reason, strdup_printf("systemd's %s (%s) has no What=", unit, fragment));
        *ret_unit = TAKE_PTR(unit);
        *ret_unit_file = unit_file;
        return 1;
}

/* The block device a unit's What= names: a path, or a tag (UUID=, LABEL=, PARTUUID=,
 * PARTLABEL=) through udev's /dev/disk/by-* links, as systemd resolves it. 0 when it names
 * no block device here. */
static dev_t what_devnum(const char *what) {
        static const struct {
                const char *tag, *dir;
        } tags[] = {
                { "UUID=", "by-uuid" },
                { "LABEL=", "by-label" },
                { "PARTUUID=", "by-partuuid" },
                { "PARTLABEL=", "by-partlabel" },
        };
        _cleanup_free_ char *path = NULL;
        struct stat st;

        for (size_t i = 0; !path && i < ELEMENTSOF(tags); i++)
                if (startswith(what, tags[i].tag)) {
                        /* udev escapes '/' and blanks in the link's name as \xNN. */
                        FILE *f;
                        size_t size = 0;
                        f = open_memstream(&path, &size);
                        if (!f)
                                return 0;
                        fprintf(f, "/dev/disk/%s/", tags[i].dir);
                        for (const char *c = what + strlen(tags[i].tag); *c; c++)
                                if (*c == '/' || *c == ' ' || *c == '\\')
                                        fprintf(f, "\\x%02x", (unsigned char) *c);
                                else
                                        fputc(*c, f);
                        if (fclose(f) != 0)
                                return 0;
                }
        if (stat(path ?: what, &st) < 0 || !S_ISBLK(st.st_mode))
                return 0;
        return st.st_rdev;
}

int remount_systemd_check_unit_file(sd_bus *bus, const char *unit, const RemountPlan *plan,
                                    char **ret_refusal) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(remount_unit_file_done) RemountUnitFile u = {};
        _cleanup_free_ char *path = NULL, *fragment = NULL;
        _cleanup_strv_free_ char **dropins = NULL, **files = NULL;
        int r;

        *ret_refusal = NULL;
        r = get_unit(bus, unit, &path);
        if (r < 0 || !path)
                return r < 0 ? r : -ENOENT;
        r = get_string(bus, path, SD_UNIT, "FragmentPath", &fragment);
        if (r >= 0)
                r = sd_bus_get_property_strv(bus, SD_DEST, path, SD_UNIT, "DropInPaths", &error, &dropins);
        if (r < 0)
                return r;
        if (strv_extend(&files, fragment) < 0 || strv_extend_strv(&files, dropins) < 0)
                return -ENOMEM;
        STRV_FOREACH (f, files) {
                _cleanup_free_ char *text = NULL, *reason = NULL;
                r = read_full_file(*f, 1 << 20, &text, NULL);
                if (r < 0)
                        return why(ret_refusal, strdup_printf("its unit file %s cannot be read (%s): what "
                                                              "starting %s mounts is not known",
                                                              *f, strerror(-r), unit))
                                       ?: 1;
                r = remount_unit_file_parse(text, &u, &reason);
                if (r != 0)
                        return r < 0 ? r
                                     : why(ret_refusal, strdup_printf("%s (%s): what starting %s mounts is "
                                                                      "not known",
                                                                      reason, *f, unit))
                                               ?: 1;
        }
        r = remount_check_unit_file(plan, unit, &u, u.what ? what_devnum(u.what) : 0, ret_refusal);
        if (r > 0 && *ret_refusal) {
                /* Say which files say so. */
                char *s = strdup_printf("%s (%s)", *ret_refusal, fragment);
                if (!s)
                        return -ENOMEM;
                free(*ret_refusal);
                *ret_refusal = s;
        }
        return r;
}

/* --- what a stop touches --------------------------------------------------------------------- */

/* The dependencies along which systemd propagates a stop job (UNIT_ATOM_PROPAGATE_STOP of
 * systemd's unit-dependency-atom.c), and how the other unit says it. */
static const struct {
        const char *property;
        const char *relation;
} stop_edges[] = {
        { "RequiredBy", "Requires" },
        { "RequisiteOf", "Requisite" },
        { "BoundBy", "BindsTo" },
        { "ConsistsOf", "PartOf" },
        { "PropagatesStopTo", "StopPropagatedFrom" },
};

typedef struct Walk {
        sd_bus *bus;
        char **seen;     /* every unit a stop job would reach */
        char **stopped;  /* the active ones among them */
        char **targets;  /* the active targets among them */
        char **blockers; /* "unit (Relation=other)" */
} Walk;

static void walk_done(Walk *w) {
        strv_free(w->seen);
        strv_free(w->stopped);
        strv_free(w->targets);
        strv_free(w->blockers);
}

/* Adds "unit (why)" to the blockers; takes why. */
static int blocker(Walk *w, const char *unit, char *why) {
        _cleanup_free_ char *text = why;
        if (!text)
                return -ENOMEM;
        return strv_extendf(&w->blockers, "%s (%s)", unit, text);
}

static int walk(Walk *w, const char *unit) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (strv_length(w->seen) >= WALK_MAX)
                return -E2BIG;
        r = get_unit(w->bus, unit, &path);
        if (r < 0 || !path)
                return r;
        for (size_t e = 0; e < ELEMENTSOF(stop_edges); e++) {
                _cleanup_strv_free_ char **deps = NULL;
                r = get_strv(w->bus, path, stop_edges[e].property, &deps);
                if (r < 0)
                        return r;
                STRV_FOREACH (d, deps) {
                        if (strv_contains(w->seen, *d))
                                continue;
                        if (strv_extend(&w->seen, *d) < 0)
                                return -ENOMEM;
                        r = remount_systemd_is_active(w->bus, *d);
                        if (r < 0)
                                return r;
                        if (r > 0 && (strv_extend(&w->stopped, *d) < 0 ||
                                      (is_target(*d) ? strv_extend(&w->targets, *d)
                                                     : blocker(w, *d,
                                                               strdup_printf("%s=%s", stop_edges[e].relation,
                                                                             unit))) < 0))
                                return -ENOMEM;
                        /* A stop of an inactive unit still propagates to what depends on it. */
                        r = walk(w, *d);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Units that only unit keeps active and that stop when unneeded. */
static int walk_unneeded(Walk *w, const char *unit, const char *path) {
        static const char *const pulls[] = { "Requires", "Requisite", "Wants", "BindsTo", "Upholds" };
        static const char *const pins[] = { "RequiredBy", "RequisiteOf", "WantedBy", "BoundBy", "UpheldBy" };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(pulls); i++) {
                _cleanup_strv_free_ char **deps = NULL;
                r = get_strv(w->bus, path, pulls[i], &deps);
                if (r < 0)
                        return r;
                STRV_FOREACH (d, deps) {
                        _cleanup_free_ char *dpath = NULL;
                        int unneeded = 0;
                        bool pinned = false;

                        if (get_unit(w->bus, *d, &dpath) < 0 || !dpath ||
                            get_bool(w->bus, dpath, "StopWhenUnneeded", &unneeded) < 0 || !unneeded ||
                            remount_systemd_is_active(w->bus, *d) <= 0)
                                continue;
                        for (size_t k = 0; !pinned && k < ELEMENTSOF(pins); k++) {
                                _cleanup_strv_free_ char **by = NULL;
                                if (get_strv(w->bus, dpath, pins[k], &by) < 0)
                                        continue;
                                STRV_FOREACH (b, by)
                                        if (!streq(*b, unit) && !strv_contains(w->stopped, *b) &&
                                            remount_systemd_is_active(w->bus, *b) > 0) {
                                                pinned = true;
                                                break;
                                        }
                        }
                        if (!pinned &&
                            blocker(w, *d,
                                    strdup_printf("StopWhenUnneeded=yes, and only %s keeps it", unit)) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

int remount_systemd_check_stop(sd_bus *bus, const char *unit, char **ret_refusal, char ***ret_targets) {
        _cleanup_(walk_done) Walk w = { .bus = bus };
        _cleanup_free_ char *path = NULL;
        int r;

        *ret_refusal = NULL;
        *ret_targets = NULL;
        if (strv_extend(&w.seen, unit) < 0)
                return -ENOMEM;
        r = walk(&w, unit);
        if (r == -E2BIG)
                return (*ret_refusal =
                                strdup_printf("stopping %s would reach more than %d units", unit, WALK_MAX))
                               ? 1
                               : -ENOMEM;
        if (r < 0)
                return r;
        r = get_unit(bus, unit, &path);
        if (r < 0 || !path)
                return r < 0 ? r : -ENOENT;
        /* The stop job also stops a triggering .automount; an Upholds= starts it again at once. */
        static const char *const extra[] = { "TriggeredBy", "UpheldBy" };
        for (size_t i = 0; i < ELEMENTSOF(extra); i++) {
                _cleanup_strv_free_ char **by = NULL;
                r = get_strv(bus, path, extra[i], &by);
                if (r < 0)
                        return r;
                STRV_FOREACH (b, by)
                        if (remount_systemd_is_active(bus, *b) > 0 &&
                            blocker(&w, *b,
                                    i == 0 ? strdup_printf("it triggers %s: it would be stopped", unit)
                                           : strdup_printf("Upholds=%s: it would start it again at once",
                                                           unit)) < 0)
                                return -ENOMEM;
        }
        r = walk_unneeded(&w, unit, path);
        if (r < 0)
                return r;

        if (w.blockers) {
                size_t len = 1;
                STRV_FOREACH (b, w.blockers)
                        len += strlen(*b) + 2;
                _cleanup_free_ char *list = calloc(len, 1);
                if (!list)
                        return -ENOMEM;
                STRV_FOREACH (b, w.blockers) {
                        if (b != w.blockers)
                                strcat(list, ", ");
                        strcat(list, *b);
                }
                *ret_refusal = strdup_printf("stopping %s would also stop %s", unit, list);
                return *ret_refusal ? 1 : -ENOMEM;
        }
        *ret_targets = TAKE_PTR(w.targets);
        return 0;
}

/* --- jobs ------------------------------------------------------------------------------------ */

int remount_systemd_wait_idle(sd_bus *bus, const char *unit, uint64_t timeout_usec) {
        uint64_t deadline = now_usec_monotonic() + timeout_usec;

        for (;;) {
                _cleanup_free_ char *path = NULL, *state = NULL;
                uint32_t job = 0;
                int r = get_unit(bus, unit, &path);
                if (r < 0)
                        return r;
                if (!path)
                        return 0;
                r = get_job_id(bus, path, &job);
                if (r >= 0)
                        r = get_string(bus, path, SD_UNIT, "ActiveState", &state);
                if (r < 0)
                        return r;
                /* A cancelled job leaves its control process (umount) at work. */
                if (job == 0 && !state_is_changing(state))
                        return 0;
                if (now_usec_monotonic() >= deadline)
                        return -ETIMEDOUT;
                (void) nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
        }
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

/* What a job of unit that ended with result (not "done") says to the log: for a mount unit,
 * with the result systemd gives the mount ("exit-code": mount or umount failed) and where
 * their own message is. */
static char *job_failure(sd_bus *bus, const char *unit, const char *result) {
        _cleanup_free_ char *path = NULL, *unit_result = NULL;
        size_t n = strlen(unit);

        if (n > 6 && streq(unit + n - 6, ".mount") && get_unit(bus, unit, &path) >= 0 && path &&
            get_string(bus, path, SD_MOUNT, "Result", &unit_result) >= 0 && !streq(unit_result, "success"))
                return strdup_printf("%s, result %s: see journalctl -u %s", result, unit_result, unit);
        return strdup_printf("%s: see journalctl -u %s", result, unit);
}

/* Sends call (which queues a job of unit and returns its path) and waits for the job. */
static int call_and_wait(sd_bus *bus, sd_bus_message *call, const char *unit, uint64_t timeout_usec,
                         char **ret_result, char **ret_error_name) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_slot *slot = NULL;
        sd_bus_message *reply = NULL;
        JobWait w = {};
        const char *job;
        uint64_t deadline = now_usec_monotonic() + timeout_usec;
        int r;

        *ret_result = NULL;
        if (ret_error_name)
                *ret_error_name = NULL;
        /* Match first, then subscribe (systemd sends job signals only to subscribers), then
         * queue the job: the JobRemoved signal cannot be missed. */
        r = sd_bus_match_signal(bus, &slot, SD_DEST, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed, &w);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", &error, NULL, "");
        if (r < 0 && !sd_bus_error_has_name(&error, "org.freedesktop.systemd1.AlreadySubscribed"))
                goto finish;
        sd_bus_error_free(&error);
        r = sd_bus_call(bus, call, 0, &error, &reply);
        if (r < 0) {
                if (sd_bus_error_is_set(&error)) {
                        *ret_result = strdup(error.message ?: error.name);
                        if (ret_error_name)
                                *ret_error_name = strdup(error.name);
                        r = -EIO;
                }
                goto finish;
        }
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
                        /* Never leave it queued: it would run later, when nobody follows it. */
                        (void) sd_bus_call_method(bus, SD_DEST, w.job, SD_JOB, "Cancel", NULL, NULL, "");
                        *ret_result = strdup_printf("its job did not end within %llu s and was cancelled",
                                                    (unsigned long long) (timeout_usec / USEC_PER_SEC));
                        r = *ret_result ? -ETIMEDOUT : -ENOMEM;
                        goto finish;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        goto finish;
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, deadline - now);
                if (r < 0 && r != -EINTR)
                        goto finish;
        }
        if (streq(w.result, "done"))
                r = 0;
        else {
                *ret_result = job_failure(bus, unit, w.result);
                r = *ret_result ? -EIO : -ENOMEM;
        }
finish:
        (void) sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Unsubscribe", NULL, NULL, "");
        sd_bus_message_unref(reply);
        sd_bus_slot_unref(slot);
        free(w.job);
        free(w.result);
        return r;
}

int remount_systemd_run_job(sd_bus *bus, const char *unit, const char *method, const char *mode,
                            uint64_t timeout_usec, char **ret_result) {
        sd_bus_message *call = NULL;
        int r;

        *ret_result = NULL;
        r = sd_bus_message_new_method_call(bus, &call, SD_DEST, SD_PATH, SD_MANAGER, method);
        if (r >= 0)
                r = sd_bus_message_append(call, "ss", unit, mode);
        if (r >= 0)
                r = call_and_wait(bus, call, unit, timeout_usec, ret_result, NULL);
        sd_bus_message_unref(call);
        return r;
}

int remount_systemd_start_transient(sd_bus *bus, const char *unit, const char *what, const char *type,
                                    const char *options, uint64_t timeout_usec, char **ret_result) {
        _cleanup_free_ char *description = strdup_printf("%s, mounted again by stablepagesd", what);
        int r = -ENOMEM;

        *ret_result = NULL;
        if (!description)
                return -ENOMEM;
        /* A stopped unit of that name is unloaded by systemd's garbage collection soon after its
         * stop job (until then StartTransientUnit says it exists); a failed one (an earlier
         * unmount failed) only once its failure is reset. */
        for (unsigned attempt = 0; attempt < 20; attempt++) {
                _cleanup_free_ char *error_name = NULL;
                sd_bus_message *call = NULL;

                free(*ret_result);
                *ret_result = NULL;
                r = sd_bus_message_new_method_call(bus, &call, SD_DEST, SD_PATH, SD_MANAGER,
                                                   "StartTransientUnit");
                if (r >= 0)
                        r = sd_bus_message_append(call, "ss", unit, "replace");
                if (r >= 0)
                        r = sd_bus_message_append(call, "a(sv)", 4, "Description", "s", description, "What",
                                                  "s", what, "Type", "s", type, "Options", "s", options);
                if (r >= 0)
                        r = sd_bus_message_append(call, "a(sa(sv))", 0);
                if (r >= 0)
                        r = call_and_wait(bus, call, unit, timeout_usec, ret_result, &error_name);
                sd_bus_message_unref(call);
                if (!error_name || !streq(error_name, "org.freedesktop.systemd1.UnitExists"))
                        break;
                if (remount_systemd_is_active(bus, unit) == 0)
                        (void) remount_systemd_reset_failed(bus, unit);
                (void) nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
        }
        return r;
}

int remount_systemd_reset_failed(sd_bus *bus, const char *unit) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        return sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "ResetFailedUnit", &error, NULL, "s",
                                  unit);
}
