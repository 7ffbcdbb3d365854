/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The configuration: /etc/stablepages.conf then /etc/stablepages.conf.d/ *.conf in
 * lexical order, later wins. Pure: no D-Bus, no event loop, no /sys. Reading and
 * diagnostics: config-reader.c; the keys, defaults and value parsers: config.c; the
 * configuration in force as entries: config-entries.c; which [Device] sections match a disk:
 * device-match.c. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "device-match.h"
#include "macro.h"

/* The longest line of a configuration file, without its newline: room for a long path (a
 * loop device's backing file) in a [Device] header or a value. */
#define CONFIG_LINE_MAX 4096U

typedef enum PolicyMode {
        POLICY_OBSERVE,
        POLICY_LATENCY,
        POLICY_BALANCED,
        POLICY_INTEGRITY,
        _POLICY_MODE_MAX,
        _POLICY_MODE_INVALID = -EINVAL,
} PolicyMode;

typedef enum ApplyMounted {
        APPLY_MOUNTED_NEXT_MOUNT,
        APPLY_MOUNTED_REMOUNT_IDLE,
        _APPLY_MOUNTED_MAX,
        _APPLY_MOUNTED_INVALID = -EINVAL,
} ApplyMounted;

/* StableWrites= of a [Device] section. */
typedef enum Setting {
        SETTING_AUTO,
        SETTING_ON,
        SETTING_OFF,
        _SETTING_MAX,
        _SETTING_INVALID = -EINVAL,
} Setting;

typedef struct DeviceRule {
        DeviceMatch match;
        Setting stable_writes; /* _SETTING_INVALID when the section does not set it */
        int force;             /* -1 unset, 0, 1 */
        int need;              /* Need=: a Need (classify.h) it raises the detected one to, -1 unset */
        unsigned need_line;    /* the line of that Need= */
        char *file;            /* where it was defined, for messages */
        unsigned line;
} DeviceRule;

/* The sources of the configuration in force: for each key, the line that set it (an empty
 * value too), or for a key that takes a list (Devices=, NeverRemount=), each line that added
 * to it since the line that emptied it, that one included. A line that was rejected sets
 * nothing. */
#define CONFIG_SOURCE_MANAGER SIZE_MAX
typedef struct ConfigSource {
        const char *key; /* the key's name (static) */
        size_t rule;     /* its [Device] section, an index into rules; CONFIG_SOURCE_MANAGER */
        char *file;
        unsigned line;
} ConfigSource;

typedef struct Config {
        PolicyMode policy;              /* Policy=, default balanced */
        char **devices;                 /* Devices=, globs of disks we may write; NULL = all */
        ApplyMounted apply_mounted;     /* ApplyMounted=, default next-mount */
        uint64_t rescan_usec;           /* RescanSec=, default 60 s; 0 disables */
        uint64_t stall_budget_usec;     /* StallBudgetMSec=, default 100 ms */
        uint64_t stall_window_usec;     /* StallWindowSec=, default 300 s */
        uint64_t stall_calm_usec;       /* StallCalmSec=, default 1800 s */
        uint64_t stall_min_waits;       /* StallMinWaits=, default 10 */
        uint64_t mirror_check_usec;     /* MirrorCheckSec=, default 0: never start an md check */
        char *metrics_file;             /* MetricsFile=, NULL = off */
        uint64_t metrics_interval_usec; /* MetricsIntervalSec=, default 15 s */
        char **never_remount;           /* NeverRemount=, paths never cycled */
        DeviceRule *rules;              /* in the order they were read; later wins */
        size_t n_rules;
        ConfigSource *sources; /* in the order they were read */
        size_t n_sources;
        char **files; /* the files read, in order */
} Config;

typedef enum DiagLevel { DIAG_WARNING, DIAG_ERROR } DiagLevel;

/* One problem found while reading the configuration. */
typedef struct ConfigDiag {
        DiagLevel level;
        char *file;
        unsigned line; /* 0 when the problem is the file as a whole */
        char *message;
} ConfigDiag;

typedef struct ConfigDiags {
        ConfigDiag *items;
        size_t n;
} ConfigDiags;

/* Fills *c with the built-in defaults. Returns 0 or -ENOMEM. */
int config_init_defaults(Config *c);

/* Releases everything c owns and zeroes it. */
void config_done(Config *c);

void config_diags_done(ConfigDiags *d);

/* Number of diagnostics at DIAG_ERROR level. */
size_t config_diags_errors(const ConfigDiags *d);

/* Prints each diagnostic as "file:line: warning|error: message" to f. */
void config_diags_print(const ConfigDiags *d, FILE *f);

/* Reads config_file (default /etc/stablepages.conf) then dropin_dir (default
 * /etc/stablepages.conf.d) *.conf in lexical order into *ret, starting from defaults.
 * Missing files/dirs are fine. Every bad line is reported in *diags and ignored; the
 * valid lines apply. *ret is overwritten, not freed; diagnostics are appended to *diags.
 * Returns 0 (even with diagnostics) or -ENOMEM (then *ret is empty). */
int config_load(const char *config_file, const char *dropin_dir, Config *ret, ConfigDiags *diags);

/* config_parse_file() parses the file at path (a missing file is reported), and
 * config_parse_buffer() the size bytes at data, named name in messages, on top of *c.
 * Used by config_load() and by the fuzzer. Returns 0 or -ENOMEM. */
int config_parse_file(Config *c, const char *path, ConfigDiags *diags);
int config_parse_buffer(Config *c, const char *name, const char *data, size_t size, ConfigDiags *diags);

/* One key of the configuration in force, or the header of a [Device] section, with where it
 * comes from: what show-config prints (config-show.c). */
typedef struct ConfigEntrySource {
        char *file;
        unsigned line;
} ConfigEntrySource;

typedef struct ConfigEntry {
        char *section;              /* "Manager", or "Device MATCH" */
        char *key;                  /* "" for the header of a [Device] section */
        char *value;                /* as a configuration line would write it */
        char *note;                 /* what the value means where it is not plain ("all disks"), or NULL */
        ConfigEntrySource *sources; /* none: the default */
        size_t n_sources;
} ConfigEntry;

/* Every key of [Manager] in the order of stablepages.conf(5), defaults included, then each
 * [Device] section: its header, then the keys it sets. Returns 0 or -ENOMEM. */
int config_entries(const Config *c, ConfigEntry **ret, size_t *ret_n);

/* Releases n entries and the array. */
void config_entries_free(ConfigEntry *entries, size_t n);

/* The rules matching a disk (device-match.c). */

/* The merged per-device settings: walks c->rules in order, later wins per key; Force=yes
 * counts only from a rule that names the disk itself (identity.h: stable_id_match_disk()).
 * *ret_rule_* point at the rules that decided, for messages (NULL if none). */
void config_device_settings(const Config *c, const DeviceIdentity *id, Setting *ret_setting, bool *ret_force,
                            const DeviceRule **ret_setting_rule, const DeviceRule **ret_force_rule);

/* The Need= of the last matching rule that sets one (a Need value of classify.h), or -1;
 * *ret_rule is that rule (NULL when none). */
int config_device_need(const Config *c, const DeviceIdentity *id, const DeviceRule **ret_rule);

/* True when the disk may be written: Devices= unset, or one of its globs matches name. */
bool config_device_is_managed(const Config *c, const char *name);

const char *policy_mode_to_string(PolicyMode m);
PolicyMode policy_mode_from_string(const char *s);
const char *apply_mounted_to_string(ApplyMounted a);
ApplyMounted apply_mounted_from_string(const char *s);
const char *setting_to_string(Setting s);
Setting setting_from_string(const char *s);
