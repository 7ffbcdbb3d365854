/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Between the configuration's item table (config.c) and its listing (config-entries.c):
 * private to these two files. */

#include "config-reader.h"

/* The values of an enumerated key: from_string() looks a name up (a value, or -EINVAL);
 * "expected ..." lists names in their order, after what when set ("a boolean (yes or no)"). */
typedef struct ConfigEnum {
        int (*from_string)(const char *s);
        const char *(*to_string)(int v);
        const char *what;
        const char *const *names;
        size_t n_names;
} ConfigEnum;

typedef struct ConfigItem ConfigItem;
/* Parses value into data; returns true when that changed the setting (false: the line was
 * rejected, and said so). */
typedef bool (*ConfigParser)(ParseState *s, const ConfigItem *item, const char *value, void *data);

struct ConfigItem {
        SectionKind section;
        const char *key;
        ConfigParser parse;
        size_t offset;           /* into Config or DeviceRule */
        long long min, max, def; /* for parse_usec; def also for parse_enum (an empty value) */
        uint64_t unit;           /* for parse_usec */
        const char *unit_name;
        const ConfigEnum *values; /* for parse_enum */
        bool list;                /* each line adds to the value (an empty one empties it) */
};

/* The keys of [Manager] and [Device], config_items_n of them, in the order show-config lists
 * them. */
extern const ConfigItem config_items[];
extern const size_t config_items_n;

/* The value of item in base (Config or DeviceRule) as a configuration line writes it. New
 * string, NULL on ENOMEM. */
char *config_item_value(const ConfigItem *item, const void *base);
