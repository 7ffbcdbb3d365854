/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Introspection XML written from the sd-bus vtables (bus-introspect.h). */
#include <string.h>

#include "bus-api.h"
#include "bus-internal.h"
#include "bus-introspect.h"

/* Length of the first complete type of signature s. */
static size_t signature_element_length(const char *s) {
        if (*s == 'a')
                return 1 + signature_element_length(s + 1);
        if (*s == '(' || *s == '{') {
                char open = *s, close = *s == '(' ? ')' : '}';
                size_t depth = 0, i = 0;
                do {
                        if (s[i] == open)
                                depth++;
                        else if (s[i] == close)
                                depth--;
                        i++;
                } while (s[i] && depth > 0);
                return i;
        }
        return *s ? 1 : 0;
}

static void introspect_args(FILE *f, const char *signature, const char *names, const char *direction) {
        for (const char *s = signature ?: ""; *s;) {
                size_t n = signature_element_length(s);
                fprintf(f, "   <arg type=\"%.*s\"", (int) n, s);
                if (names && *names) {
                        fprintf(f, " name=\"%s\"", names);
                        names += strlen(names) + 1;
                }
                if (direction)
                        fprintf(f, " direction=\"%s\"", direction);
                fputs("/>\n", f);
                s += n;
        }
}

void bus_introspect_interface(FILE *f, const char *interface, const sd_bus_vtable *v) {
        fprintf(f, "  <interface name=\"%s\">\n", interface);
        for (; v->type != _SD_BUS_VTABLE_END; v++) {
                switch (v->type) {
                case _SD_BUS_VTABLE_METHOD: {
                        const char *names = v->x.method.names;
                        fprintf(f, "   <method name=\"%s\">\n", v->x.method.member);
                        introspect_args(f, v->x.method.signature, names, "in");
                        /* the result names follow the parameter names */
                        for (const char *s = v->x.method.signature ?: ""; names && *s;
                             s += signature_element_length(s))
                                names += strlen(names) + 1;
                        introspect_args(f, v->x.method.result, names, "out");
                        fputs("   </method>\n", f);
                        break;
                }
                case _SD_BUS_VTABLE_SIGNAL:
                        fprintf(f, "   <signal name=\"%s\">\n", v->x.signal.member);
                        introspect_args(f, v->x.signal.signature, v->x.signal.names, NULL);
                        fputs("   </signal>\n", f);
                        break;
                case _SD_BUS_VTABLE_PROPERTY:
                case _SD_BUS_VTABLE_WRITABLE_PROPERTY:
                        fprintf(f, "   <property name=\"%s\" type=\"%s\" access=\"%s\"/>\n",
                                v->x.property.member, v->x.property.signature,
                                v->type == _SD_BUS_VTABLE_PROPERTY ? "read" : "readwrite");
                        break;
                default:
                        break;
                }
        }
        fputs("  </interface>\n", f);
}

void bus_introspect(FILE *f) {
        fputs("<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
              "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n",
              f);
        fputs(" <node name=\"" BUS_PATH "\">\n", f);
        bus_introspect_interface(f, BUS_MANAGER_INTERFACE, manager_vtable);
        fputs(" </node>\n <node name=\"" BUS_DEVICE_PREFIX "/DEVICE\">\n", f);
        bus_introspect_interface(f, BUS_DEVICE_INTERFACE, device_vtable);
        fputs(" </node>\n</node>\n", f);
}
