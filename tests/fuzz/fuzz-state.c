/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The parsers of the daemon's state files in the runtime directory (what survives a
 * kill -9 and is read at the next start): the input is split at the first two NUL bytes
 * into runtime_dir/overrides, runtime_dir/mounts and runtime_dir/history/loop0. What
 * loads saves and loads again to the same set. */

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "history.h"
#include "log.h"
#include "overrides.h"
#include "state.h"
#include "util.h"

static char *dir;

static void put(const char *name, const uint8_t *data, size_t len) {
        _cleanup_free_ char *p = path_join(dir, name);
        int fd;

        if (!p)
                abort();
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                abort();
        if (len > 0 && write(fd, data, len) != (ssize_t) len)
                abort();
        close(fd);
}

static void check_overrides_equal(const RuntimeOverrides *a, const RuntimeOverrides *b) {
        FUZZ_ASSERT(a->n == b->n);
        for (size_t i = 0; i < a->n; i++) {
                const RuntimeOverride *x = &a->items[i], *o = NULL;
                for (size_t j = 0; !o && j < b->n; j++)
                        if (b->items[j].diskseq == x->diskseq && streq(b->items[j].disk, x->disk))
                                o = &b->items[j];
                FUZZ_ASSERT(o && o->setting == x->setting && o->force == x->force);
                FUZZ_ASSERT(x->diskseq == 0 || runtime_overrides_find(b, x->diskseq) == o);
        }
}

static void check_records_equal(const MountRecords *a, const MountRecords *b) {
        FUZZ_ASSERT(a->n == b->n);
        for (size_t i = 0; i < a->n; i++) {
                const MountRecord *x = &a->items[i], *y = &b->items[i];
                FUZZ_ASSERT(x->id == y->id && x->devnum == y->devnum &&
                            x->source_devnum == y->source_devnum);
                FUZZ_ASSERT(x->effective == y->effective && x->origin == y->origin);
                FUZZ_ASSERT(x->since_usec == y->since_usec && x->unique_id == y->unique_id &&
                            x->mntns == y->mntns);
                FUZZ_ASSERT(streq(x->fstype, y->fstype) && streq(x->target, y->target));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(runtime_overrides_done) RuntimeOverrides o = {}, o2 = {};
        _cleanup_(mount_records_done) MountRecords m = {}, m2 = {};
        const uint8_t *a = data, *b, *c;
        size_t la, lb, lc;

        fuzz_check_escaping(data, size);

        if (size > 256 * 1024)
                return 0;
        if (!dir) {
                char tmpl[] = "/dev/shm/fuzz-state-XXXXXX", tmpl2[] = "/tmp/fuzz-state-XXXXXX";
                dir = mkdtemp(tmpl) ? strdup(tmpl) : mkdtemp(tmpl2) ? strdup(tmpl2) : NULL;
                _cleanup_free_ char *sub = dir ? path_join(dir, "history") : NULL;
                if (!sub || mkdir_p(sub, 0755) < 0)
                        abort();
                log_set_max_level(LOG_CRIT); /* malformed lines are logged as warnings */
        }
        b = memchr(a, '\0', size);
        la = b ? (size_t) (b - a) : size;
        b = b ? b + 1 : a + size;
        c = memchr(b, '\0', (size_t) (a + size - b));
        lb = c ? (size_t) (c - b) : (size_t) (a + size - b);
        c = c ? c + 1 : a + size;
        lc = (size_t) (a + size - c);
        put("overrides", a, la);
        put("mounts", b, lb);
        put("history/loop0", c, lc);

        FUZZ_ASSERT(state_load_overrides(dir, &o) == 0);
        for (size_t i = 0; i < o.n; i++) {
                FUZZ_ASSERT(device_name_is_valid(o.items[i].disk));
                FUZZ_ASSERT(o.items[i].setting >= 0 && o.items[i].setting < _SETTING_MAX);
        }
        FUZZ_ASSERT(state_save_overrides(dir, &o) == 0);
        FUZZ_ASSERT(state_load_overrides(dir, &o2) == 0);
        check_overrides_equal(&o, &o2);
        check_overrides_equal(&o2, &o);

        FUZZ_ASSERT(state_load_mount_records(dir, &m) == 0);
        FUZZ_ASSERT(state_save_mount_records(dir, &m) == 0);
        FUZZ_ASSERT(state_load_mount_records(dir, &m2) == 0);
        check_records_equal(&m, &m2);

        _cleanup_(history_done) FlagHistory h = {};
        int r = history_load(dir, "loop0", 42, &h);
        FUZZ_ASSERT(r == 0 || r == -ENOENT || r == -EFBIG);
        if (r == 0) {
                /* What loads formats to text that parses to the same history. */
                _cleanup_(history_done) FlagHistory again = {};
                _cleanup_free_ char *text = history_format(&h), *text2 = NULL;
                FUZZ_ASSERT(text && history_parse(text, &again) == 0);
                text2 = history_format(&again);
                FUZZ_ASSERT(text2 && streq(text, text2));
                FUZZ_ASSERT(h.diskseq == 42 && streq(h.disk, "loop0") && (h.first == 0 || h.first == 1));
        }
        FUZZ_ASSERT(history_load(dir, "loop0", 0, &h) == -ENOENT);
        return 0;
}
