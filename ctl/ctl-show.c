/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What status and explain print alike, from the daemon's answers or without it. */
#include <inttypes.h>
#include <time.h>

#include "ctl-show.h"
#include "ctl.h"
#include "log.h"
#include "util.h"

const char *const ctl_status_header[] = { "DEVICE", "NEED",       "KERNEL",    "DESIRED",
                                          "MOUNTS", "CACHE/SWAP", "STALL-P99", NULL };

const char *const ctl_overrides_header[] = { "OVERRIDE", "SETTING", "SCOPE", "BOUND-TO", "SOURCE", NULL };

int ctl_overrides_add(Table *t, const char *disk, const char *setting, bool force, const char *scope,
                      const char *binding, const char *source) {
        _cleanup_free_ char *what = strdup_printf("%s%s", setting, force ? " (force)" : "");
        if (!what)
                return -ENOMEM;
        const char *row[] = { isempty(disk) ? "-" : disk, what, scope, binding, source };
        return table_add_row(t, row);
}

void ctl_overrides_print(const Table *t) {
        if (t->n_rows <= 1)
                return;
        putchar('\n');
        table_print(t, stdout, arg_legend);
}

void ctl_say_flag_off(const char *disk, const char *need, const char *reason) {
        log_warning(
                "%s needs stable writes (need %s%s%s) but its flag is off: a filesystem mounted, a swap "
                "area activated or a mapping made on it now would run without them; \"stablepagesd apply "
                "%s\" turns them on.",
                disk, need, reason ? ": " : "", reason ?: "", disk);
}

void ctl_print_lines(const char *label, char *const *lines) {
        bool first = true;
        STRV_FOREACH (s, lines) {
                printf("  %-9s%s\n", first ? label : "", *s);
                first = false;
        }
}

void ctl_print_override(const char *scope, const char *binding, const char *source, uint64_t diskseq) {
        if (isempty(scope))
                printf("  %-9sno override (this disk: diskseq %" PRIu64 ")\n", "binding:", diskseq);
        else if (streq(scope, "runtime"))
                printf("  %-9sruntime, bound to this disk (%s) until it goes away; %s\n",
                       "binding:", binding, source);
        else
                printf("  %-9sconfiguration, bound to %s; %s\n", "binding:", binding, source);
}

void ctl_print_stable_id(const char *match) {
        printf("  %-9s%s\n",
               "disk id:", isempty(match) ? "none stable (a persistent override needs --bind=name)" : match);
}

void ctl_print_learned(const char *learned, uint64_t since_usec, const char *reason) {
        char when[64] = "?";
        time_t t = (time_t) (since_usec / USEC_PER_SEC);
        struct tm tm;

        if (localtime_r(&t, &tm))
                strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm);
        printf("  %-9s%s since %s: %s\n", "learned:", learned, when, reason);
}
