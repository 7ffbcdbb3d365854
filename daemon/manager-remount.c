/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Manager's side of the unmount + mount cycle: the Remounter's host and its requests. */
#include "log.h"
#include "manager-internal.h"
#include "util.h"

/* The Remounter's host (RemountHost): the Manager's side of the unmount + mount cycle. */

static void remount_disk_of(const EngineDevice *d, RemountDisk *ret) {
        *ret = (RemountDisk){
                .name = d->facts->name,
                .diskseq = d->facts->diskseq,
                .need = d->class.need,
                .forced = d->decision.forced,
                .managed = d->managed && d->decision.desired >= 0,
                .flag = d->facts->stable_writes,
                .reason = d->decision.reason,
        };
}

static int remount_host_find_disk(void *userdata, const char *name, RemountDisk *ret) {
        const EngineDevice *d = manager_find_device(userdata, name);

        if (!d)
                return -ENODEV;
        remount_disk_of(d, ret);
        return 0;
}

static int remount_host_apply(void *userdata, const char *disk, char **ret_message) {
        _cleanup_(apply_result_done) ApplyResult res = {};
        int r = manager_apply_device(userdata, disk, &res);

        *ret_message = TAKE_PTR(res.message);
        return r;
}

static void remount_host_mounted(void *userdata, int old_id, int new_id, const char *target, int effective) {
        Manager *m = userdata;
        int r;

        /* The tracker must observe the new mount anew, even when the kernel gave it the same id. */
        mount_tracker_forget(m->mounts, old_id, target);
        r = mount_tracker_refresh(m->mounts, &m->engine, NULL);
        if (r < 0)
                log_warning_errno(r, "Cannot read the mount table: %m");
        if (effective >= 0)
                (void) mount_tracker_set_effective(m->mounts, new_id, target, effective);
        mount_tracker_update_pending(m->mounts, &m->engine);
}

static void remount_host_flag_written(void *userdata, const char *disk, int flag) {
        Manager *m = userdata;

        /* The cycle's process wrote it: the next scan must not take it for somebody else's. */
        for (size_t i = 0; i < m->n_snapshots; i++)
                if (streq(m->snapshots[i].name, disk))
                        m->snapshots[i].flag = flag;
}

static void remount_host_finished(void *userdata, const RemountResult *result) {
        Manager *m = userdata;

        if (m->handler)
                m->handler(m,
                           &(ManagerEvent){ .type = MANAGER_REMOUNT_FINISHED,
                                            .device = result->disk,
                                            .remount = result },
                           m->handler_userdata);
}

static void remount_host_reconcile(void *userdata) {
        (void) manager_reconcile(userdata);
}

int manager_remount_new(Manager *m) {
        return remount_new(&(RemountHost){ .event = m->event,
                                           .engine = &m->engine,
                                           .mounts = m->mounts,
                                           .userdata = m,
                                           .find_disk = remount_host_find_disk,
                                           .apply = remount_host_apply,
                                           .mounted = remount_host_mounted,
                                           .flag_written = remount_host_flag_written,
                                           .finished = remount_host_finished,
                                           .reconcile = remount_host_reconcile },
                           &m->remount);
}

int manager_remount_device(Manager *m, const char *name, remount_done_t done, void *userdata) {
        const EngineDevice *d;
        RemountDisk disk;

        if (!device_name_is_valid(name))
                return -EINVAL;
        d = manager_find_device(m, name);
        if (!d || !m->remount)
                return -ENODEV;
        remount_disk_of(d, &disk);
        return remount_request(m->remount, &disk, done, userdata);
}
