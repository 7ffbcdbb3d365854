#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Calls racing with device removal, and mounts vanishing while they are classified
# (issue 9). Against the daemon on a private system bus:
#
# 1. 8 clients hammer one loop device with GetDevice, property Get, DumpJSON and
#    SetDevicePolicy(runtime, some with apply) while the device is detached and removed,
#    then created again, 10 times: every call is answered (a reply, or NoSuchDevice /
#    UnknownObject / an apply error naming the vanished device; never a timeout, no
#    reply, or a lost connection) and the daemon stays alive and consistent. The race is
#    made by construction, not by timing: the clients call until the 10 cycles are over
#    (bus-load --stop-file), and each cycle waits for the daemon to see the device gone and
#    then back while they call; some calls must have found it missing.
# 2. Property Get, GetAll and Introspect on the object path of a removed device: errors,
#    the daemon answers the next call.
# 3. A loop device with ext4 is mounted and unmounted 300 times while the daemon reads
#    and classifies the mount table (mounts vanish between the table read and the stat of
#    their source and target): afterwards the daemon tracks exactly the mounts that exist,
#    with the right effective state.
#
# Usage: test-robust-bus-race.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"
command -v mkfs.ext4 >/dev/null || sp_skip "mkfs.ext4 is not installed"
[ -x "${SP_BUS_LOAD:-}" ] || sp_skip "no bus-load client (\$SP_BUS_LOAD, built by meson)"

r=$(sp_free_loop_number)
race=loop$r
m=$(sp_free_loop_number)
[ "$m" != "$r" ] || m=$(sp_free_loop_number)
mnt=loop$m
sp_loop_attach "$r" 16M
sp_loop_attach "$m" 64M
mkfs.ext4 -q "/dev/$mnt"
sp_config "[Manager]
Devices=$race $mnt
RescanSec=1

[Device $mnt]
StableWrites=on"
robust_daemon_start
sp_wait_for 2000 "$mnt stable_writes=1" sp_flag_is "$mnt" 1 >/dev/null

# 1. Removal races: the clients call until the cycles are over.
in_view() { jq -e --arg d "$race" '.devices[] | select(.name == $d)' "$SP_RUNTIME/devices.json" >/dev/null; }
"$SP_BUS_LOAD" --device="$race" --clients=8 --calls=5000 --writes=50 --apply --allow-missing --timeout-sec=20 \
        --stop-file="$SP_TMP/race.stop" >"$SP_TMP/race.out" 2>&1 &
load=$!
sp_defer "touch '$SP_TMP/race.stop'; kill $load"
cycles=0
for ((i = 0; i < 10; i++)); do
        sp_loop_destroy "$r" || sp_fail "cannot remove $race"
        sp_wait_for 5000 "$race gone from the daemon's view (cycle $i)" sh -c "! jq -e --arg d $race \
                '.devices[] | select(.name == \$d)' '$SP_RUNTIME/devices.json'" >/dev/null
        losetup "/dev/$race" "$SP_TMP/$race.img" 2>/dev/null ||
                { truncate -s 16M "$SP_TMP/$race.img"; losetup "/dev/$race" "$SP_TMP/$race.img"; } ||
                sp_fail "cannot attach $race again"
        sp_wait_for 5000 "$race back in the daemon's view (cycle $i)" in_view >/dev/null
        kill -0 "$load" 2>/dev/null || sp_fail "the clients stopped calling during cycle $i"
        cycles=$((cycles + 1))
done
touch "$SP_TMP/race.stop"
rc=0
wait "$load" || rc=$?
sed 's/^/# /' "$SP_TMP/race.out"
summary=$(head -1 "$SP_TMP/race.out")
[ "$rc" -eq 0 ] || sp_fail "race: not every call was answered (or an unexpected error): $summary"
grep -q ' unanswered=0 ' <<<"$summary" || sp_fail "race: unanswered calls: $summary"
missing=$(sed -n 's/.* missing=\([0-9]*\) .*/\1/p' <<<"$summary")
((missing > 0)) || sp_fail "race: no call found the device missing in $cycles removals: the race did not happen: $summary"
kill -0 "$SP_PID" 2>/dev/null || sp_fail "the daemon died in the removal race"
robust_call ListDevices >/dev/null || sp_fail "the daemon stopped answering after the removal race"
sp_log "removal race: $cycles removals while 8 clients called, $missing calls found the device missing: $summary"

# 2. The object path of a removed device.
sp_loop_destroy "$r"
sp_wait_for 3000 "$race gone from the daemon's view" sh -c "! jq -e '.devices[] | select(.name == \"$race\")' '$SP_RUNTIME/devices.json'" >/dev/null
path=/org/stablepages1/device/$race
rc=0; out=$(busctl --system get-property org.stablepages1 "$path" org.stablepages1.Device Need 2>&1) || rc=$?
[ $rc -ne 0 ] || sp_fail "get-property on a removed device succeeded: $out"
sp_log "get-property on $path: $out"
rc=0; out=$(dbus-send --system --print-reply --dest=org.stablepages1 "$path" org.freedesktop.DBus.Properties.GetAll \
        string:org.stablepages1.Device 2>&1) || rc=$?
[ $rc -ne 0 ] || sp_fail "GetAll on a removed device succeeded: $out"
busctl --system introspect org.stablepages1 "$path" >/dev/null 2>&1 || true
rc=0; out=$(robust_call GetDevice string:"$race") || rc=$?
[ $rc -ne 0 ] && grep -q org.stablepages1.Error.NoSuchDevice <<<"$out" || sp_fail "GetDevice of a removed device: $out"
robust_call ListDevices >/dev/null || sp_fail "the daemon stopped answering after calls on a removed path"

# 3. Mounts that vanish while the table is read and classified.
mkdir -p "$SP_TMP/mnt"
# umount retries "target is busy" for up to 5 s: on a shared machine another process may hold
# the mount for a moment (a mount namespace made meanwhile by another test gets a slave copy of
# it, and umount propagates); what is tested is the daemon, not who else looks.
busy=0
for ((i = 0; i < 300; i++)); do
        mount "/dev/$mnt" "$SP_TMP/mnt" || sp_fail "mount cycle $i: mount failed"
        for ((t = 0; ; t++)); do
                umount "$SP_TMP/mnt" 2>"$SP_TMP/umount.err" && break
                grep -q "target is busy" "$SP_TMP/umount.err" && ((t < 50)) ||
                        sp_fail "mount cycle $i: umount failed: $(cat "$SP_TMP/umount.err")"
                busy=$((busy + 1))
                sleep 0.1
        done
done
((busy == 0)) || sp_log "mount storm: umount found the target busy $busy time(s) and retried"
kill -0 "$SP_PID" 2>/dev/null || sp_fail "the daemon died in the mount storm"
fsq=".filesystems[] | select(.target == \"$SP_TMP/mnt\")"
sp_wait_for 3000 "no stale mount of $SP_TMP/mnt" sh -c "! jq -e '$fsq' '$SP_RUNTIME/devices.json'" >/dev/null
sp_mount "/dev/$mnt" "$SP_TMP/mnt"
sp_wait_for 3000 "the last mount tracked" sp_state_is "$fsq | [.effective, .origin] | join(\" \")" "on observed" >/dev/null
sp_log "mount storm: 300 mount/umount pairs; afterwards one mount tracked: $(sp_state "$fsq | [.target, .effective, .origin] | join(\" \")")"

sp_daemon_stop
sp_log "robust-bus-race: ok"
