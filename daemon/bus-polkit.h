/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Authorization of the mutating D-Bus calls: root is served at once; any other caller's call
 * waits for polkit to allow each of its actions in turn (CheckAuthorization, interactive when
 * the caller allows it, up to 120 s while a person types a password).
 *
 * Checks waiting for polkit are bounded: at most BUS_AUTH_MAX_PENDING_PER_UID of one user and
 * BUS_AUTH_MAX_PENDING of everyone (dbus-daemon refuses a connection more than 128 calls
 * waiting for replies: the daemon keeps room for its own). The bounds are fair per user: the
 * last BUS_AUTH_RESERVED_FIRST of BUS_AUTH_MAX_PENDING are only for the first check of a user
 * who has none waiting, so that users with checks waiting hold at most
 * BUS_AUTH_MAX_PENDING - BUS_AUTH_RESERVED_FIRST beyond each one's first. A few users whose
 * polkit agents never answer (four of them filled every slot before) cannot lock anyone else
 * out: a user with no check waiting is refused only while BUS_AUTH_RESERVED_FIRST other users
 * have checks waiting. A call over a bound is answered at once with
 * org.freedesktop.DBus.Error.LimitsExceeded; the first refusal and the count, when the user's
 * checks are over, are logged.
 *
 * The caller's uid is dbus-daemon's (GetConnectionUnixUser: SO_PEERCRED when it connected),
 * never read from /proc (a PID may be reused). It is asked for without waiting (the calls of a
 * connection wait for it, at most BUS_AUTH_MAX_PENDING_PER_UID), so that a burst of new
 * connections cannot stall the daemon behind a busy bus, and is remembered per unique
 * connection name, which the bus never gives to another connection. */

#include <systemd/sd-bus.h>

#include "macro.h"

#define BUS_AUTH_MAX_PENDING 64
#define BUS_AUTH_MAX_PENDING_PER_UID 16
#define BUS_AUTH_RESERVED_FIRST 16

typedef struct BusAuth BusAuth;

/* What runs once every action is allowed: like a method handler (replies, or returns an error
 * for the caller to answer, or 1 when it replies later). */
typedef int (*bus_authorized_t)(sd_bus_message *m, void *userdata, sd_bus_error *error);

int bus_auth_new(sd_bus *bus, BusAuth **ret);

/* Forgets the checks still waiting (their callers get no answer: the daemon is going away). */
BusAuth *bus_auth_free(BusAuth *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusAuth *, bus_auth_free);

/* Runs run(m, userdata) now when the caller is root; otherwise asks polkit for each of the
 * actions (a NULL-terminated list of action ids, static strings) and runs it when all are
 * allowed, else answers AccessDenied naming the action. Returns what a method handler
 * returns. */
int bus_authorize(BusAuth *a, sd_bus_message *m, const char *const *actions, bus_authorized_t run,
                  void *userdata, sd_bus_error *error);
