/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What status and explain print alike, from the daemon's answers or without it. */
#include <inttypes.h>

#include "ctl-show.h"
#include "ctl.h"
#include "log.h"
#include "util.h"

const char *const status_header[] = { "DEVICE", "NEED",       "KERNEL",    "DESIRED",
                                      "MOUNTS", "CACHE/SWAP", "STALL-P99", NULL };

const char *const overrides_header[] = { "OVERRIDE", "SETTING", "SCOPE", "BOUND-TO", "SOURCE", NULL };

/* Adds one override to the overrides table: the disk it applies to ("-" for none present). */
int overrides_add(Table *t, const char *disk, const char *setting, bool force, const char *scope,
                  const char *binding, const char *source) {
        _cleanup_free_ char *what = strdup_printf("%s%s", setting, force ? " (force)" : "");
        if (!what)
                return -ENOMEM;
        const char *row[] = { isempty(disk) ? "-" : disk, what, scope, binding, source };
        return table_add_row(t, row);
}

/* Prints the overrides table after the devices table, when there is any override. */
void overrides_print(const Table *t) {
        if (t->n_rows <= 1)
                return;
        putchar('\n');
        table_print(t, stdout, arg_legend);
}

/* A disk that needs stable writes whose flag is off: what starts on it now (a mount, a swapon, a
 * mapping) would run without them. A warning: what runs on it already is each consumer's, and
 * a consumer that runs without them is said at error level (ctl_say_consumer_hazards()). */
void say_flag_off(const char *disk, const char *need, const char *reason) {
        log_warning(
                "%s needs stable writes (need %s%s%s) but its flag is off: a filesystem mounted, a swap "
                "area activated or a mapping made on it now would run without them; \"stablepagesd apply "
                "%s\" turns them on.",
                disk, need, reason ? ": " : "", reason ?: "", disk);
}

void print_reasons(const char *label, char *const *reasons) {
        bool first = true;
        STRV_FOREACH (s, reasons) {
                printf("  %-9s%s\n", first ? label : "", *s);
                first = false;
        }
}

/* The override line of explain: what it is bound to, and where it is kept. */
void print_override(const char *scope, const char *binding, const char *source, uint64_t diskseq) {
        if (isempty(scope))
                printf("  %-9sno override (this disk: diskseq %" PRIu64 ")\n", "binding:", diskseq);
        else if (streq(scope, "runtime"))
                printf("  %-9sruntime, bound to this disk (%s) until it goes away; %s\n",
                       "binding:", binding, source);
        else
                printf("  %-9sconfiguration, bound to %s; %s\n", "binding:", binding, source);
}

/* The disk id line of explain: what a persistent override would be bound to. */
void print_stable_id(const char *match) {
        printf("  %-9s%s\n",
               "disk id:", isempty(match) ? "none stable (a persistent override needs --bind=name)" : match);
}
