/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The [Device MATCH] parser: the input is the text between "[Device " and "]". A match
 * that parses formats back to text that parses to the same match; one that does not
 * parse comes with a message. */

#include <sys/sysmacros.h>

#include "config.h"
#include "fuzz.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL, *error = NULL, *formatted = NULL, *again = NULL, *error2 = NULL;
        DeviceMatch m = {}, m2 = {};
        char *const props[] = { (char *) "ID_WWN=0x5000c500a1b2c3d4", (char *) "ID_FS_UUID=0123-4567",
                                NULL };
        const DeviceIdentity id = { .name = "nvme0n1", .devnum = makedev(259, 0), .properties = props };
        int r;

        fuzz_check_escaping(data, size);

        if (size > 4096)
                return 0;
        text = fuzz_string(data, size);
        r = device_match_parse(text, &m, &error);
        if (r < 0) {
                FUZZ_ASSERT(r == -EINVAL || r == -ENOMEM);
                FUZZ_ASSERT(r == -ENOMEM || error);
                return 0;
        }
        FUZZ_ASSERT(r == 0 && !error);
        FUZZ_ASSERT(m.kind >= 0 && m.kind < _MATCH_KIND_MAX);
        FUZZ_ASSERT(m.pattern && (m.kind == MATCH_PROPERTY) == (m.key != NULL));

        formatted = device_match_to_string(&m);
        FUZZ_ASSERT(formatted);
        FUZZ_ASSERT(device_match_parse(formatted, &m2, &error2) == 0);
        FUZZ_ASSERT(m2.kind == m.kind && m2.devnum == m.devnum);
        again = device_match_to_string(&m2);
        FUZZ_ASSERT(again && streq(again, formatted));
        FUZZ_ASSERT(device_match_test(&m, &id) == device_match_test(&m2, &id));

        device_match_done(&m);
        device_match_done(&m2);
        return 0;
}
