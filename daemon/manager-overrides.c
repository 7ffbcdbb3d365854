/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Manager's overrides: runtime ones, bound to a disk's diskseq and saved in the runtime
 * dir, and persistent ones, a drop-in per disk identity. */
#include <assert.h>
#include <inttypes.h>

#include "identity.h"
#include "log.h"
#include "manager-overrides.h"
#include "util.h"

/* Replaces the runtime overrides by *o (taken) once saved: on failure nothing changed. */
static int manager_save_overrides(Manager *m, RuntimeOverrides *o) {
        Engine *e = &m->engine;
        int r = state_save_overrides(e->runtime_dir, o);
        if (r < 0)
                return log_error_errno(r, "Cannot save runtime overrides to %s: %m", e->runtime_dir);
        runtime_overrides_done(&e->overrides);
        e->overrides = *o;
        *o = (RuntimeOverrides){};
        return 0;
}

/* A copy of the runtime overrides in force, to change and save. */
static int manager_copy_overrides(Manager *m, RuntimeOverrides *ret) {
        const RuntimeOverrides *o = &m->engine.overrides;
        RuntimeOverrides copy = {};

        for (size_t i = 0; i < o->n; i++) {
                int r = runtime_overrides_set(&copy, o->items[i].diskseq, o->items[i].disk,
                                              o->items[i].setting, o->items[i].force);
                if (r < 0) {
                        runtime_overrides_done(&copy);
                        return r;
                }
        }
        *ret = copy;
        return 0;
}

int manager_update_overrides(Manager *m) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides copy = {};
        _cleanup_strv_free_ char **changes = NULL;
        int r, bound;

        r = manager_copy_overrides(m, &copy);
        if (r < 0)
                return r;
        bound = runtime_overrides_update(&copy, &m->engine.table, &changes);
        if (bound < 0)
                return bound;
        if (!changes)
                return 0;
        STRV_FOREACH (c, changes)
                log_info("%s.", *c);
        r = state_save_overrides(m->engine.runtime_dir, &copy);
        if (r < 0)
                log_error_errno(r,
                                "Cannot save runtime overrides to %s, the change holds until a restart: %m",
                                m->engine.runtime_dir);
        runtime_overrides_done(&m->engine.overrides);
        m->engine.overrides = copy;
        copy = (RuntimeOverrides){};
        return bound;
}

int manager_set_override(Manager *m, const EngineDevice *d, Setting setting, bool force) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides copy = {};
        _cleanup_free_ char *disk = NULL;
        uint64_t diskseq;
        int r;

        if (setting < 0 || setting >= _SETTING_MAX)
                return -EINVAL;
        /* The override is for this disk: without a diskseq it could not be told apart from
         * the next disk that takes its name. */
        diskseq = d->facts->diskseq;
        if (diskseq == 0)
                return -EOPNOTSUPP;
        disk = strdup(d->facts->name);
        if (!disk)
                return -ENOMEM;

        r = manager_copy_overrides(m, &copy);
        if (r >= 0)
                r = runtime_overrides_set(&copy, diskseq, disk, setting, force);
        if (r >= 0)
                r = manager_save_overrides(m, &copy);
        if (r < 0)
                return r;
        if (setting == SETTING_AUTO && !force)
                log_info("%s: runtime override removed.", disk);
        else
                log_info("%s: runtime override set to %s%s, bound to this disk (diskseq %" PRIu64 ").", disk,
                         setting_to_string(setting), force ? " (force)" : "", diskseq);
        return manager_reconcile(m);
}

/* Removes the runtime override of d, if any, appending "removed the runtime override …" to
 * *log, and reconciles (d is not valid after). Returns 1 when there was one, 0, or -errno when
 * saving failed (nothing changed). */
static int drop_runtime_override(Manager *m, const EngineDevice *d, char ***log) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides copy = {};
        const RuntimeOverride *o = runtime_overrides_find(&m->engine.overrides, d->facts->diskseq);
        char what[32];
        int r;

        if (!o)
                return 0;
        _cleanup_free_ char *removed = strdup_printf("runtime override %s of %s, bound to diskseq %" PRIu64,
                                                     runtime_override_format(o, what), o->disk, o->diskseq);
        if (!removed)
                return -ENOMEM;
        r = manager_copy_overrides(m, &copy);
        if (r >= 0)
                (void) runtime_overrides_remove(&copy, d->facts->diskseq, "");
        if (r >= 0)
                r = manager_save_overrides(m, &copy);
        if (r < 0)
                return r;
        log_info("%s: removed the %s.", d->facts->name, removed);
        if (strv_extendf(log, "removed the %s", removed) < 0)
                return -ENOMEM;
        r = manager_reconcile(m);
        return r < 0 ? r : 1;
}

/* Reloads after the drop-ins changed; on errors elsewhere in the configuration, *ret_reason
 * names the first one. Returns 0, -EINVAL or -errno. */
static int reload_after(Manager *m, const char *disk, char **ret_reason) {
        _cleanup_(config_diags_done) ConfigDiags diags = {};
        int r = manager_reload(m, &diags);

        if (r == -EINVAL) {
                const ConfigDiag *first = NULL;
                for (size_t i = 0; !first && i < diags.n; i++)
                        if (diags.items[i].level == DIAG_ERROR)
                                first = &diags.items[i];
                *ret_reason = strdup_printf(
                        "%s: the configuration has errors and was not reloaded: %s:%u: %s", disk,
                        first ? first->file : "?", first ? first->line : 0, first ? first->message : "?");
                return *ret_reason ? -EINVAL : -ENOMEM;
        }
        return r;
}

/* Removes the drop-ins at paths (except keep), appending "removed|replaced PATH" to *log. */
static int remove_dropins(char *const *paths, const char *keep, const char *disk, const char *verb,
                          char ***log, char **ret_reason) {
        STRV_FOREACH (p, paths) {
                if (keep && streq(*p, keep))
                        continue;
                if (unlink(*p) < 0 && errno != ENOENT) {
                        int r = -errno;
                        *ret_reason = strdup_printf("%s: cannot remove %s: %s", disk, *p, strerror(-r));
                        return *ret_reason ? r : -ENOMEM;
                }
                log_info("%s: %s the persistent override %s.", disk, verb, *p);
                if (strv_extendf(log, "%s persistent override %s", verb, *p) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The drop-ins of stablepagesctl that match d (disk: its kernel name, for the message). Returns
 * 0, or -errno with *ret_reason. */
static int disk_dropins(Manager *m, const EngineDevice *d, const char *disk, char ***ret_paths,
                        char **ret_reason) {
        DeviceIdentity ident = device_identity_of(d->facts);
        int r = dropins_matching(m->engine.dropin_dir, &ident, ret_paths);

        if (r < 0) {
                *ret_reason =
                        strdup_printf("%s: cannot read %s: %s", disk, m->engine.dropin_dir, strerror(-r));
                return *ret_reason ? r : -ENOMEM;
        }
        return 0;
}

/* What a persistent override of d is bound to (*ret): with force an identity of the disk
 * itself, by_name its kernel name, else the first stable identity. Returns 0, -ENXIO with
 * *ret_reason saying what to do instead, or -ENOMEM. */
static int pick_identity(Manager *m, const EngineDevice *d, const char *disk, bool force, bool by_name,
                         StableId *ret, char **ret_reason) {
        _cleanup_free_ char *why = NULL;
        int r;

        /* A forced override must never reach another disk: never the slot, never the name. */
        assert(!(force && by_name));
        r = stable_id_pick(d->facts, &m->engine.table,
                           force     ? STABLE_ID_OF_DISK
                           : by_name ? STABLE_ID_BY_NAME
                                     : STABLE_ID_ANY,
                           ret, &why);
        if (r == -ENXIO && force) {
                *ret_reason = strdup_printf(
                        "%s: refusing a persistent forced override: %s; a forced setting must never "
                        "reach another disk (a slot or a kernel name goes to whichever disk takes "
                        "it): use --runtime --force, bound to this disk's diskseq until it goes "
                        "away",
                        disk, why);
                return *ret_reason ? -ENXIO : -ENOMEM;
        }
        if (r == -ENXIO) {
                *ret_reason = strdup_printf("%s: %s; use --runtime for an override of this disk until "
                                            "it goes away, or --bind=name to bind it to the kernel "
                                            "name %s on purpose",
                                            disk, why, disk);
                return *ret_reason ? -ENXIO : -ENOMEM;
        }
        return r;
}

/* Writes the drop-in of id (setting, force) for disk, then removes the other drop-ins of
 * existing (those that match the disk), appending each change to *log. Returns 0, -EEXIST when
 * the drop-in's name holds another disk's override, or -errno; with *ret_reason on failure. */
static int write_dropin(Manager *m, const StableId *id, const char *disk, Setting setting, bool force,
                        char *const *existing, char ***log, char **ret_reason) {
        const char *dir = m->engine.dropin_dir;
        _cleanup_free_ char *file = stable_id_dropin_name(id);
        _cleanup_free_ char *path = file ? path_join(dir, file) : NULL;
        _cleanup_free_ char *text = stable_id_dropin_text(id, disk, setting, force);
        _cleanup_free_ char *match = stable_id_match_text(id);
        int r;

        if (!path || !text || !match)
                return -ENOMEM;
        /* Another disk's drop-in under this name (a hash collision, a hand edit): keep it. */
        if (access(path, F_OK) == 0 && !strv_contains(existing, path)) {
                *ret_reason = strdup_printf("%s: %s exists and does not match this disk: not "
                                            "overwriting another disk's override",
                                            disk, path);
                return *ret_reason ? -EEXIST : -ENOMEM;
        }
        r = mkdir_p(dir, 0755);
        if (r >= 0)
                r = write_file_atomic(path, text, strlen(text), 0644);
        if (r < 0) {
                *ret_reason = strdup_printf("%s: cannot write %s: %s", disk, path, strerror(-r));
                return *ret_reason ? r : -ENOMEM;
        }
        log_info("%s: persistent override StableWrites=%s%s bound to [Device %s], written to %s.", disk,
                 setting_to_string(setting), force ? " (force)" : "", match, path);
        if (strv_extendf(log, "bound to [Device %s] in %s", match, path) < 0)
                return -ENOMEM;
        /* One override per disk: the older ones would still match it, and the
         * lexical order of the files, not their age, would decide. */
        return remove_dropins(existing, path, disk, "replaced", log, ret_reason);
}

/* The changes joined by "; " in *ret_message, or none when there are none. Returns 0 or
 * -ENOMEM. */
static int join_changes(char *const *changes, const char *none, char **ret_message) {
        size_t size = 0;
        FILE *f = open_memstream(ret_message, &size);

        if (!f)
                return -ENOMEM;
        STRV_FOREACH (c, changes)
                fprintf(f, "%s%s", c == changes ? "" : "; ", *c);
        if (!changes)
                fputs(none, f);
        return fclose(f) == 0 ? 0 : -ENOMEM;
}

int manager_set_persistent(Manager *m, const EngineDevice *d, Setting setting, bool force, bool by_name,
                           char **ret_message) {
        _cleanup_strv_free_ char **existing = NULL, **changes = NULL;
        _cleanup_free_ char *disk = strdup(d->facts->name); /* d goes with the reconcile below */
        int r;

        *ret_message = NULL;
        if (!disk)
                return -ENOMEM;
        r = disk_dropins(m, d, disk, &existing, ret_message);
        if (r < 0)
                return r;
        if (setting == SETTING_AUTO && !force)
                r = remove_dropins(existing, NULL, disk, "removed", &changes, ret_message);
        else {
                _cleanup_(stable_id_done) StableId id = {};
                r = pick_identity(m, d, disk, force, by_name, &id, ret_message);
                if (r >= 0)
                        r = write_dropin(m, &id, disk, setting, force, existing, &changes, ret_message);
        }
        if (r < 0)
                return r;
        /* A runtime override would shadow it: the newer word wins. */
        r = drop_runtime_override(m, d, &changes);
        if (r >= 0)
                r = reload_after(m, disk, ret_message);
        if (r < 0)
                return r;
        return join_changes(changes, "there was no persistent override to remove", ret_message);
}

int manager_reset_overrides(Manager *m, const EngineDevice *d, bool runtime_only, char ***ret_removed,
                            char **ret_reason) {
        _cleanup_strv_free_ char **files = NULL, **removed = NULL;
        _cleanup_free_ char *disk = strdup(d->facts->name); /* d goes with the reconcile below */
        int r;

        *ret_removed = NULL;
        *ret_reason = NULL;
        if (!disk)
                return -ENOMEM;
        r = runtime_only ? 0 : disk_dropins(m, d, disk, &files, ret_reason);
        if (r >= 0)
                r = remove_dropins(files, NULL, disk, "removed", &removed, ret_reason);
        if (r >= 0)
                r = drop_runtime_override(m, d, &removed);
        if (r >= 0 && files)
                r = reload_after(m, disk, ret_reason);
        if (r < 0)
                return r;
        *ret_removed = TAKE_PTR(removed);
        return 0;
}
