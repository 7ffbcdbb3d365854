/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The pager of stablepagesctl's long output, as systemd's: $SYSTEMD_PAGER or $PAGER ("cat" or
 * empty: none), else less, with LESS=FRSXMK unless set.
 *
 * stablepagesctl runs as root under sudo, and a pager can run commands (less's "!", "v"):
 * when privileged, the pager runs in secure mode (the class of CVE-2023-26604): LESSSECURE=1,
 * and only less itself, never $SYSTEMD_PAGER or $PAGER from the environment (they may be the
 * invoking user's). Privileged means: effective uid 0 and sudo ($SUDO_UID), a real uid other
 * than 0, or a login session owned by another user (or none found). $SYSTEMD_PAGERSECURE=1 or 0
 * decides instead, and with it set $PAGER is trusted. */

/* Pipes stdout into the pager when stdout is a terminal. */
void pager_open(void);

/* Ends the pipe and waits for the pager to exit. */
void pager_close(void);
