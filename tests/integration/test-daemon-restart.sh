#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Restart: kill -9 the daemon and start it again: runtime overrides and the effective
# state of mounted filesystems are as before (a mount made while the flag was 1 is still
# known to run with stable writes, and pending, although the flag now reads 0), while a
# filesystem mounted while the daemon was down is reported as assumed.
#
# Usage: test-daemon-restart.sh [STABLEPAGESD]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
command -v mkfs.ext4 >/dev/null || sp_skip "mkfs.ext4 is not installed"

declare -A L
for x in a b c; do
        n=$(sp_free_loop_number)
        L[$x]=loop$n
        sp_loop_attach "$n" 64M
done
a=${L[a]} b=${L[b]} c=${L[c]}
mkfs.ext4 -q "/dev/$b"
mkfs.ext4 -q "/dev/$c"

# a: off by config, on by a runtime override (kept in runtime_dir/overrides as an earlier
#    version wrote it, keyed by the kernel name only: the daemon binds it to the disk of that
#    name at start, the upgrade path); b: on by config; c: default policy (off).
sp_config "[Manager]
Devices=$a $b $c
RescanSec=0

[Device $a]
StableWrites=off

[Device $b]
StableWrites=on"
mkdir -p "$SP_RUNTIME"
echo "$a on" >"$SP_RUNTIME/overrides"
sp_daemon_start
sp_wait_for 1000 "$a on by the runtime override" sp_flag_is "$a" 1 >/dev/null
sp_state_is ".devices[] | select(.name == \"$a\") | .desired_source" runtime || sp_fail "$a not on by runtime override"
grep -qx "diskseq=$(cat "/sys/block/$a/diskseq") $a on" "$SP_RUNTIME/overrides" ||
        sp_fail "the runtime override of $a was not bound to its diskseq: $(cat "$SP_RUNTIME/overrides")"
grep -q "$a: runtime override on, written by an earlier version and keyed by the kernel name only, is now bound to the disk of that name (diskseq [0-9]*)" "$SP_TMP/daemon.log" ||
        sp_fail "the binding of the earlier version's override of $a was not logged"
sp_wait_for 1000 "$b stable_writes=1" sp_flag_is "$b" 1 >/dev/null

# b mounted while 1, then the policy turns b off: pending.
sp_mount "/dev/$b" "$SP_TMP/mnt-b"
fsq=".filesystems[] | select(.target == \"$SP_TMP/mnt-b\")"
sp_wait_for 1000 "b mount tracked" sp_state_is "$fsq | .effective" on >/dev/null
sp_dropin 50-off.conf "[Device $b]
StableWrites=off"
sp_daemon_reload
sp_wait_for 1000 "$b stable_writes=0" sp_flag_is "$b" 0 >/dev/null
sp_wait_for 1000 "b mount pending" sp_state_is "$fsq | .pending" true >/dev/null
before=$(sp_state "$fsq | [.id, .effective, .origin, .since_usec, .pending] | map(tostring) | join(\" \")")
overrides=$(cat "$SP_RUNTIME/overrides")

# kill -9: no chance to save anything now.
kill -KILL "$SP_PID"
wait "$SP_PID" 2>/dev/null || true
# While it is down: c is mounted (flag 0); nobody recorded how.
sp_mount "/dev/$c" "$SP_TMP/mnt-c"
rm -f "$SP_RUNTIME/devices.json"

sp_daemon_start
after=$(sp_state "$fsq | [.id, .effective, .origin, .since_usec, .pending] | map(tostring) | join(\" \")")
sp_log "restart: b mount before kill -9: $before"
sp_log "restart: b mount after restart:  $after"
[ "$before" = "$after" ] || sp_fail "the effective record of the b mount changed across the restart"
[ "$(cat "$SP_RUNTIME/overrides")" = "$overrides" ] || sp_fail "the runtime overrides file changed"
sp_flag_is "$a" 1 || sp_fail "$a lost its runtime override"
sp_state_is ".devices[] | select(.name == \"$a\") | .desired_source" runtime || sp_fail "$a not on by runtime override after restart"
cq=".filesystems[] | select(.target == \"$SP_TMP/mnt-c\")"
sp_state_is "$cq | [.effective, .origin] | join(\" \")" "off assumed" ||
        sp_fail "the mount made while the daemon was down is not 'off assumed': $(sp_state "$cq")"
sp_log "restart: mount made while down: $(sp_state "$cq | [.effective, .origin] | join(\" \")")"
sp_daemon_stop
sp_log "restart: ok"
