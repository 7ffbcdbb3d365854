/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The parsers of sysfs and kernel values: MAJ:MIN, integers, 0/1 flags, kernel releases,
 * booleans, device names. The input is one value (as read from an attribute). Whatever
 * parses formats back to text that parses to the same value. */

#include <limits.h>
#include <sys/sysmacros.h>

#include "fuzz.h"
#include "device.h"
#include "sysfs.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = NULL;
        char buf[64];
        long long v, w;
        unsigned k;
        dev_t d, d2;
        int r;

        fuzz_check_escaping(data, size);

        if (size > 1024)
                return 0;
        s = fuzz_string(data, size);

        r = parse_devnum(s, &d);
        FUZZ_ASSERT(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0) {
                FUZZ_ASSERT(major(d) <= 0xfff && minor(d) <= 0xfffff);
                FUZZ_ASSERT(parse_devnum(format_devnum(d, buf), &d2) == 0 && d2 == d);
        }

        r = parse_int_range(s, LLONG_MIN, LLONG_MAX, &v);
        FUZZ_ASSERT(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0) {
                snprintf(buf, sizeof buf, "%lld", v);
                FUZZ_ASSERT(parse_int_range(buf, LLONG_MIN, LLONG_MAX, &w) == 0 && w == v);
        }
        /* The 0/1 parser agrees with the range parser. */
        r = sysfs_parse_bool01(s);
        FUZZ_ASSERT(r == -EINVAL || r == 0 || r == 1);
        FUZZ_ASSERT(r == (parse_int_range(s, 0, 1, &w) == 0 ? (int) w : -EINVAL));
        r = parse_int_range(s, -5, 5, &w);
        FUZZ_ASSERT(r < 0 || (w >= -5 && w <= 5));

        r = parse_kernel_version(s, &k);
        FUZZ_ASSERT(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0)
                FUZZ_ASSERT(k <= KERNEL_VERSION(255, 255, 255));

        r = parse_boolean(s);
        FUZZ_ASSERT(r == 0 || r == 1 || r == -EINVAL);

        if (device_name_is_valid(s)) {
                FUZZ_ASSERT(strlen(s) >= 1 && strlen(s) <= 64);
                FUZZ_ASSERT(!strchr(s, '/') && !streq(s, ".") && !streq(s, ".."));
        }
        (void) integrity_format_is_checksum(s);
        return 0;
}
