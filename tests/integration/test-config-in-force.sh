#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The udev applier and the daemon decide with the same configuration (stablepages.conf(5), IN
# FORCE): after a reload whose files have an error, the daemon keeps the configuration in force
# and the applier, run as udev runs it for a change uevent, decides with that one too, so that
# the flag does not flap between them. On a loop device of the test's own:
#
# 1. Configuration A (StableWrites=on for the loop device): the daemon turns the flag on.
# 2. Configuration B (StableWrites=off, and a bad line): the reload keeps A (flag 1). The
#    applier reports B's bad line with file:line, says it decides with the daemon's
#    configuration (A, in RUNTIME_DIR/config.conf), and leaves the flag at 1; so does
#    stablepagesd dump (desired on). A change
#    uevent of the device: the daemon leaves the flag at 1 too, and nothing turned it off
#    meanwhile (sampled every 20 ms for a second).
# 3. The daemon stopped: the applier takes B without its bad line (flag 0), as the daemon does
#    at its start; the daemon started again decides off too and leaves the flag at 0.
#
# Usage: test-config-in-force.sh [STABLEPAGESD]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 16M
conf=$SP_ETC/stablepages.conf
applier() {
        "$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" --udev-data-dir= --log-target=console \
                apply "$loop" 2>&1
}
out='' rc=0
desired_is() { sp_state_is ".devices[] | select(.name == \"$loop\") | .desired" "$1"; }
# never_off MS: true when the flag of the loop device read 1 every 20 ms for MS milliseconds.
never_off() {
        local end=$(($(sp_now_ms) + $1))
        while (($(sp_now_ms) < end)); do
                sp_flag_is "$loop" 1 || return 1
                sleep 0.02
        done
}

# --- 1. A: on ----------------------------------------------------------------------------
sp_config "[Manager]
Policy=latency
Devices=$loop
RescanSec=0

[Device $loop]
StableWrites=on"
echo 0 >"/sys/block/$loop/queue/stable_writes"
sp_daemon_start
sp_wait_for 2000 "the daemon turning $loop on" sp_flag_is "$loop" 1 >/dev/null
sp_log "A: $loop on"

# --- 2. B with an error: the daemon keeps A, and so does the applier ---------------------
sp_config "[Manager]
Policy=latency
Devices=$loop
RescanSec=0
ApplyMounted=sometimes

[Device $loop]
StableWrites=off"
off=$(sp_lines "$SP_TMP/daemon.log")
sp_daemon_reload
sp_log_has_since "$off" "keeping the configuration in force" || sp_fail "the reload with an error did not keep A"
sp_flag_is "$loop" 1 || sp_fail "$loop reads $(sp_flag "$loop") after the reload that kept A"
sp_run out applier
sp_log "applier: $out"
sp_flag_is "$loop" 1 || sp_fail "the applier turned $loop $(sp_flag "$loop") with B, which the daemon did not take: $out"
{ [ $rc -eq 0 ] && grep -qF "$conf:5:" <<<"$out" &&
        grep -q "deciding with the configuration stablepagesd (pid $SP_PID) keeps in force" <<<"$out"; } ||
        sp_fail "the applier with B: exit $rc: $out"
grep -qx "StableWrites=on" "$SP_RUNTIME/config.conf" && grep -qx "Devices=$loop" "$SP_RUNTIME/config.conf" ||
        sp_fail "A is not in $SP_RUNTIME/config.conf: $(cat "$SP_RUNTIME/config.conf" 2>&1)"
out=$("$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" --udev-data-dir= dump --json "$loop" 2>/dev/null) || true
[ "$(jq -r '.[0].desired' <<<"$out" 2>/dev/null)" = on ] || sp_fail "dump with B does not decide as the daemon: $out"
off=$(sp_lines "$SP_TMP/daemon.log")
echo change >"/sys/block/$loop/uevent"
never_off 1000 || sp_fail "$loop was turned off after the change uevent"
sp_log_has_since "$off" "$loop: stable writes" && sp_fail "the daemon changed $loop after the uevent: $(tail -n +"$((off + 1))" "$SP_TMP/daemon.log")"
desired_is on || sp_fail "the daemon's decision for $loop: $(sp_state ".devices[] | select(.name == \"$loop\")")"
sp_run out applier
{ [ $rc -eq 0 ] && sp_flag_is "$loop" 1; } || sp_fail "the applier after the uevent: exit $rc, flag $(sp_flag "$loop"): $out"
sp_log "B with an error: the daemon, the applier and dump keep A; the flag stayed 1 through a change uevent"

# --- 3. no daemon: the files without their bad line, as the daemon reads them at start ----
sp_daemon_stop
sp_run out applier
sp_log "applier without the daemon: $out"
{ [ $rc -eq 0 ] && sp_flag_is "$loop" 0 && grep -qF "$conf:5:" <<<"$out"; } ||
        sp_fail "the applier without a daemon: exit $rc, flag $(sp_flag "$loop"): $out"
grep -q "keeps in force" <<<"$out" && sp_fail "the applier used the copy of a daemon that is gone: $out"
sp_daemon_start
desired_is off || sp_fail "the restarted daemon's decision for $loop: $(sp_state ".devices[] | select(.name == \"$loop\")")"
sp_flag_is "$loop" 0 || sp_fail "the restarted daemon turned $loop $(sp_flag "$loop")"
sp_log "no daemon: the applier took B without its bad line (flag 0), and so did the daemon at its start"

sp_daemon_stop
sp_log "config-in-force: ok"
