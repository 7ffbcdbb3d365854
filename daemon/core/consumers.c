/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What is in force for every consumer of a disk (consumers.h). */
#include <libmount/libmount.h>
#include <time.h>

#include "consumers.h"
#include "history.h"
#include "sysfs.h"
#include "util.h"

static const char *const consumer_kind_table[_CONSUMER_KIND_MAX] = {
        [CONSUMER_PAGE_CACHE] = "page-cache",
        [CONSUMER_FILESYSTEM] = "filesystem",
        [CONSUMER_SWAP] = "swap",
        [CONSUMER_HOLDER] = "holder",
};

DEFINE_STRING_TABLE_LOOKUP(consumer_kind, ConsumerKind);

static const char *const capture_origin_table[_CAPTURE_ORIGIN_MAX] = {
        [CAPTURE_OBSERVED] = "observed", [CAPTURE_HISTORY] = "history", [CAPTURE_ASSUMED] = "assumed",
        [CAPTURE_KERNEL] = "kernel",     [CAPTURE_OWN] = "filesystem",  [CAPTURE_UNKNOWN] = "unknown",
};

DEFINE_STRING_TABLE_LOOKUP(capture_origin, CaptureOrigin);

const char *captured_to_string(int captured) {
        return captured < 0 ? "unknown" : captured ? "on" : "off";
}

PageCacheCapture page_cache_capture(unsigned kernel) {
        if (kernel < KERNEL_VERSION(5, 10, 0))
                return PAGE_CACHE_EACH_STORE;
        /* "block: update the stable_writes flag in bdev_add" (6.7-rc3), taken by 6.6.4 and 6.1.72
         * ("Fixes: 1cb039f3dc16", the 5.10 change that moved the flag to the superblock). */
        if (kernel >= KERNEL_VERSION(6, 7, 0) ||
            (kernel >= KERNEL_VERSION(6, 6, 4) && kernel < KERNEL_VERSION(6, 7, 0)) ||
            (kernel >= KERNEL_VERSION(6, 1, 72) && kernel < KERNEL_VERSION(6, 2, 0)))
                return PAGE_CACHE_AT_ADD;
        return PAGE_CACHE_NEVER;
}

static bool optstr_has(const char *optstr, const char *name) {
        return optstr && mnt_optstr_get_option(optstr, name, NULL, NULL) == 0;
}

const char *filesystem_own_reason(const char *fstype, const char *options) {
        if (streq(fstype ?: "", "nfs") || streq(fstype ?: "", "nfs4"))
                return "NFS keeps pages stable during writeback on every mount";
        if (streq(fstype ?: "", "btrfs") && !optstr_has(options, "nodatasum") &&
            !optstr_has(options, "nodatacow"))
                return "btrfs keeps checksummed file data stable itself";
        return NULL;
}

bool disk_in_force_now(const Engine *e, const DeviceFacts *f) {
        _cleanup_free_ char *attr = strdup_printf("block/%s/queue/stable_writes", f->name);
        DeviceFacts now = *f;
        long long v;

        if (attr && sysfs_read_int(e->sysfs_root, attr, &v) >= 0 && (v == 0 || v == 1))
                now.stable_writes = (int) v;
        return stable_writes_in_force(&now, e->kernel);
}

bool disk_wants_shadows(const EngineDevice *d, const DeviceConsumers *c) {
        if (d->class.need == NEED_NONE)
                return false;
        if (!d->class.in_force)
                return true;
        for (size_t i = 0; c && i < c->n; i++)
                if (!c->items[i].in_force)
                        return true;
        return false;
}

void consumer_done(Consumer *c) {
        free(c->name);
        free(c->what);
        free(c->note);
}

/* Frees a consumer whose name, type or note could not be made. Returns 0 or -ENOMEM. */
static int finish(Consumer *c) {
        if (c->name && c->note && c->what)
                return 0;
        consumer_done(c);
        *c = (Consumer){};
        return -ENOMEM;
}

void device_consumers_done(DeviceConsumers *c) {
        for (size_t i = 0; i < c->n; i++)
                consumer_done(&c->items[i]);
        free(c->items);
        *c = (DeviceConsumers){};
}

/* "2026-12-06 14:30:01" (local time) of a CLOCK_REALTIME in usec, "?" for 0. */
static const char *format_when(uint64_t usec, char buf[static 32]) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;

        if (usec == 0 || !localtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                return "?";
        return buf;
}

/* The need of d and its first reason, for a hazard's sentence. */
static char *need_text(const EngineDevice *d) {
        return strdup_printf("need %s: %s", need_to_string(d->class.need),
                             d->class.reasons ? d->class.reasons[0] : "no reason recorded");
}

/* What the flag value v means for a consumer taking it: the profile counts on 6.11+. */
static int in_force_with(const EngineDevice *d, int v) {
        return v == 1 || d->class.integrity_enforced ? 1 : 0;
}

/* " (set to 1 at 14:30:01 by udev-applier)": the history's later changes, or "". */
static char *history_moves(const FlagHistory *h) {
        char when[32];

        if (!h || h->n_changes == 0)
                return strdup("");
        const FlagChange *last = &h->changes[h->n_changes - 1];
        if (h->n_changes == 1)
                return strdup_printf("; set to %d at %s by %s", last->value, format_when(last->usec, when),
                                     last->writer);
        return strdup_printf("; changed %zu times since, last to %d at %s by %s", h->n_changes, last->value,
                             format_when(last->usec, when), last->writer);
}

/* What the page cache of the disk took (c->captured, c->origin, c->since_usec) and why, as a
 * clause for its note (*ret_clause). Returns 0 or -ENOMEM. */
static int page_cache_capture_of(const Engine *e, const EngineDevice *d, Consumer *c, char **ret_clause) {
        const DeviceFacts *f = d->facts;
        const FlagHistory *h = f->history;
        _cleanup_free_ char *moves = history_moves(h);
        char when[32];

        if (!moves)
                return -ENOMEM;
        c->origin = CAPTURE_KERNEL;
        switch (page_cache_capture(e->kernel)) {
        case PAGE_CACHE_EACH_STORE:
                c->captured = d->class.in_force;
                *ret_clause =
                        strdup_printf("it follows the disk's flag at every store on this kernel (%u.%u.%u)",
                                      e->kernel >> 16, (e->kernel >> 8) & 0xff, e->kernel & 0xff);
                return *ret_clause ? 0 : -ENOMEM;
        case PAGE_CACHE_NEVER:
                c->captured = 0;
                *ret_clause = strdup_printf(
                        "on this kernel (%u.%u.%u) the page cache of a block device never waits "
                        "for writeback before a store; 6.7, 6.6.4 and 6.1.72 take the flag at "
                        "the disk's add",
                        e->kernel >> 16, (e->kernel >> 8) & 0xff, e->kernel & 0xff);
                return *ret_clause ? 0 : -ENOMEM;
        case PAGE_CACHE_AT_ADD:
                break;
        }
        if (d->class.integrity_enforced) {
                c->captured = 1;
                *ret_clause = strdup_printf(
                        "its checksum integrity profile (%s) keeps pages stable whatever the flag",
                        f->integrity_format);
        } else if (h && h->first_at_add) {
                c->origin = CAPTURE_HISTORY;
                c->captured = in_force_with(d, h->first);
                c->since_usec = h->first_usec;
                *ret_clause = strdup_printf("the kernel's flag was %d at its add (%s, seen by %s)%s",
                                            h->first, format_when(h->first_usec, when), h->first_by, moves);
        } else if (f->kind == DEVICE_KIND_LOOP) {
                c->captured = 0;
                *ret_clause =
                        strdup("loop_add() creates a loop device without stable writes, and it keeps that "
                               "page cache across every attachment");
        } else if (f->kind == DEVICE_KIND_ZRAM) {
                c->captured = 1;
                *ret_clause = strdup("zram_add() sets stable writes before it adds the disk");
        } else if (h) {
                c->origin = CAPTURE_ASSUMED;
                c->captured = in_force_with(d, h->first);
                *ret_clause =
                        strdup_printf("assumed from its flag when first seen (%d at %s by %s): the disk was "
                                      "added before%s",
                                      h->first, format_when(h->first_usec, when), h->first_by, moves);
        } else {
                c->origin = CAPTURE_UNKNOWN;
                c->captured = -1;
                *ret_clause =
                        strdup_printf("no record of the flag at the disk's add (%s)",
                                      f->diskseq == 0 ? "the kernel gives it no diskseq"
                                                      : "neither the udev rule nor the daemon recorded it");
        }
        return *ret_clause ? 0 : -ENOMEM;
}

/* What helps a page cache of d that runs without stable writes. */
static const char *page_cache_help(const Engine *e, const EngineDevice *d) {
        if (page_cache_capture(e->kernel) == PAGE_CACHE_NEVER)
                return "writes with O_DIRECT, which bypass the page cache; a filesystem or a device-mapper "
                       "mapping made on it, which takes the flag; kernel 6.7, 6.6.4, 6.1.72 or later";
        return d->class.in_force
                       ? "writes with O_DIRECT, which bypass the page cache; a filesystem or a "
                         "device-mapper "
                         "mapping made on it now, which takes the flag as it is now (on); a kernel that "
                         "sets "
                         "the flag when it adds the disk"
                       : "writes with O_DIRECT, which bypass the page cache; a filesystem or a "
                         "device-mapper "
                         "mapping made on it once its flag is on (stablepagesd apply turns it on); a kernel "
                         "that sets the flag when it adds the disk";
}

/* The page cache of d as a consumer. Returns 0 or -ENOMEM. */
static int add_page_cache(const Engine *e, const EngineDevice *d, Consumer *c) {
        const DeviceFacts *f = d->facts;
        _cleanup_free_ char *why = NULL, *need = NULL;

        *c = (Consumer){ .kind = CONSUMER_PAGE_CACHE,
                         .name = strdup_printf("/dev/%s", f->name),
                         .what = strdup("") };
        if (!c->name || page_cache_capture_of(e, d, c, &why) < 0)
                return finish(c);
        c->in_force = c->captured == 1;
        c->hazard = c->captured == 0 && need_is_protected(d->class.need);
        if (!c->hazard)
                c->note = strdup_printf("%s: %s", captured_to_string(c->captured), why);
        else if (!(need = need_text(d)))
                return finish(c);
        else if (c->origin == CAPTURE_KERNEL && page_cache_capture(e->kernel) == PAGE_CACHE_NEVER)
                c->note = strdup_printf(
                        "raw buffered writes to /dev/%s never wait for writeback on this kernel "
                        "(%u.%u.%u), but %s needs stable writes (%s). What helps: %s.",
                        f->name, e->kernel >> 16, (e->kernel >> 8) & 0xff, e->kernel & 0xff, f->name, need,
                        page_cache_help(e, d));
        else
                c->note = strdup_printf(
                        "raw buffered writes to /dev/%s go through a page cache that runs without "
                        "stable writes (%s), but %s needs them (%s). What helps: %s.",
                        f->name, why, f->name, need, page_cache_help(e, d));
        return finish(c);
}

/* How a consumer that started before it was seen (origin assumed) is dated by the disk's
 * history: a flag that never moved since the disk's add says what it took whenever it started. */
static void date_by_history(const EngineDevice *d, int *captured, CaptureOrigin *origin, const char **how) {
        const FlagHistory *h = d->facts->history;

        *origin = CAPTURE_ASSUMED;
        *how = !h ? "no history of the flag tells when it took it"
               : h->n_changes > 0
                       ? "the flag moved since the disk was first seen: it may have taken another value"
               : !h->first_at_add
                       ? "the flag has not moved since it was first seen, but the disk was added before"
                       : NULL;
        if (*how)
                return;
        *origin = CAPTURE_HISTORY;
        *captured = in_force_with(d, h->first);
        *how = "the flag has not moved since the disk's add: it took that whenever it started";
}

static int add_filesystem(const EngineDevice *d, const ConsumerMount *m, Consumer *c) {
        _cleanup_free_ char *need = NULL;
        const char *how = NULL;
        char when[32];

        *c = (Consumer){
                .kind = CONSUMER_FILESYSTEM,
                .name = strdup(m->target),
                .what = strdup(m->fstype ?: ""),
                .captured = m->effective,
                .since_usec = m->since_usec,
                .protected = m->own_reason || m->read_only,
        };
        if (!c->name)
                return finish(c);
        if (m->origin == EFFECTIVE_FILESYSTEM)
                c->origin = CAPTURE_OWN;
        else if (m->origin == EFFECTIVE_OBSERVED)
                c->origin = CAPTURE_OBSERVED;
        else
                date_by_history(d, &c->captured, &c->origin, &how);
        c->in_force = c->captured == 1 || m->own_reason;
        c->hazard = !c->captured && !c->protected && need_is_protected(d->class.need);
        if (c->hazard) {
                need = need_text(d);
                c->note = need ? strdup_printf(
                                         "%s (%s on %s) runs without stable writes, but %s needs them (%s): "
                                         "unmount and mount it again.",
                                         m->target, m->fstype, m->disk, m->disk, need)
                               : NULL;
        } else if (m->own_reason)
                c->note = strdup_printf("%s at mount; %s", captured_to_string(c->captured), m->own_reason);
        else
                c->note = strdup_printf("%s, taken at mount (%s %s%s%s)%s", captured_to_string(c->captured),
                                        c->origin == CAPTURE_OBSERVED ? "seen mounted at" : "first seen at",
                                        format_when(m->since_usec, when), how ? ": " : "", how ?: "",
                                        m->read_only ? "; read-only: nothing writes to it" : "");
        return finish(c);
}

static int add_swap(const EngineDevice *d, const ConsumerSwap *s, Consumer *c) {
        _cleanup_free_ char *need = NULL;
        const char *how = NULL;
        char when[32];

        *c = (Consumer){
                .kind = CONSUMER_SWAP,
                .name = strdup(s->path),
                .what = strdup(s->file ? "file" : "partition"),
                .captured = s->captured,
                .since_usec = s->since_usec,
                .origin = CAPTURE_OBSERVED,
        };
        if (!c->name)
                return finish(c);
        if (s->origin != EFFECTIVE_OBSERVED)
                date_by_history(d, &c->captured, &c->origin, &how);
        c->in_force = c->captured == 1;
        c->hazard = !c->captured && need_is_protected(d->class.need);
        if (c->hazard) {
                need = need_text(d);
                c->note = need ? strdup_printf(
                                         "swap area %s on %s runs without stable writes (taken at swapon), "
                                         "but %s needs them (%s): swapoff and swapon it again.",
                                         s->path, s->disk, s->disk, need)
                               : NULL;
        } else
                c->note = strdup_printf("%s, taken at swapon (%s %s%s%s)", captured_to_string(c->captured),
                                        c->origin == CAPTURE_OBSERVED ? "seen active at" : "first seen at",
                                        format_when(s->since_usec, when), how ? ": " : "", how ?: "");
        return finish(c);
}

/* A disk stacked on this one: what it took from below when it was added (its own page cache's
 * capture, consumers.h), and its flag now; its own consumers are its own. */
static int add_holder(const Engine *e, const char *name, Consumer *c) {
        const EngineDevice *h = engine_find_disk(e, name);
        _cleanup_free_ char *why = NULL;

        *c = (Consumer){
                .kind = CONSUMER_HOLDER,
                .name = strdup(name),
                .what = strdup(""),
                .captured = -1,
                .origin = CAPTURE_UNKNOWN,
        };
        if (!c->name || !c->what)
                return finish(c);
        if (!h) {
                c->note = strdup_printf("not known yet: stablepagesctl explain %s", name);
                return finish(c);
        }
        if (page_cache_capture_of(e, h, c, &why) < 0)
                return finish(c);
        c->in_force = c->captured == 1;
        c->note =
                strdup_printf("%s at its own add (%s); its flag now %s, what a consumer of it starting now "
                              "takes; its own consumers: stablepagesctl explain %s",
                              captured_to_string(c->captured), why,
                              kernel_state_to_string(h->facts->stable_writes, h->class.in_force), name);
        return finish(c);
}

int device_consumers_add(DeviceConsumers *l, Consumer *c) {
        Consumer *items = realloc(l->items, sizeof(Consumer) * (l->n + 1));
        if (!items) {
                consumer_done(c);
                return -ENOMEM;
        }
        l->items = items;
        items[l->n++] = *c;
        l->hazards += c->hazard;
        *c = (Consumer){};
        return 0;
}

int consumers_of(const Engine *e, const EngineDevice *d, const ConsumerInputs *in, DeviceConsumers *ret) {
        _cleanup_(device_consumers_done) DeviceConsumers l = {};
        const DeviceFacts *f = d->facts;
        Consumer c;
        int r;

        if (!f->hidden && f->stable_writes != ATTR_ABSENT &&
            ((r = add_page_cache(e, d, &c)) < 0 || (r = device_consumers_add(&l, &c)) < 0))
                return r;
        for (size_t i = 0; in && i < in->n_mounts; i++)
                if (in->mounts[i].disk && streq(in->mounts[i].disk, f->name) &&
                    ((r = add_filesystem(d, &in->mounts[i], &c)) < 0 ||
                     (r = device_consumers_add(&l, &c)) < 0))
                        return r;
        for (size_t i = 0; in && i < in->n_swaps; i++)
                if (in->swaps[i].disk && streq(in->swaps[i].disk, f->name) &&
                    ((r = add_swap(d, &in->swaps[i], &c)) < 0 || (r = device_consumers_add(&l, &c)) < 0))
                        return r;
        STRV_FOREACH (h, f->holders)
                if ((r = add_holder(e, *h, &c)) < 0 || (r = device_consumers_add(&l, &c)) < 0)
                        return r;
        *ret = l;
        l = (DeviceConsumers){};
        return 0;
}

void consumers_json(const DeviceConsumers *c, JsonWriter *w) {
        json_key(w, "consumers");
        json_array_begin(w);
        for (size_t i = 0; c && i < c->n; i++) {
                const Consumer *x = &c->items[i];
                json_object_begin(w);
                json_member_string(w, "kind", consumer_kind_to_string(x->kind));
                json_member_string(w, "name", x->name);
                json_member_string(w, "type", isempty(x->what) ? NULL : x->what);
                json_member_string(w, "captured", captured_to_string(x->captured));
                json_key(w, "in_force");
                if (x->captured < 0 && !x->protected)
                        json_null(w);
                else
                        json_bool(w, x->in_force);
                json_member_string(w, "origin", capture_origin_to_string(x->origin));
                json_key(w, "since_usec");
                if (x->since_usec > 0)
                        json_uint(w, x->since_usec);
                else
                        json_null(w);
                json_member_bool(w, "protected", x->protected);
                json_member_bool(w, "hazard", x->hazard);
                json_member_string(w, "note", x->note);
                json_object_end(w);
        }
        json_array_end(w);
}

char *consumers_summary(const DeviceConsumers *c) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        bool any = false;

        if (!f)
                return NULL;
        for (size_t i = 0; c && i < c->n; i++) {
                const Consumer *x = &c->items[i];
                if (x->kind != CONSUMER_PAGE_CACHE && x->kind != CONSUMER_SWAP)
                        continue;
                fprintf(f, "%s%s:%s%s", any ? " " : "", x->kind == CONSUMER_PAGE_CACHE ? "cache" : "swap",
                        x->captured < 0 ? "?"
                        : x->captured   ? "on"
                                        : "off",
                        x->hazard ? "!" : "");
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
