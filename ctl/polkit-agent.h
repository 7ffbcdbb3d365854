/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The textual polkit agent of stablepagesctl, as systemctl starts one: pkttyagent, registered
 * for this process (its parent), asks at the terminal for the password a call needs when no
 * agent of the user's session does (--fallback). Started only for a caller that is not root,
 * with standard input and output on a terminal. */

/* Starts pkttyagent and waits until it has registered (or has failed to: then polkit finds no
 * agent and the call is refused as without one). Returns 1 when an agent runs, 0 when none was
 * started (root, no terminal, no pkttyagent), or -errno (logged). */
int polkit_agent_open(void);

/* Stops the agent, if one runs, and waits for it to exit. */
void polkit_agent_close(void);
