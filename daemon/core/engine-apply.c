/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The engine's one change to the system: queue/stable_writes of a disk made as decided, or put
 * back to the kernel's own value. */
#include "engine.h"
#include "flag.h"
#include "history.h"
#include "log.h"
#include "message-id.h"
#include "util.h"

void apply_result_done(ApplyResult *r) {
        free(r->message);
        *r = (ApplyResult){};
}

static int fail(ApplyResult *ret, int error, char *message) {
        ret->message = message;
        return message ? error : -ENOMEM;
}

/* True when the disk is gone from sysfs, or going: removed while we looked at it or wrote
 * to it. The kernel removes queue/ first (del_gendisk), then the disk's directory. */
static bool disk_removed(const Engine *e, const char *name) {
        _cleanup_free_ char *p = strdup_printf("%s/block/%s/queue", e->sysfs_root, name);
        return p && access(p, F_OK) < 0 && errno == ENOENT;
}
int engine_apply(Engine *e, EngineDevice *d, ApplyResult *ret) {
        DeviceFacts *f = d->facts;
        const PolicyDecision *dec = &d->decision;
        int r;

        *ret = (ApplyResult){ .old_value = f->stable_writes, .new_value = f->stable_writes };
        if (dec->desired < 0) {
                ret->message = strdup_printf("%s: left as it is (%s)", f->name, dec->reason);
                return ret->message ? 0 : -ENOMEM;
        }
        /* Unreadable or unparsable (recorded by device.c) is not the same as absent. */
        STRV_FOREACH (err, f->errors)
                if (f->stable_writes == ATTR_ABSENT && startswith(*err, "queue/stable_writes:"))
                        return fail(ret, -EIO, strdup_printf("%s: %s", f->name, *err));
        if (f->stable_writes == ATTR_ABSENT && disk_removed(e, f->name))
                return fail(ret, -ENODEV, strdup_printf("%s: the disk was removed", f->name));
        if (f->stable_writes == ATTR_ABSENT)
                return fail(
                        ret, -EOPNOTSUPP,
                        strdup_printf("%s: the kernel has no queue/stable_writes for this device", f->name));

        if (f->stable_writes != dec->desired) {
                _cleanup_free_ char *reason = NULL;
                int now, old = f->stable_writes;
                FlagWrite w = {
                        .disk = f->name,
                        .diskseq = f->diskseq,
                        .devnum = f->devnum,
                        .need = d->class.need,
                        .force = dec->forced,
                        .value = dec->desired,
                        .writer = e->writer,
                        .need_of = engine_need_of,
                        .userdata = e,
                };

                r = flag_write(e->sysfs_root, e->runtime_dir, &w, &now, &reason);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail(ret, r, TAKE_PTR(reason));
                ret->changed = now != old;
                ret->new_value = now;
                f->stable_writes = now;
                d->class.in_force = stable_writes_in_force(f, e->kernel);
                if (ret->changed)
                        log_struct(dec->forced ? LOG_WARNING : LOG_INFO,
                                   dec->forced ? SP_MESSAGE_FORCED : NULL,
                                   LOG_FIELDS("STABLEPAGES_DEVICE", f->name),
                                   "%s: stable writes %s -> %s: %s%s (need %s: %s)", f->name,
                                   old ? "on" : "off", now ? "on" : "off", dec->reason,
                                   dec->forced ? " (FORCED)" : "", need_to_string(d->class.need),
                                   d->class.reasons ? d->class.reasons[0] : "no reason");
        }

        if (dec->refused)
                return fail(ret, -EPERM, strdup_printf("%s: %s", f->name, dec->reason));
        ret->message = strdup_printf("%s: stable writes %s%s (%s)", f->name, desired_to_string(dec->desired),
                                     ret->changed ? "" : ", unchanged", dec->reason);
        return ret->message ? 0 : -ENOMEM;
}

int engine_restore(Engine *e, EngineDevice *d, ApplyResult *ret) {
        _cleanup_(history_done) FlagHistory h = {};
        _cleanup_free_ char *reason = NULL;
        DeviceFacts *f = d->facts;
        bool ours = false;
        int r, now;

        *ret = (ApplyResult){ .old_value = f->stable_writes, .new_value = f->stable_writes };
        r = history_load(e->runtime_dir, f->name, f->diskseq, &h);
        if (r == -ENOENT)
                return fail(ret, 0,
                            strdup_printf("%s: no history of its flag: nothing to restore", f->name));
        if (r < 0)
                return fail(ret, r,
                            strdup_printf("%s: cannot read its history in %s/history: %s", f->name,
                                          e->runtime_dir, strerror(-r)));
        for (size_t i = 0; i < h.n_changes; i++)
                ours = ours || !streq(h.changes[i].writer, HISTORY_WRITER_OTHER);
        if (!ours || f->stable_writes == h.first)
                return fail(ret, 0,
                            strdup_printf("%s: stable writes %s, as the kernel %s them: nothing to restore",
                                          f->name, f->stable_writes ? "on" : "off",
                                          h.first_at_add ? "set" : "had when first seen, with"));
        FlagWrite w = {
                .disk = f->name,
                .diskseq = f->diskseq,
                .devnum = f->devnum,
                .need = d->class.need,
                .value = h.first,
                .writer = "restore",
                .need_of = engine_need_of,
                .userdata = e,
        };
        r = flag_write(e->sysfs_root, e->runtime_dir, &w, &now, &reason);
        if (r == -ENOMEM)
                return r;
        if (r == -EPERM)
                return fail(
                        ret, r,
                        strdup_printf("%s: left on, not restored to the kernel's 0: %s", f->name, reason));
        if (r < 0)
                return fail(ret, r, TAKE_PTR(reason));
        ret->changed = now != f->stable_writes;
        ret->new_value = now;
        log_info("%s: stable writes %s -> %s: restored to the kernel's own value.", f->name,
                 f->stable_writes ? "on" : "off", now ? "on" : "off");
        f->stable_writes = now;
        return fail(ret, 0,
                    strdup_printf("%s: stable writes restored to %s, the kernel's own value", f->name,
                                  now ? "on" : "off"));
}
