#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# READY=1 means the API is there (issue 15): the daemon tells the service manager READY=1 only
# once it owns org.stablepages1, so that a client started after the unit finds the name. Made
# deterministic by stopping the private bus (SIGSTOP) before the daemon starts: the daemon
# reconciles and serves the flags, but must not say READY=1 while the bus cannot give it its
# name; once the bus runs again (SIGCONT), READY=1 follows and the name is owned at that moment.
#
# Usage: test-ready-after-name.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"

robust_own_loop 16M

# shellcheck disable=SC2154 # bus_pids: bus-lib.sh, the bus first
bus=${bus_pids[0]}
kill -STOP "$bus"
sp_defer "kill -CONT $bus"
"$SP_HELPER" notify-listen "$SP_TMP/notify.sock" >>"$SP_TMP/notify.log" &
sp_defer "kill $!"
sp_wait_for 2000 "notify socket" test -S "$SP_TMP/notify.sock" >/dev/null
env JOURNAL_STREAM=0:0 NOTIFY_SOCKET="$SP_TMP/notify.sock" DBUS_SYSTEM_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" \
        "$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" >>"$SP_TMP/daemon.log" 2>&1 &
SP_PID=$!
sp_defer "sp_daemon_kill $SP_PID"

# The daemon is up (it reconciled: devices.json) while the bus is stopped...
sp_wait_for 5000 "the first reconcile" test -s "$SP_RUNTIME/devices.json" >/dev/null
sleep 1
kill -0 "$SP_PID" 2>/dev/null || sp_fail "the daemon exited while the bus was stopped"
# ...and has not said READY=1.
if grep -q '^READY=1$' "$SP_TMP/notify.log"; then
        sp_fail "READY=1 was sent while the bus could not give the daemon its name"
fi
sp_log "no READY=1 while the bus is stopped ($(grep -c . "$SP_TMP/notify.log") notify lines)"

kill -CONT "$bus"
sp_wait_for 5000 "READY=1 once the bus runs" grep -q '^READY=1$' "$SP_TMP/notify.log" >/dev/null
robust_has_name || sp_fail "READY=1 was sent, but org.stablepages1 has no owner"
robust_call ListDevices >/dev/null || sp_fail "ListDevices failed after READY=1"
sp_daemon_stop
sp_log "ready-after-name: ok"
