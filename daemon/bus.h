/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The org.stablepages1 D-Bus API of the daemon (org.stablepages1(5)): the vtables, input
 * validation and the polkit check of mutating calls. State lives in the Manager. */

#include <stdio.h>

#include "manager.h"

typedef struct BusService BusService;

/* Connects to the system bus, registers the objects and follows the Manager's events
 * (PropertiesChanged, Applied, Refused, Reloaded). Returns 0 and *ret, or -errno when the
 * bus cannot be reached. */
int bus_service_new(Manager *m, BusService **ret);

/* Asks for the name org.stablepages1: call once the Manager's first reconcile is done, so
 * that the first caller sees a complete state. When the bus has given it, tells the service
 * manager READY=1 (manager_notify_ready()), so that a client started after the unit finds the
 * name; when it refuses, ends the event loop with the error. Returns 0 or -errno. */
int bus_service_take_name(BusService *b);

BusService *bus_service_free(BusService *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusService *, bus_service_free);

/* Prints the introspection XML of both interfaces, generated from the vtables. */
void bus_introspect(FILE *f);
