/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The engine: config + sysfs facts + runtime state -> need, reasons and desired state for
 * every disk, and the one operation that changes the system: writing queue/stable_writes.
 * Used by the one-shot applier, dump, and the daemon's Manager. No D-Bus, no event loop. */

#include "classify.h"
#include "config.h"
#include "device.h"
#include "json.h"
#include "learned.h"
#include "policy.h"
#include "overrides.h"
#include "state.h"

typedef struct EngineOptions {
        const char *sysfs_root;     /* default "/sys" */
        const char *udev_data_dir;  /* default "/run/udev/data" */
        const char *config_file;    /* default CONFIG_FILE */
        const char *dropin_dir;     /* default CONFIG_DROPIN_DIR */
        const char *runtime_dir;    /* default RUNTIME_DIR */
        const char *state_dir;      /* default STATE_DIR: learned decisions */
        const char *kernel_release; /* default uname -r */
        const char *boot_id;        /* default /proc/sys/kernel/random/boot_id; "" none */
        backing_resolver_t resolve_backing;
        void *resolve_userdata;
        dm_table_reader_t read_dm_table; /* see DeviceScanOptions */
        void *read_dm_table_userdata;
        bool record_history;    /* record each disk's first sight and the moves of its flag in the
                                 * runtime dir (history.h): the applier and the daemon, not dump */
        const char *added_disk; /* the disk whose "add" this run handles: its flag now is the
                                 * kernel's own (the applier, run by udev for the add) */
        const char *writer;     /* who writes the flag, one word (flag.h); default "stablepagesd" */
} EngineOptions;

/* Everything the engine concluded about one disk. */
typedef struct EngineDevice {
        DeviceFacts *facts; /* points into Engine.table */
        Classification class;
        Setting setting; /* the override in force (auto when none) */
        DesiredSource setting_source;
        const DeviceRule *setting_rule; /* the [Device] section that set it, if any */
        bool force;
        const char *override_scope; /* "runtime", "config" (a [Device] section), or NULL: none */
        char *override_binding;     /* what that override is bound to: "diskseq 41",
                                     * "ID_SERIAL=abc", "kernel name zram*"… */
        char *override_source;      /* where it is kept: the runtime overrides file, or
                                     * file:line of the [Device] section */
        bool managed;
        StallVerdict stalls;
        char *learned_key;           /* learned.h: the disk's key (across reboots, or for this
                                      * boot only); NULL when it has none or until it is needed
                                      * (a record may be the disk's, or something is learned) */
        Learned learned;             /* what Policy=balanced learned from stalls (applies to
                                      * recommended disks in balanced mode only) */
        uint64_t learned_since_usec; /* CLOCK_REALTIME */
        char *learned_reason;
        char *need_problem; /* "file:line: Need=... cannot lower ..." or NULL */
        PolicyDecision decision;
} EngineDevice;

typedef struct Engine {
        char *sysfs_root, *udev_data_dir, *config_file, *dropin_dir, *runtime_dir, *state_dir;
        char *kernel_release;
        unsigned kernel;
        char *boot_id; /* keys what is learned about a disk for this boot only; "" unknown */
        backing_resolver_t resolve_backing;
        void *resolve_userdata;
        dm_table_reader_t read_dm_table;
        void *read_dm_table_userdata;
        bool record_history;
        char *added_disk; /* NULL: none */
        char *writer;

        Config config;
        ConfigDiags diags;
        RuntimeOverrides overrides;
        LearnedRecords learned;

        DeviceTable table;
        EngineDevice *devices; /* table.n entries */
} Engine;

/* Initializes e from options (copied). Returns 0 or -errno. */
int engine_init(Engine *e, const EngineOptions *options);
void engine_done(Engine *e);

/* Loads the configuration files into e->config, diagnostics into e->diags (replacing both).
 * Returns 0 or -ENOMEM. */
int engine_load_config(Engine *e);

/* The same for the udev applier and dump, by the rule of config-in-force.h: when the files have
 * errors and a daemon runs, the configuration it has in force, with *ret_note saying so (else
 * NULL; it also says why the daemon's copy could not be used). Returns 0 or -ENOMEM. */
int engine_load_config_in_force(Engine *e, char **ret_note);

/* Replaces e->config (taking ownership of *c, which is zeroed). Decisions are stale until
 * the next engine_scan(). */
void engine_set_config(Engine *e, Config *c);

/* Loads the runtime overrides from the runtime dir. Returns 0 or -errno. */
int engine_load_overrides(Engine *e);

/* Loads the learned decisions from the state dir. Returns 0 or -errno. */
int engine_load_learned(Engine *e);

/* Works out d->learned_key (learned.h) when it is not yet. Returns 0, -ENXIO when the disk has
 * no key, or -ENOMEM. */
int engine_learned_key(Engine *e, EngineDevice *d);

/* Reads the facts of every disk and derives need and desired state. Returns 0 or -errno;
 * on failure the device tables are empty (never half-built). */
int engine_scan(Engine *e);

/* The same for the named disks and what their classification looks at (their slaves, the
 * disk under a dio loop's backing file) only: the one-shot applier's view, which need not
 * read every disk of the machine. disks are disk names, not partitions. */
int engine_scan_for(Engine *e, char *const *disks);

/* Re-reads the facts of the named disks (disk names, not partitions, all in the table), of
 * what they stack on and of everything stacked on any of those (holders/, dio loop devices
 * whose backing file lives there, the paths and heads of NVMe multipath), recursively, and re-derives need
 * and desired for those only: what a full engine_scan() would conclude, at the cost of the few disks
 * concerned. Every other disk keeps its facts and decision. *ret_redone (may be NULL) gets a bool array,
 * parallel to the table, of the disks re-derived. Returns 0; -ESTALE when a full scan is
 * needed instead (a disk was added, removed or replaced, or a stack names a disk not in the
 * table: some facts may then be re-read and the tables must be rebuilt with engine_scan());
 * -ENOMEM or -errno (same). */
int engine_rescan_disks(Engine *e, char *const *disks, bool **ret_redone);

/* The EngineDevice of disk name (not a partition), or NULL; a binary search of the table,
 * which engine_scan() keeps in name order. */
EngineDevice *engine_find_disk(const Engine *e, const char *name);

/* The EngineDevice for a disk or partition name, or NULL. */
EngineDevice *engine_find(Engine *e, const char *name);

typedef struct ApplyResult {
        bool changed;
        int old_value, new_value; /* the flag before and after */
        char *message;            /* why it failed or what it did; owned */
} ApplyResult;

void apply_result_done(ApplyResult *r);

/* Makes queue/stable_writes of d as decided, through flag_write() (flag.h: the disk's identity
 * and, for an off, its need checked again, the change recorded in its history): writes it only
 * when it differs, logs one line per change with the reason (a warning when forced). Returns 0
 * when the device is as desired (changed or not); -EPERM when an off was refused (the
 * interlock, or a 6.11+ integrity profile; the flag is then made 1); -ESTALE when another disk
 * has its name now; -ENODEV when it was removed; -EOPNOTSUPP when the kernel has no such
 * switch; other -errno when the write failed. ret->message says what happened. */
int engine_apply(Engine *e, EngineDevice *d, ApplyResult *ret);

/* Derives the need of disk (with diskseq) again from sysfs, with e's configuration, without
 * touching e's tables: the need_of of flag_write() (userdata: the Engine). Returns 0 with
 * *ret_need, or -errno with a sentence in *ret_reason (gone, another disk under the name). */
int engine_need_of(const char *disk, uint64_t diskseq, Need *ret_need, char **ret_reason, void *userdata);

/* Puts the flag of d back to what its history says the kernel set (history.h), when the
 * project changed it: never to 0 on a required or unknown disk (flag_write()'s interlock).
 * Returns what engine_apply() returns; ret->message says what was done or why not. */
int engine_restore(Engine *e, EngineDevice *d, ApplyResult *ret);

/* Prints the named disks (every disk when names is NULL or empty) as a JSON array of
 * objects to f, each with its consumers (consumers.h) as far as this process finds them
 * (consumers-read.h). */
void engine_dump_json(const Engine *e, char *const *names, FILE *f, bool pretty);

/* Prints every disk as a text table to f. */
void engine_dump_text(const Engine *e, FILE *f);

/* Writes the members of one device's JSON object (callers add their own). */
void engine_device_json_members(const Engine *e, const EngineDevice *d, JsonWriter *w);

/* "on", "off", or "-" (leave alone) for a desired value. */
const char *desired_to_string(int desired);
