/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* stablepagesctl: shared state of the verbs. */

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "exit-code.h"
#include "json.h"
#include "macro.h"

typedef enum JsonMode { JSON_OFF, JSON_SHORT, JSON_PRETTY } JsonMode;

extern JsonMode arg_json;
extern bool arg_legend;
extern bool arg_runtime;
extern bool arg_force;
extern bool arg_apply;
extern bool arg_remount;
extern bool arg_bind_name;          /* set: bind the persistent override to the kernel name */
extern bool arg_ask_password;       /* false: --no-ask-password */
extern const char *arg_config_file; /* check-config and the no-daemon fallback */
extern const char *arg_config_dir;

/* Reads the configuration as the daemon would: /etc/stablepages.conf and its drop-ins, or
 * those of --config-dir=. Returns 0 or -ENOMEM (config_load()). */
int ctl_config_load(Config *ret, ConfigDiags *diags);

/* Connects to the system bus ($DBUS_SYSTEM_BUS_ADDRESS honoured). Returns 0 or -errno. */
int ctl_bus_open(sd_bus **ret);

/* True when stablepagesd owns its name on the bus, once D-Bus activation (where it is
 * installed as an activatable service) has started it. */
bool ctl_daemon_running(sd_bus *bus);

/* Opens the bus and checks that the daemon is there, for the verbs that need it. Returns 0,
 * or -ESRCH when the daemon is not running (logged, naming verb). */
int ctl_daemon_bus(const char *verb, sd_bus **ret);

/* Before a call that polkit may decide: unless --no-ask-password, starts the polkit agent (on
 * a terminal, not as root), allows interactive authorization, and lets the calls on bus wait
 * as long as the daemon waits for polkit. */
void ctl_ask_password(sd_bus *bus);

/* Prints "VERB: message" for a failed call and returns what it means: -ENODEV for no such
 * device, -EINVAL for an invalid name, -EIO for any other error the daemon replied, else r. */
int ctl_call_error(const char *what, const sd_bus_error *error, int r);

/* Maps each name (disk or partition) to its disk through the daemon, each disk once (the
 * daemon takes at most one name per disk). Returns 0 or -errno (logged; -ENODEV for no such
 * device, -EINVAL for an invalid name). */
int ctl_resolve_names(sd_bus *bus, int argc, char **argv, char ***ret);

/* Prints the daemon's JSON of the disks (DumpJSON; every disk when disks is empty) with flags
 * (DUMP_FLAG_*; --json=pretty adds DUMP_FLAG_PRETTY). Returns 0 or a negative errno, logged
 * naming verb. */
int ctl_dump_json(sd_bus *bus, const char *verb, char **disks, uint64_t flags);

/* --json: starts writing JSON to stdout (pretty or short, as --json= says), and ends the
 * document with exactly one newline. */
void ctl_json_begin(JsonWriter *w);
void ctl_json_end(JsonWriter *w);

/* Starts a pager when stdout is a terminal (unless --no-pager). */
void ctl_pager_open(void);

/* The verbs: each returns 0 or -errno (logged), mapped to the exit code by
 * exit_code_from_result() in main(). */
int verb_status(int argc, char **argv);
int verb_explain(int argc, char **argv);
int verb_set(int argc, char **argv);
int verb_reset(int argc, char **argv);
int verb_apply(int argc, char **argv);
int verb_reload(int argc, char **argv);
int verb_monitor(int argc, char **argv);
int verb_check_config(int argc, char **argv);
int verb_show_config(int argc, char **argv);
int verb_stats(int argc, char **argv);
