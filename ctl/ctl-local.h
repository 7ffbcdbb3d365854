/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* status and explain without the daemon (ctl-local.c). */

int status_local(int argc, char **argv);
int explain_local(const char *name);
