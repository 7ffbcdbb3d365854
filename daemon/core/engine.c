/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The engine's setup (options, configuration, runtime overrides, learned decisions) and its
 * decision for one disk: the override in force, Need=, what was learned, the policy. */
#include <inttypes.h>
#include <sys/utsname.h>
#include <time.h>

#include "config-build.h"
#include "config-in-force.h"
#include "engine-internal.h"
#include "identity.h"
#include "log.h"
#include "util.h"

static int strdup_or(char **dst, const char *value, const char *fallback) {
        *dst = strdup(value ?: fallback);
        return *dst ? 0 : -ENOMEM;
}

/* This boot's id in *ret ("" when the kernel does not say). Returns 0 or -ENOMEM. */
static int read_boot_id(char **ret) {
        _cleanup_free_ char *data = NULL;
        int r = read_full_file("/proc/sys/kernel/random/boot_id", 64, &data, NULL);

        if (r < 0)
                log_debug_errno(r, "Cannot read this boot's id: %m");
        if (r == -ENOMEM)
                return r;
        return strdup_or(ret, r < 0 ? NULL : strstrip(data), "");
}

/* The kernel's version with the patch level its release may hide: Debian names its 6.1.176 kernel
 * "6.1.0-50-amd64" and says "Debian 6.1.176-1" in uname -v, Ubuntu says it in
 * /proc/version_signature ("Ubuntu 6.5.0-14.14-generic 6.5.3"). A bound such as 6.1.72 (the page
 * cache's capture, consumers.h) rests on it. */
static unsigned kernel_version_refined(unsigned kernel, const char *version) {
        _cleanup_free_ char *signature = NULL;
        const char *p = version ? strstr(version, "Debian ") : NULL;
        unsigned a, b, c;

        if (p)
                p += strlen("Debian ");
        else if (read_full_file("/proc/version_signature", 256, &signature, NULL) >= 0 &&
                 (p = strrchr(strstrip(signature), ' ')))
                p++;
        if (!p || sscanf(p, "%u.%u.%u", &a, &b, &c) != 3 || KERNEL_VERSION(a, b, 0) != (kernel & ~0xffU))
                return kernel;
        return KERNEL_VERSION(a, b, c);
}

int engine_init(Engine *e, const EngineOptions *o) {
        struct utsname u;
        int r;

        *e = (Engine){
                .resolve_backing = o->resolve_backing,
                .resolve_userdata = o->resolve_userdata,
                .read_dm_table = o->read_dm_table,
                .read_dm_table_userdata = o->read_dm_table_userdata,
                .record_history = o->record_history,
        };
        if (!o->kernel_release && uname(&u) < 0)
                return -errno;
        if ((r = strdup_or(&e->sysfs_root, o->sysfs_root, "/sys")) < 0 ||
            (r = strdup_or(&e->udev_data_dir, o->udev_data_dir, "/run/udev/data")) < 0 ||
            (r = strdup_or(&e->config_file, o->config_file, CONFIG_FILE)) < 0 ||
            (r = strdup_or(&e->dropin_dir, o->dropin_dir, CONFIG_DROPIN_DIR)) < 0 ||
            (r = strdup_or(&e->runtime_dir, o->runtime_dir, RUNTIME_DIR)) < 0 ||
            (r = strdup_or(&e->state_dir, o->state_dir, STATE_DIR)) < 0 ||
            (r = strdup_or(&e->kernel_release, o->kernel_release, u.release)) < 0 ||
            (r = strdup_or(&e->writer, o->writer, "stablepagesd")) < 0 ||
            (o->added_disk && (r = strdup_or(&e->added_disk, o->added_disk, NULL)) < 0) ||
            (r = o->boot_id ? strdup_or(&e->boot_id, o->boot_id, "") : read_boot_id(&e->boot_id)) < 0)
                goto fail;
        r = parse_kernel_version(e->kernel_release, &e->kernel);
        if (r < 0) {
                log_error("Cannot parse kernel release \"%s\".", e->kernel_release);
                goto fail;
        }
        if (!o->kernel_release)
                e->kernel = kernel_version_refined(e->kernel, u.version);
        r = config_init_defaults(&e->config);
        if (r < 0)
                goto fail;
        return 0;
fail:
        engine_done(e);
        return r;
}

void engine_device_done(EngineDevice *d) {
        classification_done(&d->class);
        policy_decision_done(&d->decision);
        free(d->learned_key);
        free(d->learned_reason);
        free(d->need_problem);
        free(d->override_binding);
        free(d->override_source);
        *d = (EngineDevice){};
}

void engine_devices_free(Engine *e) {
        for (size_t i = 0; e->devices && i < e->table.n; i++)
                engine_device_done(&e->devices[i]);
        e->devices = mfree(e->devices);
        device_table_done(&e->table);
}

void engine_done(Engine *e) {
        engine_devices_free(e);
        config_done(&e->config);
        config_diags_done(&e->diags);
        runtime_overrides_done(&e->overrides);
        learned_records_done(&e->learned);
        free(e->state_dir);
        free(e->sysfs_root);
        free(e->udev_data_dir);
        free(e->config_file);
        free(e->dropin_dir);
        free(e->runtime_dir);
        free(e->kernel_release);
        free(e->boot_id);
        free(e->added_disk);
        free(e->writer);
        *e = (Engine){};
}

/* Takes the result r of a load (c and d) as e's configuration and diagnostics. Returns 0 or
 * r < 0 (c and d then freed). */
static int engine_take_config(Engine *e, int r, Config *c, ConfigDiags *d) {
        if (r < 0) {
                config_done(c);
                config_diags_done(d);
                return r;
        }
        config_diags_done(&e->diags);
        e->diags = *d;
        *d = (ConfigDiags){};
        engine_set_config(e, c);
        return 0;
}

int engine_load_config(Engine *e) {
        Config c = {};
        ConfigDiags d = {};
        return engine_take_config(e, config_load(e->config_file, e->dropin_dir, &c, &d), &c, &d);
}

int engine_load_config_in_force(Engine *e, char **ret_note) {
        Config c = {};
        ConfigDiags d = {};
        int r = config_load_in_force(e->config_file, e->dropin_dir, e->runtime_dir, &c, &d, ret_note);
        return engine_take_config(e, r == -ENOMEM ? r : 0, &c, &d);
}

void engine_set_config(Engine *e, Config *c) {
        for (size_t i = 0; e->devices && i < e->table.n; i++)
                e->devices[i].setting_rule = NULL; /* points into the old config */
        config_done(&e->config);
        e->config = *c;
        *c = (Config){};
}

int engine_load_overrides(Engine *e) {
        RuntimeOverrides o = {};
        int r = state_load_overrides(e->runtime_dir, &o);
        if (r < 0)
                return r;
        runtime_overrides_done(&e->overrides);
        e->overrides = o;
        return 0;
}

int engine_load_learned(Engine *e) {
        LearnedRecords l = {};
        int r = learned_load(e->state_dir, e->boot_id, &l);
        if (r < 0)
                return r;
        learned_records_done(&e->learned);
        e->learned = l;
        return 0;
}

int engine_learned_key(Engine *e, EngineDevice *d) {
        return d->learned_key ? 0 : learned_key(d->facts, &e->table, e->boot_id, &d->learned_key);
}

int need_rank(Need n) {
        return n == NEED_REQUIRED ? 3 : n == NEED_UNKNOWN ? 2 : n == NEED_RECOMMENDED ? 1 : 0;
}

/* Need= of a [Device] section: raises the detected need, or records why it cannot lower it. */
static int engine_configured_need(Engine *e, EngineDevice *d, const DeviceIdentity *id) {
        const DeviceRule *rule;
        int need = config_device_need(&e->config, id, &rule);
        Classification *c = &d->class;

        if (need < 0 || (Need) need == c->need)
                return 0;
        if (need_rank(need) < need_rank(c->need)) {
                d->need_problem = strdup_printf(
                        "%s:%u: Need=%s cannot lower the detected need %s of %s (%s); "
                        "ignoring it",
                        rule->file, rule->need_line, need_to_string(need), need_to_string(c->need),
                        d->facts->name, c->reasons ? c->reasons[0] : "no reason");
                return d->need_problem ? 0 : -ENOMEM;
        }
        _cleanup_strv_free_ char **reasons = NULL;
        if (strv_extendf(&reasons, "Need=%s in %s:%u (detected: %s)", need_to_string(need), rule->file,
                         rule->need_line, need_to_string(c->need)) < 0 ||
            strv_extend_strv(&reasons, c->reasons) < 0)
                return -ENOMEM;
        strv_free(c->reasons);
        c->reasons = TAKE_PTR(reasons);
        c->need = need;
        return 0;
}

int engine_decide(Engine *e, EngineDevice *d) {
        DeviceFacts *f = d->facts;
        DeviceIdentity id = device_identity_of(f);
        const DeviceRule *force_rule = NULL;
        const RuntimeOverride *o;

        config_device_settings(&e->config, &id, &d->setting, &d->force, &d->setting_rule, &force_rule);
        d->setting_source = SOURCE_CONFIG;
        /* Bound to this disk, not to its name: another disk under the name has its own diskseq. */
        o = runtime_overrides_find(&e->overrides, f->diskseq);
        if (o) {
                d->setting = o->setting;
                d->force = o->force;
                d->setting_source = SOURCE_RUNTIME;
                d->setting_rule = NULL;
        }
        d->managed = config_device_is_managed(&e->config, f->name);
        int r = engine_describe_override(e, d, o, force_rule);
        if (r < 0)
                return r;
        r = engine_configured_need(e, d, &id);
        if (r < 0)
                return r;

        /* Keyed by the disk, never by its name: another disk under the name gets none of it. */
        const LearnedRecord *l;
        r = learned_find_disk(&e->learned, f, &e->table, e->boot_id, &l, &d->learned_key);
        if (r < 0)
                return r;
        _cleanup_free_ char *summary = NULL;
        d->learned = l ? l->learned : LEARNED_NONE;
        if (l && l->learned != LEARNED_NONE) { /* else a mirror's figures only */
                char when[64];
                time_t t = (time_t) (l->since_usec / USEC_PER_SEC);
                struct tm tm;
                strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&t, &tm));
                d->learned_since_usec = l->since_usec;
                d->learned_reason = strdup(l->reason);
                summary = strdup_printf("learned %s: %s", when, l->reason);
                if (!d->learned_reason || !summary)
                        return -ENOMEM;
        }
        d->stalls = d->learned == LEARNED_OFF  ? STALL_OVER_BUDGET
                    : d->learned == LEARNED_ON ? STALL_WITHIN_BUDGET
                                               : STALL_UNMEASURED;

        PolicyInput in = {
                .name = f->name,
                .mode = e->config.policy,
                .need = d->class.need,
                .need_reason = d->class.reasons ? d->class.reasons[0] : NULL,
                .managed = d->managed,
                .setting = d->setting,
                .setting_source = d->setting_source,
                .force = d->force,
                .stalls = d->stalls,
                .stall_summary = summary,
                .declared = f->declared_stable_writes == 1,
                .integrity_enforced = d->class.integrity_enforced,
        };
        policy_decision_done(&d->decision);
        return policy_decide(&in, &d->decision);
}
