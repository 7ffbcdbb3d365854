#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Reload: SIGHUP with a broken drop-in keeps the configuration in force and logs each
# problem as file:line; SIGHUP with the drop-in fixed applies it. RELOADING=1/READY=1 are
# sent around each reload.
#
# Usage: test-daemon-reload.sh [STABLEPAGESD]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 64M
sp_config_device "$loop" on
sp_daemon_start
sp_wait_for 1000 "$loop stable_writes=1" sp_flag_is "$loop" 1 >/dev/null

# 1. A broken drop-in: line 3 has an invalid value. The old policy stays.
sp_dropin 50-test.conf "[Device $loop]
StableWrites=off
StableWrites=sideways"
off=$(sp_lines "$SP_TMP/daemon.log")
sp_daemon_reload
sp_log_has_since "$off" "50-test.conf:3: .*sideways" || sp_fail "the bad line was not logged as 50-test.conf:3"
sp_log_has_since "$off" "keeping the configuration in force" || sp_fail "keeping the old configuration was not logged"
sleep 0.2 # a wrong reconcile would have written by now
sp_flag_is "$loop" 1 || sp_fail "the broken drop-in changed $loop"
sp_state_is ".devices[] | select(.name == \"$loop\") | .desired" on || sp_fail "the daemon's view changed"
sp_log "reload: broken drop-in rejected: $(tail -n +"$((off + 1))" "$SP_TMP/daemon.log" | grep -m1 '50-test.conf:3')"

# 2. The fixed drop-in applies.
sp_dropin 50-test.conf "[Device $loop]
StableWrites=off"
off=$(sp_lines "$SP_TMP/daemon.log")
sp_daemon_reload
ms=$(sp_wait_for 1000 "$loop stable_writes=0 after the fixed reload" sp_flag_is "$loop" 0)
sp_log_has_since "$off" "Configuration reloaded" || sp_fail "the reload was not logged"
sp_log_has_since "$off" "$loop: stable writes on -> off" || sp_fail "the change was not logged"
sp_state_is ".devices[] | select(.name == \"$loop\") | .desired" off || sp_fail "the daemon's view did not change"
sp_log "reload: fixed drop-in applied ($loop off ${ms} ms after READY=1)"

grep -q '^MONOTONIC_USEC=[0-9]' "$SP_TMP/notify.log" || sp_fail "no MONOTONIC_USEC= with RELOADING=1"
sp_daemon_stop
sp_log "reload: ok"
