/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Mounted filesystems and the stable-writes state each one runs with (mounts.h): the mount
 * table followed, each mount's effective state noted and kept across restarts. */
#include <fcntl.h>
#include <libmount/libmount.h>
#include <sys/stat.h>

#include "consumers-read.h"
#include "log.h"
#include "mounts.h"
#include "util.h"

static const char *const REASON_NEXT_MOUNT = "takes effect at next mount";
static const char *const REASON_IN_EFFECT = "in effect";
static const char *const REASON_READ_ONLY = "read-only: nothing writes to it";
static const char *const REASON_NO_DEVICE = "its device is gone";

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U
#endif

static void tracked_mount_done(TrackedMount *m) {
        free(m->disk);
        free(m->target);
        free(m->fstype);
        free(m->source);
}

static void tracked_mounts_free(TrackedMount *mounts, size_t n) {
        for (size_t i = 0; i < n; i++)
                tracked_mount_done(&mounts[i]);
        free(mounts);
}

static void libmnt_tablep(struct libmnt_table **t) {
        mnt_unref_table(*t);
}

static void libmnt_iterp(struct libmnt_iter **i) {
        mnt_free_iter(*i);
}

static bool fstype_is_nfs(const char *fstype) {
        return streq(fstype, "nfs") || streq(fstype, "nfs4");
}

static bool optstr_has(const char *optstr, const char *name) {
        return optstr && mnt_optstr_get_option(optstr, name, NULL, NULL) == 0;
}

static int on_delay(sd_event_source *s, uint64_t usec, void *userdata) {
        MountTracker *t = userdata;
        int r;

        t->last_pass_usec = now_usec_monotonic();
        /* Changes from now on wake us again (mountinfo reports POLLPRI once per change
         * after each poll); the table read below shows the ones so far. */
        r = sd_event_source_set_enabled(t->io, SD_EVENT_ON);
        if (r < 0)
                log_error_errno(r, "Cannot re-enable the mount monitor: %m");
        t->handler(t, t->userdata);
        return 0;
}

static int on_mount_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        MountTracker *t = userdata;
        uint64_t now = now_usec_monotonic(), due = t->last_pass_usec + MOUNT_TRACKER_DELAY_USEC;
        int r;

        /* After a calm period, read the table at once. Otherwise stop listening and read it
         * once when the delay since the last read is over, whatever happens meanwhile. */
        if (now >= due)
                return on_delay(NULL, 0, t);

        r = sd_event_source_set_enabled(t->io, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Cannot pause the mount monitor: %m");
        if (t->delay) {
                r = sd_event_source_set_time_relative(t->delay, due - now);
                if (r >= 0)
                        r = sd_event_source_set_enabled(t->delay, SD_EVENT_ONESHOT);
        } else {
                r = sd_event_add_time_relative(sd_event_source_get_event(s), &t->delay, CLOCK_MONOTONIC,
                                               due - now, 1, on_delay, t);
                if (r >= 0)
                        (void) sd_event_source_set_description(t->delay, "mount-delay");
        }
        if (r < 0) {
                /* Better late than never: read it now. */
                log_warning_errno(r, "Cannot arm the mount delay timer, reading the table now: %m");
                return on_delay(NULL, 0, t);
        }
        return 0;
}

int mount_tracker_new(sd_event *e, const char *runtime_dir, mount_tracker_handler_t handler, void *userdata,
                      MountTracker **ret) {
        _cleanup_(mount_tracker_freep) MountTracker *t = NULL;
        int r;

        t = calloc(1, sizeof(MountTracker));
        if (!t)
                return -ENOMEM;
        t->fd = -EBADF;
        t->handler = handler;
        t->userdata = userdata;
        t->runtime_dir = strdup(runtime_dir);
        if (!t->runtime_dir)
                return -ENOMEM;

        /* The system's mount table, else (no access to PID 1) our own. */
        t->mountinfo = MOUNTINFO_SYSTEM;
        t->fd = open(t->mountinfo, O_RDONLY | O_CLOEXEC);
        if (t->fd < 0) {
                log_debug_errno(errno, "Cannot open %s, following our own mount namespace: %m",
                                t->mountinfo);
                t->mountinfo = "/proc/self/mountinfo";
                t->fd = open(t->mountinfo, O_RDONLY | O_CLOEXEC);
                if (t->fd < 0)
                        return -errno;
        }
        r = sd_event_add_io(e, &t->io, t->fd, EPOLLPRI, on_mount_event, t);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(t->io, "mount-monitor");

        struct stat st;
        if (stat("/proc/self/ns/mnt", &st) >= 0)
                t->mntns = (uint64_t) st.st_ino;

        r = state_load_mount_records(runtime_dir, &t->records);
        if (r < 0)
                log_warning_errno(r,
                                  "Cannot read %s/mounts, effective states of existing mounts "
                                  "will be assumed: %m",
                                  runtime_dir);
        *ret = TAKE_PTR(t);
        return 0;
}

MountTracker *mount_tracker_free(MountTracker *t) {
        if (!t)
                return NULL;
        sd_event_source_disable_unref(t->io);
        sd_event_source_disable_unref(t->delay);
        if (t->fd >= 0)
                close(t->fd);
        tracked_mounts_free(t->mounts, t->n);
        free(t->unresolved);
        mount_records_done(&t->records);
        free(t->runtime_dir);
        return mfree(t);
}

static bool same_unique_id(uint64_t a, uint64_t b) {
        return a == 0 || b == 0 || a == b; /* 0: unknown, trust the other fields */
}

static const TrackedMount *find_mount(const TrackedMount *mounts, size_t n, int id, dev_t devnum,
                                      uint64_t unique_id) {
        for (size_t i = 0; i < n; i++)
                if (mounts[i].id == id && mounts[i].devnum == devnum &&
                    same_unique_id(mounts[i].unique_id, unique_id))
                        return &mounts[i];
        return NULL;
}

static const TrackedMount *find_superblock(const TrackedMount *mounts, size_t n, dev_t devnum) {
        for (size_t i = 0; i < n; i++)
                if (mounts[i].devnum == devnum)
                        return &mounts[i];
        return NULL;
}

/* The record of an earlier run for this mount. Unique ids only compare within one mount
 * namespace: a restarted sandboxed service has a new one. */
static const MountRecord *find_record(const MountTracker *t, int id, dev_t devnum, const char *target,
                                      uint64_t unique_id) {
        for (size_t i = 0; i < t->records.n; i++) {
                const MountRecord *r = &t->records.items[i];
                if (r->id == id && r->devnum == devnum && streq(r->target, target) &&
                    (r->mntns != t->mntns || same_unique_id(r->unique_id, unique_id)))
                        return r;
        }
        return NULL;
}

static bool ids_contain(const int *ids, size_t n, int id) {
        for (size_t i = 0; i < n; i++)
                if (ids[i] == id)
                        return true;
        return false;
}

/* The kernel's unique id of the mount on target (6.8+), or 0. Only trusted when the path
 * leads to the mount with mountinfo id (not something mounted over it); the mount id is
 * compared rather than the device, which btrfs reports per subvolume. */
static uint64_t mount_unique_id(const char *target, int id) {
        const unsigned flags = AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT | AT_SYMLINK_NOFOLLOW;
        struct statx stx;

        if (!target || statx(AT_FDCWD, target, flags, STATX_MNT_ID, &stx) < 0 ||
            !(stx.stx_mask & STATX_MNT_ID) || stx.stx_mnt_id != (uint64_t) id)
                return 0;
        if (statx(AT_FDCWD, target, flags, STATX_MNT_ID_UNIQUE, &stx) < 0 ||
            !(stx.stx_mask & STATX_MNT_ID_UNIQUE))
                return 0;
        return stx.stx_mnt_id;
}

/* Fills *m from fs; the effective state is the caller's business. */
static int tracked_mount_from_fs(struct libmnt_fs *fs, dev_t source_devnum, const char *disk,
                                 uint64_t unique_id, TrackedMount *m) {
        const char *fstype = mnt_fs_get_fstype(fs), *target = mnt_fs_get_target(fs),
                   *source = mnt_fs_get_source(fs);

        *m = (TrackedMount){
                .id = mnt_fs_get_id(fs),
                .unique_id = unique_id,
                .devnum = mnt_fs_get_devno(fs),
                .source_devnum = source_devnum,
                .read_only = optstr_has(mnt_fs_get_fs_options(fs), "ro"),
                .disk = disk ? strdup(disk) : NULL,
                .fstype = strdup(fstype ?: ""),
                .target = strdup(target ?: ""),
                .source = strdup(source ?: ""),
        };
        if ((disk && !m->disk) || !m->fstype || !m->target || !m->source) {
                tracked_mount_done(m);
                return -ENOMEM;
        }
        m->own_reason = filesystem_own_reason(m->fstype, mnt_fs_get_fs_options(fs));
        return 0;
}

static bool mount_sets_equal(const TrackedMount *a, size_t na, const TrackedMount *b, size_t nb) {
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++) {
                const TrackedMount *o = find_mount(b, nb, a[i].id, a[i].devnum, a[i].unique_id);
                if (!o || !streq(o->target, a[i].target))
                        return false;
        }
        return true;
}

static int save_records(MountTracker *t) {
        _cleanup_(mount_records_done) MountRecords records = {};
        int r;

        for (size_t i = 0; i < t->n; i++) {
                const TrackedMount *m = &t->mounts[i];
                MountRecord rec = {
                        .id = m->id,
                        .devnum = m->devnum,
                        .source_devnum = m->source_devnum,
                        .effective = m->effective,
                        .origin = m->origin,
                        .since_usec = m->since_usec,
                        .unique_id = m->unique_id,
                        .mntns = t->mntns,
                        .fstype = m->fstype,
                        .target = m->target,
                };
                r = mount_records_add(&records, &rec);
                if (r < 0)
                        return r;
        }
        return state_save_mount_records(t->runtime_dir, &records);
}

typedef struct Refresh {
        TrackedMount *next; /* the new set */
        size_t n;
        int *unresolved;
        size_t n_unresolved;
        unsigned new_unresolved;
        uint64_t now;
} Refresh;

static int cmp_mount_id(const void *a, const void *b) {
        const TrackedMount *x = a, *y = b;
        return (x->id > y->id) - (x->id < y->id);
}

/* Handles one entry of the mount table. Mounts whose state is known (seen before, NFS, or
 * on the first refresh an earlier run's record) are taken in the first pass, new ones in
 * the second, so that a new mount of a superblock that stays mounted elsewhere inherits
 * that mount's state, while a superblock that went away takes nothing with it. */
static int refresh_one(MountTracker *t, const Engine *e, struct libmnt_fs *fs, bool known_pass, Refresh *s) {
        bool nfs = fstype_is_nfs(mnt_fs_get_fstype(fs) ?: "");
        dev_t src = nfs ? 0 : mount_fs_source_devnum(fs), devnum = mnt_fs_get_devno(fs);
        int id = mnt_fs_get_id(fs), r;
        uint64_t unique_id = 0;
        const DeviceFacts *f = NULL;
        const TrackedMount *old = NULL;
        const MountRecord *rec = NULL;

        if (!nfs && src == 0)
                return 0; /* tmpfs, proc, overlay…: no device queue behind it */
        if (!nfs) {
                f = device_table_find_devnum(&e->table, src);
                if (!f) {
                        if (!known_pass)
                                return 0;
                        int *ids = realloc(s->unresolved, sizeof(int) * (s->n_unresolved + 1));
                        if (!ids)
                                return -ENOMEM;
                        s->unresolved = ids;
                        ids[s->n_unresolved++] = id;
                        if (!ids_contain(t->unresolved, t->n_unresolved, id))
                                s->new_unresolved++;
                        return 0;
                }
                unique_id = mount_unique_id(mnt_fs_get_target(fs), id);
                old = find_mount(t->mounts, t->n, id, devnum, unique_id);
                if (!old && !t->initialized)
                        rec = find_record(t, id, devnum, mnt_fs_get_target(fs) ?: "", unique_id);
        }
        if ((nfs || old || rec) != known_pass)
                return 0;

        TrackedMount *m = realloc(s->next, sizeof(TrackedMount) * (s->n + 1));
        if (!m)
                return -ENOMEM;
        s->next = m;
        m = &m[s->n];
        r = tracked_mount_from_fs(fs, src, f ? f->name : NULL, unique_id, m);
        if (r < 0)
                return r;
        s->n++;

        if (nfs) {
                old = find_mount(t->mounts, t->n, id, devnum, 0);
                m->effective = true;
                m->origin = EFFECTIVE_FILESYSTEM;
                m->since_usec = old ? old->since_usec : s->now;
        } else if (old) {
                /* Known: only the target and read-only state can have changed. */
                m->effective = old->effective;
                m->origin = old->origin;
                m->since_usec = old->since_usec;
        } else if (rec) {
                m->effective = rec->effective;
                m->origin = rec->origin;
                m->since_usec = rec->since_usec;
        } else if ((old = find_superblock(s->next, s->n - 1, devnum))) {
                /* Another mount of a superblock that is mounted already (bind mount, second
                 * mount of the same device): it shares the superblock's state. */
                m->effective = old->effective;
                m->origin = old->origin;
                m->since_usec = old->since_usec;
        } else {
                m->effective = disk_in_force_now(e, f);
                m->origin = t->initialized ? EFFECTIVE_OBSERVED : EFFECTIVE_ASSUMED;
                m->since_usec = s->now;
                if (t->initialized)
                        log_debug("%s (%s on %s) mounted with stable writes %s.", m->target, m->fstype,
                                  m->disk, m->effective ? "on" : "off");
        }
        return 0;
}

int mount_tracker_refresh(MountTracker *t, const Engine *e, unsigned *ret_unresolved) {
        _cleanup_(libmnt_tablep) struct libmnt_table *table = NULL;
        _cleanup_(libmnt_iterp) struct libmnt_iter *iter = NULL;
        Refresh s = { .now = now_usec_realtime() };
        struct libmnt_fs *fs;
        int r = 0;

        table = mnt_new_table_from_file(t->mountinfo);
        if (!table)
                return errno > 0 ? -errno : -EIO;
        iter = mnt_new_iter(MNT_ITER_FORWARD);
        if (!iter)
                return -ENOMEM;

        for (int pass = 0; pass < 2 && r >= 0; pass++) {
                mnt_reset_iter(iter, MNT_ITER_FORWARD);
                while ((r = mnt_table_next_fs(table, iter, &fs)) == 0)
                        if ((r = refresh_one(t, e, fs, pass == 0, &s)) < 0)
                                break;
        }
        if (r < 0) {
                tracked_mounts_free(s.next, s.n);
                free(s.unresolved);
                return r;
        }
        if (s.n > 0)
                qsort(s.next, s.n, sizeof(TrackedMount), cmp_mount_id);

        bool changed = !t->initialized || !mount_sets_equal(s.next, s.n, t->mounts, t->n);
        tracked_mounts_free(t->mounts, t->n);
        t->mounts = s.next;
        t->n = s.n;
        free(t->unresolved);
        t->unresolved = s.unresolved;
        t->n_unresolved = s.n_unresolved;
        if (!t->initialized) {
                t->initialized = true;
                mount_records_done(&t->records);
        }
        if (changed) {
                r = save_records(t);
                if (r < 0)
                        log_error_errno(r, "Cannot save the effective state of mounts to %s/mounts: %m",
                                        t->runtime_dir);
        }
        if (ret_unresolved)
                *ret_unresolved = s.new_unresolved;
        return 0;
}

void mount_tracker_update_pending(MountTracker *t, const Engine *e) {
        for (size_t i = 0; i < t->n; i++) {
                TrackedMount *m = &t->mounts[i];
                const EngineDevice *d = m->disk ? engine_find_disk(e, m->disk) : NULL;

                m->pending = false;
                if (m->origin == EFFECTIVE_FILESYSTEM)
                        m->reason = m->own_reason;
                else if (m->read_only)
                        m->reason = REASON_READ_ONLY;
                else if (!d)
                        m->reason = REASON_NO_DEVICE;
                else {
                        /* Left alone (observe, unmanaged): the device's own state is the target. */
                        bool want = d->decision.desired >= 0 ? d->decision.desired == 1 : d->class.in_force;

                        if (want == m->effective)
                                m->reason = REASON_IN_EFFECT;
                        else if (!want && m->own_reason)
                                /* A new mount would still keep checksummed data stable. */
                                m->reason = m->own_reason;
                        else {
                                m->pending = true;
                                m->reason = REASON_NEXT_MOUNT;
                        }
                }
        }
}

void mount_tracker_forget(MountTracker *t, int id, const char *target) {
        for (size_t i = 0; i < t->n; i++)
                if (t->mounts[i].id == id && streq(t->mounts[i].target, target)) {
                        tracked_mount_done(&t->mounts[i]);
                        memmove(&t->mounts[i], &t->mounts[i + 1], sizeof(TrackedMount) * (t->n - i - 1));
                        t->n--;
                        return;
                }
}

int mount_tracker_set_effective(MountTracker *t, int id, const char *target, bool effective) {
        for (size_t i = 0; i < t->n; i++)
                if (t->mounts[i].id == id && streq(t->mounts[i].target, target)) {
                        TrackedMount *m = &t->mounts[i];
                        if (m->origin == EFFECTIVE_FILESYSTEM ||
                            (m->effective == effective && m->origin == EFFECTIVE_OBSERVED))
                                return 0;
                        m->effective = effective;
                        m->origin = EFFECTIVE_OBSERVED;
                        m->since_usec = now_usec_realtime();
                        return save_records(t);
                }
        return -ENOENT;
}

unsigned mount_tracker_count_pending(const MountTracker *t, const char *disk) {
        unsigned n = 0;
        for (size_t i = 0; i < t->n; i++)
                if (t->mounts[i].pending && (!disk || (t->mounts[i].disk && streq(t->mounts[i].disk, disk))))
                        n++;
        return n;
}

void tracked_mount_json(const TrackedMount *m, JsonWriter *w) {
        char buf[32];

        json_object_begin(w);
        json_key(w, "id");
        json_int(w, m->id);
        json_key(w, "target");
        json_string(w, m->target);
        json_key(w, "fstype");
        json_string(w, m->fstype);
        json_key(w, "source");
        json_string(w, m->source);
        json_key(w, "devnum");
        json_string(w, format_devnum(m->devnum, buf));
        json_key(w, "disk");
        json_string(w, m->disk);
        json_key(w, "read_only");
        json_bool(w, m->read_only);
        json_key(w, "effective");
        json_string(w, m->effective ? "on" : "off");
        json_key(w, "origin");
        json_string(w, effective_origin_to_string(m->origin));
        json_key(w, "since_usec");
        json_uint(w, m->since_usec);
        json_key(w, "pending");
        json_bool(w, m->pending);
        json_key(w, "reason");
        json_string(w, m->reason);
        json_key(w, "own_reason");
        json_string(w, m->own_reason);
        json_object_end(w);
}
