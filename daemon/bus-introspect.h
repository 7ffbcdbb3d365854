/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Introspection XML generated from sd-bus vtables, for documentation and the interface
 * comparison of tests/compare-interfaces (stablepagesd introspect). */

#include <stdio.h>
#include <systemd/sd-bus.h>

/* Prints the <interface> element of vtable v (methods with their argument names, signals,
 * properties) as interface. */
void bus_introspect_interface(FILE *f, const char *interface, const sd_bus_vtable *v);
