#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Bad configuration against a running daemon (issue 9). The configuration in force turns
# stable writes on for the test's loop device. Each bad drop-in below also says
# StableWrites=off for it, so that a configuration applied in part would show at once.
# For each: SIGHUP and the D-Bus Reload keep the last good configuration (the flag stays
# 1, the daemon's view still says on, Reload answers ConfigInvalid naming file:line), and
# `stablepagesctl check-config` reports the problem as file:line (file: for a file that
# cannot be read at all) and exits 1. Then a drop-in is replaced (rename) over and over,
# alternating a bad and a good version, while the daemon reloads: every reload either
# applies a whole good version or keeps the last good one.
#
# Usage: test-robust-config.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 64M
sp_config_device "$loop" on
robust_daemon_start
sp_wait_for 2000 "$loop stable_writes=1" sp_flag_is "$loop" 1 >/dev/null
d=$SP_ETC/stablepages.conf.d
OFF="[Device $loop]
StableWrites=off"

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

still_good() { # WHAT: the last good configuration is in force
        sleep 0.1 # a wrong reconcile would have written by now
        sp_flag_is "$loop" 1 || fail "$1: $loop stable_writes changed to $(sp_flag "$loop")"
        sp_state_is ".devices[] | select(.name == \"$loop\") | .desired" on || fail "$1: the daemon's view changed"
}

# check NAME WHERE MESSAGE: the bad files are in place; WHERE is "FILE:LINE" or "FILE" (a
# file that cannot be read at all); MESSAGE a fixed string of the diagnostic.
check() {
        local name=$1 where=$2 msg=$3 off out rc
        local re_where=${where//./\\.}
        # SIGHUP
        off=$(sp_lines "$SP_TMP/daemon.log")
        sp_daemon_reload
        sp_log_has_since "$off" "$re_where: " || fail "$name: SIGHUP did not log $where"
        sp_log_has_since "$off" "keeping the configuration in force" || fail "$name: SIGHUP did not keep the configuration"
        still_good "$name (SIGHUP)"
        # D-Bus Reload
        rc=0; out=$(robust_call Reload) || rc=$?
        [ $rc -ne 0 ] && grep -q "org.stablepages1.Error.ConfigInvalid" <<<"$out" && grep -qF "$where: " <<<"$out" &&
                grep -qF "$msg" <<<"$out" || fail "$name: Reload answered rc=$rc: $out"
        still_good "$name (Reload)"
        # check-config
        rc=0; out=$("$SP_CTL" check-config --config-dir="$SP_ETC" 2>&1) || rc=$?
        if [[ $where == *:* ]]; then
                grep -qF "$d/${where%%:*}:${where#*:}: error: $msg" <<<"$out" || fail "$name: check-config: $out"
        else
                grep -qF "$d/$where: error: $msg" <<<"$out" || fail "$name: check-config: $out"
        fi
        [ $rc -eq 1 ] || fail "$name: check-config exited $rc, want 1"
        kill -0 "$SP_PID" 2>/dev/null || sp_fail "the daemon died during: $name"
        sp_log "$name: kept the last good configuration; check-config: $(grep -m1 ' error: ' <<<"$out")"
        rm -rf "${d:?}"/*
}

# 1. A value out of range, after a valid line that must not apply alone.
sp_dropin 50-bad.conf "$OFF
[Manager]
RescanSec=86401"
check "value out of range" 50-bad.conf:4 'invalid RescanSec= value "86401"'

sp_dropin 50-bad.conf "[Manager]
StallBudgetMSec=99999999999999999999999
$OFF"
check "value out of range (overflow)" 50-bad.conf:2 'invalid StallBudgetMSec= value "99999999999999999999999"'

# 2. Duplicated sections: merged, later wins; one with a bad value rejects the file.
sp_dropin 50-bad.conf "$OFF
[Device $loop]
StableWrites=off
[Device $loop]
StableWrites=sideways"
check "duplicated section with a bad value" 50-bad.conf:6 'invalid StableWrites= value "sideways"'
sp_dropin 50-dup.conf "$OFF
[Manager]
[Device $loop]
StableWrites=on
[Manager]"
off=$(sp_lines "$SP_TMP/daemon.log")
sp_daemon_reload
sp_log_has_since "$off" "Configuration reloaded" || fail "duplicated sections: a valid file was rejected"
still_good "duplicated sections (the later on wins)"
rm -rf "${d:?}"/*

# 3. A huge file (2 MiB; at most 1 MiB is read).
{ printf '%s\n' "$OFF"; head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' '#'; } >"$d/50-bad.conf"
check "huge file" 50-bad.conf "file is too large"

# 4. A NUL byte, and bytes that are not UTF-8.
printf '%s\nPolicy\0=latency\n' "$OFF" >"$d/50-bad.conf"
check "NUL byte" 50-bad.conf:3 "line contains a NUL byte (at column 7)"
printf '%s\n# caf\xe9\n' "$OFF" >"$d/50-bad.conf"
check "non-UTF-8" 50-bad.conf:3 "line is not valid UTF-8 (byte 0xe9 at column 6)"

# 5. Symlink loops in the drop-in directory (the off is in a good file next to them).
sp_dropin 40-off.conf "$OFF"
ln -s 51-bad.conf "$d/50-bad.conf"
ln -s 50-bad.conf "$d/51-bad.conf"
check "symlink loop" 50-bad.conf "cannot read: Too many levels of symbolic links"

# 6. Unreadable files: a directory and a FIFO named *.conf (the daemon runs as root, which
#    file modes do not stop; mode 000 as another user is covered by tests/unit/test-config.c).
sp_dropin 40-off.conf "$OFF"
mkdir "$d/50-bad.conf"
check "directory" 50-bad.conf "cannot read: Is a directory"
sp_dropin 40-off.conf "$OFF"
mkfifo "$d/50-bad.conf"
check "FIFO" 50-bad.conf "not a regular file"

# 7. A drop-in replaced (renamed over) while the daemon reloads, 200 times, alternating a
#    version with a bad line and one without: every reload applies a whole good version
#    (on) or keeps the last good one; the off of the bad version never applies.
GOOD="[Device $loop]
StableWrites=on"
BAD="$OFF
[Manager]
RescanSec=-1"
printf '%s\n' "$GOOD" >"$SP_TMP/good.conf"
printf '%s\n' "$BAD" >"$SP_TMP/bad.conf"
cp "$SP_TMP/good.conf" "$d/50-flip.conf"
(
        for ((i = 0; i < 200; i++)); do
                if ((i % 2)); then src=$SP_TMP/bad.conf; else src=$SP_TMP/good.conf; fi
                cp "$src" "$d/.50-flip.tmp" && mv -f "$d/.50-flip.tmp" "$d/50-flip.conf"
        done
) &
flipper=$!
sp_defer "kill $flipper"
off=$(sp_lines "$SP_TMP/daemon.log")
reloads=0 rejected=0 accepted=0
while kill -0 "$flipper" 2>/dev/null || ((reloads < 20)); do
        if ((reloads % 2)); then
                out=$(robust_call Reload) && accepted=$((accepted + 1)) || {
                        grep -q ConfigInvalid <<<"$out" || fail "flip: Reload answered: $out"
                        rejected=$((rejected + 1))
                }
        else
                sp_daemon_reload
        fi
        reloads=$((reloads + 1))
        sp_flag_is "$loop" 1 || fail "flip: $loop turned off after reload $reloads"
done
wait "$flipper"
if sp_log_has_since "$off" "$loop: stable writes on -> off"; then fail "flip: the bad version applied"; fi
still_good "flip"
sp_log "flip: $reloads reloads while the drop-in was replaced 200 times: D-Bus Reload accepted $accepted, rejected $rejected; the flag stayed on"
kill -0 "$SP_PID" || sp_fail "the daemon died"

[ $fails -eq 0 ] || sp_fail "$fails check(s) failed"
sp_daemon_stop
sp_log "robust-config: ok"
