/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The verbs that change something (set, reset, apply, reload) and check-config. */
#include <assert.h>
#include <inttypes.h>

#include "bus-api.h"
#include "config-build.h"
#include "config.h"
#include "ctl.h"
#include "log.h"
#include "util.h"

int verb_set(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *message;
        uint64_t flags = (arg_runtime ? SET_FLAG_RUNTIME : 0) | (arg_force ? SET_FLAG_FORCE : 0) |
                         (arg_apply ? SET_FLAG_APPLY : 0);

        assert(argv);

        if (setting_from_string(argv[1]) < 0)
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL),
                                       "set %s: expected on, off or auto, not \"%s\".", argv[0], argv[1]);
        if (arg_bind_name && arg_runtime)
                return log_error_errno(
                        SYNTHETIC_ERRNO(EINVAL),
                        "set %s: --bind=name is for persistent overrides; a runtime override is "
                        "bound to the disk itself (its diskseq), never to its name.",
                        argv[0]);
        if (arg_bind_name && arg_force)
                return log_error_errno(
                        SYNTHETIC_ERRNO(EINVAL),
                        "set %s: --force with --bind=name: a forced override is never bound to the kernel "
                        "name, which goes to whichever disk takes it; without --bind=name it is bound to "
                        "the disk's own identity, with --runtime to this disk's diskseq.",
                        argv[0]);
        flags |= arg_bind_name ? SET_FLAG_BIND_NAME : 0;
        int r = ctl_daemon_bus("set", &bus);
        if (r < 0)
                return r;
        ctl_ask_password(bus);
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "SetDevicePolicy", &error,
                               &reply, "sst", argv[0], argv[1], flags);
        if (r < 0)
                return ctl_call_error(argv[0], &error, r);
        if (sd_bus_message_read(reply, "s", &message) < 0)
                return 0;
        if (arg_json != JSON_OFF) {
                JsonWriter w;
                ctl_json_begin(&w);
                json_object_begin(&w);
                json_member_string(&w, "device", argv[0]);
                json_member_string(&w, "setting", argv[1]);
                json_member_string(&w, "message", message);
                json_object_end(&w);
                ctl_json_end(&w);
        } else
                printf("%s\n", message);
        return 0;
}

/* Says why reset found nothing to remove for the disk at path. */
static void reset_nothing(sd_bus *bus, const char *disk, const char *path) {
        _cleanup_free_ char *scope = NULL, *binding = NULL, *source = NULL;
        uint64_t diskseq = 0;

        (void) sd_bus_get_property_trivial(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "DiskSeq", NULL, 't',
                                           &diskseq);
        if (sd_bus_get_property_string(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "OverrideScope", NULL,
                                       &scope) >= 0 &&
            sd_bus_get_property_string(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "OverrideBinding", NULL,
                                       &binding) >= 0 &&
            sd_bus_get_property_string(bus, BUS_NAME, path, BUS_DEVICE_INTERFACE, "OverrideSource", NULL,
                                       &source) >= 0 &&
            streq(scope, "config"))
                log_error("%s: no %s to remove; its override is bound to %s in %s%s.", disk,
                          arg_runtime ? "runtime override" : "override written by stablepagesctl", binding,
                          source,
                          arg_runtime ? ": reset without --runtime removes it if stablepagesctl wrote it"
                                      : ", which stablepagesctl did not write: edit that file");
        else
                log_error("%s: no override to remove: no runtime override is bound to this disk (diskseq "
                          "%" PRIu64 ")%s.",
                          disk, diskseq, arg_runtime ? "" : " and no drop-in of stablepagesctl matches it");
}

int verb_reset(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *device = NULL;
        _cleanup_strv_free_ char **removed = NULL;
        _cleanup_free_ char *disk = NULL;
        const char *path;

        assert(argv);

        int r = ctl_daemon_bus("reset", &bus);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "GetDevice", &error, &device,
                               "s", argv[0]);
        if (r < 0)
                return ctl_call_error(argv[0], &error, r);
        if (sd_bus_message_read(device, "o", &path) < 0 ||
            sd_bus_path_decode(path, BUS_DEVICE_PREFIX, &disk) <= 0)
                return log_error_errno(SYNTHETIC_ERRNO(EBADMSG), "%s: bad reply from stablepagesd.",
                                       argv[0]);
        ctl_ask_password(bus);
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "ResetDevicePolicy", &error,
                               &reply, "st", disk, arg_runtime ? SET_FLAG_RUNTIME : UINT64_C(0));
        if (r < 0)
                return ctl_call_error(disk, &error, r);
        r = sd_bus_message_read_strv(reply, &removed);
        if (r < 0)
                return log_error_errno(r, "%s: bad reply: %m", disk);
        if (!removed) {
                reset_nothing(bus, disk, path);
                return -ENOENT;
        }
        if (arg_json != JSON_OFF) {
                JsonWriter w;
                ctl_json_begin(&w);
                json_object_begin(&w);
                json_member_string(&w, "device", disk);
                json_key(&w, "removed");
                json_strv(&w, removed);
                json_object_end(&w);
                ctl_json_end(&w);
        } else
                STRV_FOREACH (s, removed)
                        printf("%s: %s\n", disk, *s);
        return 0;
}

int verb_apply(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_strv_free_ char **disks = NULL;
        bool failed = false;
        JsonWriter w;

        assert(argv);

        int r = ctl_daemon_bus("apply", &bus);
        if (r < 0)
                return r;
        r = ctl_resolve_names(bus, argc, argv, &disks);
        if (r < 0)
                return r;
        ctl_ask_password(bus);
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "Apply");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, disks);
        if (r >= 0)
                r = sd_bus_message_append(m, "t", arg_remount ? APPLY_FLAG_REMOUNT : UINT64_C(0));
        if (r < 0)
                return log_error_errno(r, "Cannot build the call: %m");
        /* A cycle waits for the unmount to write the filesystem's dirty data back. */
        r = sd_bus_call(bus, m, arg_remount ? 10 * 60 * USEC_PER_SEC : 0, &error, &reply);
        if (r < 0)
                return ctl_call_error("apply", &error, r);

        ctl_json_begin(&w);
        if (arg_json != JSON_OFF)
                json_array_begin(&w);
        r = sd_bus_message_enter_container(reply, 'a', "(sbbbs)");
        while (r >= 0) {
                const char *name, *message;
                int ok, changed, value;
                r = sd_bus_message_read(reply, "(sbbbs)", &name, &ok, &changed, &value, &message);
                if (r <= 0)
                        break;
                if (!ok) {
                        log_error("%s", message);
                        failed = true;
                }
                if (arg_json != JSON_OFF) {
                        json_object_begin(&w);
                        json_member_string(&w, "device", name);
                        json_member_bool(&w, "ok", ok);
                        json_member_bool(&w, "changed", changed);
                        json_member_bool(&w, "stable_writes", value);
                        json_member_string(&w, "message", message);
                        json_object_end(&w);
                } else if (ok)
                        printf("%s\n", message);
        }
        if (r < 0)
                return log_error_errno(r, "Bad reply: %m");
        if (arg_json != JSON_OFF) {
                json_array_end(&w);
                ctl_json_end(&w);
        }
        return failed ? -EIO : 0; /* each refusal or failure logged with its reason */
}

int verb_reload(int argc, char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        assert(argv);

        int r = ctl_daemon_bus("reload", &bus);
        if (r < 0)
                return r;
        ctl_ask_password(bus);
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_MANAGER_INTERFACE, "Reload", &error, NULL, "");
        if (r < 0)
                return ctl_call_error("reload", &error, r);
        return 0;
}

/* check-config --json: every diagnostic, and how many of each level. */
static void diags_json(const ConfigDiags *diags, size_t errors) {
        JsonWriter w;

        ctl_json_begin(&w);
        json_object_begin(&w);
        json_key(&w, "diagnostics");
        json_array_begin(&w);
        for (size_t i = 0; i < diags->n; i++) {
                const ConfigDiag *d = &diags->items[i];
                json_object_begin(&w);
                json_member_string(&w, "file", d->file);
                json_key(&w, "line");
                if (d->line > 0)
                        json_uint(&w, d->line);
                else
                        json_null(&w);
                json_member_string(&w, "level", d->level == DIAG_ERROR ? "error" : "warning");
                json_member_string(&w, "message", d->message);
                json_object_end(&w);
        }
        json_array_end(&w);
        json_member_uint(&w, "errors", errors);
        json_member_uint(&w, "warnings", diags->n - errors);
        json_object_end(&w);
        ctl_json_end(&w);
}

int ctl_config_load(Config *ret, ConfigDiags *diags) {
        _cleanup_free_ char *file = NULL, *dir = NULL;

        if (arg_config_dir) {
                file = path_join(arg_config_dir, "stablepages.conf");
                dir = path_join(arg_config_dir, "stablepages.conf.d");
                if (!file || !dir)
                        return -ENOMEM;
        }
        return config_load(file ?: CONFIG_FILE, dir ?: CONFIG_DROPIN_DIR, ret, diags);
}

int verb_check_config(int argc, char **argv) {
        _cleanup_(config_done) Config c = {};
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        int r;

        assert(argv);

        if (argc > 0) {
                r = config_init_defaults(&c);
                if (r >= 0)
                        r = config_parse_file(&c, argv[0], &diags);
        } else
                r = ctl_config_load(&c, &diags);
        if (r < 0)
                return log_error_errno(r, "check-config: %m");
        size_t errors = config_diags_errors(&diags);
        if (arg_json != JSON_OFF) {
                diags_json(&diags, errors);
                return errors > 0 ? -EBADMSG : 0;
        }
        config_diags_print(&diags, stdout);
        if (errors > 0) {
                printf("%zu error(s), %zu warning(s)\n", errors, diags.n - errors);
                return -EBADMSG;
        }
        if (diags.n > 0)
                printf("0 errors, %zu warning(s)\n", diags.n);
        return 0;
}
