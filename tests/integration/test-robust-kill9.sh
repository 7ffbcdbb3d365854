#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Faults (issue 9): kill -9 at random points, and the system bus going away.
#
# 1. ROUNDS times: start the daemon (on a private system bus), let a client set and reset
#    a runtime override of the test's loop device over D-Bus as fast as it can (each call
#    also applies), kill -9 the daemon after a random delay (0-400 ms; some rounds during
#    start-up), then check: every state file in the runtime directory parses (the
#    overrides line by line, devices.json as JSON; an interrupted atomic write leaves at
#    most its temporary file), no acknowledged override is lost (the file holds the last
#    acknowledged one or the one in flight), and after a restart the flag is as the
#    override wants.
# 2. dbus-daemon is killed under the running daemon: the daemon exits with a non-zero
#    status (so that systemd's Restart=on-failure restarts it) and says why; a new bus
#    and a restarted daemon: it owns its name again and the runtime override is still in
#    force.
#
# Usage: test-robust-kill9.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
# Environment: SP_KILL9_ROUNDS (default 25).
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"
ROUNDS=${SP_KILL9_ROUNDS:-25}

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 16M
# Policy=balanced, need none: off unless a runtime override says on.
sp_config "[Manager]
Devices=$loop
RescanSec=0"

# The override of $loop in the overrides file: on, off or none. Fails on a malformed file.
override_in_file() {
        local f=$SP_RUNTIME/overrides
        [ -e "$f" ] || { echo none; return 0; }
        if grep -Evq '^(#.*|diskseq=[1-9][0-9]* [A-Za-z0-9._:+-]+ (on|off|auto)( force)?)$' "$f"; then
                echo "malformed overrides file:" >&2
                cat -A "$f" >&2
                return 1
        fi
        awk -v d="$loop" '$2 == d { print $3; found = 1 } END { if (!found) print "none" }' "$f"
}

# The client: op j sets on (j%3==0), off (1) or resets (2); after each acknowledged call
# it appends j to $SP_TMP/acked.
client() {
        local j=0 out
        while :; do
                case $((j % 3)) in
                0) out=$(busctl --system --timeout=5 call org.stablepages1 /org/stablepages1 org.stablepages1.Manager \
                        SetDevicePolicy sst "$loop" on 5 2>&1) ;;
                1) out=$(busctl --system --timeout=5 call org.stablepages1 /org/stablepages1 org.stablepages1.Manager \
                        SetDevicePolicy sst "$loop" off 5 2>&1) ;;
                2) out=$(busctl --system --timeout=5 call org.stablepages1 /org/stablepages1 org.stablepages1.Manager \
                        ResetDevicePolicy st "$loop" 1 2>&1) ;;
                esac || return 0 # the daemon is gone
                echo "$j" >>"$SP_TMP/acked"
                j=$((j + 1))
        done
}
state_of_op() { case $(($1 % 3)) in 0) echo on ;; 1) echo off ;; 2) echo none ;; esac; }

mkdir -p "$SP_RUNTIME"
acked_total=0 during_start=0 tmp_left=0
for ((round = 1; round <= ROUNDS; round++)); do
        : >"$SP_TMP/acked"
        before=$(override_in_file) || sp_fail "round $round: the overrides file does not parse before the start"
        early=$((RANDOM % 5 == 0)) # every fifth round or so: kill during start-up
        if ((early)); then
                env JOURNAL_STREAM=0:0 DBUS_SYSTEM_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" \
                        "$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" >>"$SP_TMP/daemon.log" 2>&1 &
                SP_PID=$!
                sleep "$(printf '0.%03d' $((RANDOM % 100)))"
                kill -KILL "$SP_PID" 2>/dev/null || true
                wait "$SP_PID" 2>/dev/null || true
                during_start=$((during_start + 1))
                after=$(override_in_file) || sp_fail "round $round: the overrides file does not parse after kill -9 during start-up"
                [ "$after" = "$before" ] || sp_fail "round $round: start-up changed the override from $before to $after"
                continue
        fi
        robust_daemon_start
        client &
        cpid=$!
        sleep "$(printf '0.%03d' $((RANDOM % 400)))" # 0-399 ms
        kill -KILL "$SP_PID"
        wait "$SP_PID" 2>/dev/null || true
        wait "$cpid" 2>/dev/null || true
        last=$(tail -n 1 "$SP_TMP/acked")
        acked=$(sp_lines "$SP_TMP/acked")
        acked_total=$((acked_total + acked))

        # Every state file parses.
        now=$(override_in_file) || sp_fail "round $round: the overrides file does not parse after kill -9"
        if [ -e "$SP_RUNTIME/devices.json" ]; then
                jq -e . "$SP_RUNTIME/devices.json" >/dev/null || sp_fail "round $round: devices.json does not parse"
        fi
        # No acknowledged change lost: the last acknowledged op, or the one in flight.
        if [ -n "$last" ]; then
                want1=$(state_of_op "$last") want2=$(state_of_op $((last + 1)))
        else
                want1=$before want2=$(state_of_op 0)
        fi
        [ "$now" = "$want1" ] || [ "$now" = "$want2" ] ||
                sp_fail "round $round: after $acked acknowledged calls (last op $last) the override is $now, want $want1 or $want2"

        # After a restart the flag is as the override wants.
        robust_daemon_start
        want_flag=0
        [ "$now" = on ] && want_flag=1
        sp_wait_for 3000 "round $round: $loop stable_writes=$want_flag after the restart" sp_flag_is "$loop" "$want_flag" >/dev/null
        src=$(sp_state ".devices[] | select(.name == \"$loop\") | .desired_source")
        if [ "$now" = none ]; then [ "$src" = policy ]; else [ "$src" = runtime ]; fi ||
                sp_fail "round $round: override $now but the daemon's view says desired_source=$src"
        sp_daemon_stop
done
tmp_left=$(find "$SP_RUNTIME" -name '*.tmp.*' | wc -l)
sp_log "kill -9: $ROUNDS rounds ($during_start during start-up), $acked_total acknowledged set/reset calls before the kills;" \
        "every state file parsed, no acknowledged override lost, the flag as desired after each restart;" \
        "temporary files left by interrupted writes: $tmp_left"

# 2. The bus goes away under the daemon.
robust_daemon_start
busctl --system call org.stablepages1 /org/stablepages1 org.stablepages1.Manager SetDevicePolicy sst "$loop" on 5 \
        >/dev/null || sp_fail "cannot set the override before the bus restart"
sp_flag_is "$loop" 1 || sp_fail "$loop not on before the bus restart"
off=$(sp_lines "$SP_TMP/daemon.log")
kill "${bus_pids[0]}"
wait "${bus_pids[0]}" 2>/dev/null || true
unset 'bus_pids[0]'
for ((i = 0; i < 250; i++)); do
        kill -0 "$SP_PID" 2>/dev/null || break
        sleep 0.02
done
kill -0 "$SP_PID" 2>/dev/null && sp_fail "the daemon kept running without its bus (it neither reconnected nor exited)"
rc=0
wait "$SP_PID" || rc=$?
[ "$rc" -ne 0 ] || sp_fail "the daemon exited with status 0 on bus loss: Restart=on-failure would not restart it"
sp_log_has_since "$off" "Lost the connection to the system bus" || sp_fail "the daemon did not say why it exited"
sp_flag_is "$loop" 1 || sp_fail "$loop changed when the bus went away"
sp_log "bus restart: the daemon exited with status $rc ($(tail -n +"$((off + 1))" "$SP_TMP/daemon.log" | grep -m1 'Lost the connection'))"
# What systemd does next: a new bus (as dbus.service restarts), then the daemon again.
rm -f "$SP_TMP/bus/system_bus_socket"
bus_start --no-polkit || sp_fail "cannot start the bus again"
robust_daemon_start
out=$(busctl --system call org.stablepages1 /org/stablepages1 org.stablepages1.Manager GetDevice s "$loop") ||
        sp_fail "the restarted daemon does not answer on the new bus"
sp_flag_is "$loop" 1 || sp_fail "$loop lost its runtime override across the bus restart"
sp_state_is ".devices[] | select(.name == \"$loop\") | .desired_source" runtime || sp_fail "the override is not in force"
sp_log "bus restart: the restarted daemon owns org.stablepages1 on the new bus, the override is in force"
sp_daemon_stop
sp_log "robust-kill9: ok"
