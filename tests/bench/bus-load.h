/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by bus-load.c (the load clients) and bus-hostile.c (hostile callers, the monitor). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <systemd/sd-bus.h>

#define BUS_LOAD_DEST "org.stablepages1"
#define BUS_LOAD_PATH "/org/stablepages1"
#define BUS_LOAD_IFACE "org.stablepages1.Manager"

#define streq(a, b) (strcmp((a), (b)) == 0)
#define MAX(a, b) ((a) > (b) ? (a) : (b))

extern const char *arg_device, *arg_method, *arg_stop_file, *arg_dest;
extern unsigned arg_timeout_sec, arg_rate_hz, arg_settle_ms;
extern size_t arg_count, arg_connections;
extern bool arg_agent;

/* CLOCK_MONOTONIC in microseconds. */
uint64_t bus_load_now_usec(void);

/* True when e says the call got no answer from the daemon (timeout, no reply, lost connection,
 * no such name), or when no error is set (a local failure). */
bool bus_load_error_is_unanswered(const sd_bus_error *e);

/* Runs --hostile=MODE, or the monitor when mode is NULL. Returns the exit status. */
int bus_hostile_main(const char *mode);
