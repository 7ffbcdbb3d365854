/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The risk side of a mirror without stable writes (mirror.h): the md levels that mirror, the
 * risk of O_DIRECT writes, and the verdict of a finished check. Pure. */
#include <inttypes.h>

#include "mirror.h"
#include "util.h"

bool mirror_level_is_mirror(const char *md_level) {
        return md_level && (streq(md_level, "raid1") || streq(md_level, "raid10"));
}

char *mirror_direct_risk(const MirrorFigures *f, const char *name) {
        if (f->direct_writes == 0)
                return NULL;
        return strdup_printf("%" PRIu64 " O_DIRECT writes on %s since the last check: a writer that changes "
                             "its buffer while it is written makes the legs differ whatever stable writes "
                             "say (a risk they cannot remove)",
                             f->direct_writes, name);
}

int mirror_check_ended(MirrorFigures *f, const char *name, uint64_t mismatch, uint64_t now_usec,
                       char **ret_reason, bool *ret_verdict) {
        uint64_t before = f->check_usec > 0 ? f->mismatch_cnt : 0;
        _cleanup_free_ char *direct = mirror_direct_risk(f, name);
        char *reason;

        *ret_verdict = false;
        if (f->direct_writes > 0 && !direct)
                return -ENOMEM;
        if (mismatch > before && f->shadow_pages > 0) {
                reason = strdup_printf(
                        "md check of %s found mismatch_cnt %" PRIu64 " (previous check: %" PRIu64
                        ") after %" PRIu64 " pages were modified under writeback while stable "
                        "writes were off: the legs diverged, stable writes on for this mirror%s%s",
                        name, mismatch, before, f->shadow_pages, direct ? "; " : "", direct ?: "");
                *ret_verdict = !f->diverged;
                f->diverged = true;
        } else if (mismatch > before)
                reason = strdup_printf(
                        "md check of %s found mismatch_cnt %" PRIu64 " (previous check: %" PRIu64
                        ") with no page modified under writeback while stable writes were off: "
                        "not a divergence stable writes prevent%s%s",
                        name, mismatch, before, direct ? "; " : "", direct ?: "");
        else
                reason = strdup_printf(
                        "md check of %s: mismatch_cnt %" PRIu64 " (previous check: %" PRIu64 "), %" PRIu64
                        " pages modified under writeback while stable writes were "
                        "off since%s%s",
                        name, mismatch, before, f->shadow_pages, direct ? "; " : "", direct ?: "");
        if (!reason)
                return -ENOMEM;
        f->mismatch_cnt = mismatch;
        f->check_usec = now_usec;
        f->shadow_pages = 0;
        f->direct_writes = 0;
        *ret_reason = reason;
        return 0;
}
