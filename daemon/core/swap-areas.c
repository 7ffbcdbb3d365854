/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Active swap areas and what each took at swapon (swap-areas.h). */
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "remount-check.h"
#include "swap-areas.h"
#include "util.h"

static void swap_area_done(SwapArea *a) {
        free(a->path);
        free(a->disk);
}

void swap_areas_done(SwapAreas *a) {
        for (size_t i = 0; i < a->n; i++)
                swap_area_done(&a->items[i]);
        free(a->items);
        *a = (SwapAreas){};
}

/* Appends *a (taken over). Returns 0 or -ENOMEM (a freed). */
static int swap_areas_add(SwapAreas *set, SwapArea *a) {
        SwapArea *items = realloc(set->items, sizeof(SwapArea) * (set->n + 1));
        if (!items) {
                swap_area_done(a);
                return -ENOMEM;
        }
        set->items = items;
        items[set->n++] = *a;
        *a = (SwapArea){};
        return 0;
}

int swap_areas_parse(const char *text, SwapAreas *ret) {
        _cleanup_(swap_areas_done) SwapAreas set = {};

        for (const char *line = text; line && *line;) {
                const char *end = strchrnul(line, '\n');
                size_t n = strcspn(line, " \t\n");
                const char *type = line + n + strspn(line + n, " \t");

                if (n > 0 && line[0] == '/') {
                        SwapArea a = { .path = remount_unescape(line, n), .file = strneq(type, "file", 4) };
                        if (!a.path || swap_areas_add(&set, &a) < 0)
                                return -ENOMEM;
                }
                line = *end ? end + 1 : NULL;
        }
        *ret = set;
        set = (SwapAreas){};
        return 0;
}

int swap_area_resolve(SwapArea *a, dev_t (*fs_source)(dev_t devnum, void *userdata), void *userdata) {
        struct stat st;

        if (stat(a->path, &st) < 0)
                return -errno;
        if (S_ISBLK(st.st_mode)) {
                a->devnum = st.st_rdev;
                a->ino = 0;
                return 0;
        }
        a->ino = (uint64_t) st.st_ino;
        a->devnum = major(st.st_dev) == 0 && fs_source ? fs_source(st.st_dev, userdata) : st.st_dev;
        return 0;
}

const SwapArea *swap_areas_find(const SwapAreas *set, const SwapArea *a) {
        for (size_t i = 0; i < set->n; i++)
                if (streq(set->items[i].path, a->path) && set->items[i].devnum == a->devnum &&
                    set->items[i].ino == a->ino)
                        return &set->items[i];
        return NULL;
}

int swap_records_load(const char *dir, SwapAreas *ret) {
        _cleanup_(swap_areas_done) SwapAreas set = {};
        _cleanup_free_ char *path = path_join(dir, "swaps"), *text = NULL;
        int r;

        if (!path)
                return -ENOMEM;
        r = read_full_file(path, 1024 * 1024, &text, NULL);
        if (r == -ENOENT) {
                *ret = (SwapAreas){};
                return 0;
        }
        if (r < 0)
                return r;
        for (char *line = text, *next; line && *line; line = next) {
                char raw[4096], devnum[32], origin[32];
                uint64_t ino, since;
                int file, captured;
                SwapArea a = {};

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (sscanf(line, "%4095s %d %31s %" SCNu64 " %d %31s %" SCNu64, raw, &file, devnum, &ino,
                           &captured, origin, &since) != 7 ||
                    parse_devnum(devnum, &a.devnum) < 0 ||
                    (a.origin = effective_origin_from_string(origin)) < 0)
                        continue; /* malformed, or written by a newer version */
                a.path = remount_unescape(raw, strlen(raw));
                a.file = file == 1;
                a.ino = ino;
                a.captured = captured == 1;
                a.since_usec = since;
                if (!a.path || swap_areas_add(&set, &a) < 0)
                        return -ENOMEM;
        }
        *ret = set;
        set = (SwapAreas){};
        return 0;
}

int swap_records_save(const char *dir, const SwapAreas *a) {
        _cleanup_free_ char *path = path_join(dir, "swaps"), *buf = NULL;
        size_t size = 0;
        FILE *f;

        if (!path)
                return -ENOMEM;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < a->n; i++) {
                char devnum[32];
                fputs_escaped(a->items[i].path, f);
                fprintf(f, " %d %s %" PRIu64 " %d %s %" PRIu64 "\n", a->items[i].file,
                        format_devnum(a->items[i].devnum, devnum), a->items[i].ino, a->items[i].captured,
                        effective_origin_to_string(a->items[i].origin), a->items[i].since_usec);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        return write_file_atomic(path, buf, size, 0644);
}
