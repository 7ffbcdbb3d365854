/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dm-table.c on hostile input: the input's lines are tried as `dmsetup table` lines (what the
 * kernel prints for DM_TABLE_STATUS) and as the "KEY=value" udev properties the daemon reads
 * from the udev database, which any root process can write. Invariants: what the lines parse
 * to survives the round trip through the properties unchanged, and no property value holds a
 * space, a comma or a newline inside a target's field. */

#include "dm-table.h"
#include "fuzz.h"
#include "util.h"

static void check_round_trip(const DmTable *t) {
        _cleanup_strv_free_ char **props = NULL;
        _cleanup_(dm_table_done) DmTable back = {};

        if (dm_table_to_properties(t, &props) < 0)
                return; /* ENOMEM */
        STRV_FOREACH (p, props)
                FUZZ_ASSERT(!strchr(*p, '\n'));
        FUZZ_ASSERT(dm_table_from_properties(props, &back) == 0);
        FUZZ_ASSERT(back.count == t->count && back.n == t->n);
        for (size_t i = 0; i < t->n; i++) {
                _cleanup_free_ char *a = dm_target_to_string(&t->targets[i]);
                _cleanup_free_ char *b = dm_target_to_string(&back.targets[i]);
                FUZZ_ASSERT(a && b && streq(a, b));
                FUZZ_ASSERT(!strchr(a, ' '));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = NULL;
        _cleanup_strv_free_ char **lines = NULL;
        char *save = NULL;
        size_t n = 0;

        fuzz_check_escaping(data, size);

        if (size > 64 * 1024)
                return 0;
        s = fuzz_string(data, size);
        for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                if (strv_extend_with_size(&lines, &n, l) < 0)
                        return 0;

        DmTable t = {};
        if (dm_table_from_lines(lines, &t) == 0) {
                FUZZ_ASSERT(t.count == strv_length(lines) && t.n <= t.count);
                check_round_trip(&t);
        }
        dm_table_done(&t);

        int r = dm_table_from_properties(lines, &t);
        FUZZ_ASSERT(r == 0 || r == -ENODATA || r == -EINVAL || r == -ENOMEM);
        if (r == 0) {
                FUZZ_ASSERT(t.n <= t.count && (t.count == 0) == (t.n == 0));
                check_round_trip(&t);
        }
        dm_table_done(&t);
        return 0;
}
