#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The unmount + mount cycle through systemd, for a mount systemd manages (issue 7). No
# systemd runs on the test machine, so fake-systemd (next to this file) stands in for its
# D-Bus API on a private system bus: it serves a .mount unit for the test's mount point
# (named by systemd-escape, so the daemon's unit naming is checked against systemd's) and
# carries out restart and start jobs by unmounting and mounting as the unit would. This
# proves the daemon's side of the protocol (which calls, which properties, waiting for the
# job), not systemd's behaviour. An ext4 filesystem mounted with stable writes on, pending
# off:
#   1. an active service requires the unit: restarting it would restart the service, so
#      the daemon refuses, without a restart job;
#   2. the restart job unmounts but cannot mount: the daemon writes the old flag and has
#      systemd start the unit: mounted again with the old state, reported as a failure;
#   3. the restart works: cycled through systemd (RestartUnit with mode replace), new
#      state in effect, files intact;
#   4. systemd serves no unit for the mount point: the daemon does the cycle itself and
#      says why systemd did not;
#   5. the daemon runs sandboxed (a mount namespace of its own, no CAP_SYS_ADMIN: it cannot
#      enter the host's namespace): the cycle still works through systemd, checked from
#      PID 1's mount table;
#   6. the same sandboxed daemon without systemd: it cannot do the cycle and says so,
#      leaving the filesystem mounted and pending.
#
# Usage: test-remount-systemd.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
source "$SP_SRCDIR/remount-lib.sh"
RM_CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
rm_require python3 systemd-escape mkfs.ext4 unshare setpriv
sp_fs_usable ext4 || sp_skip "no ext4 here"
FAKE=${FAKE_SYSTEMD:-}
if [ -z "$FAKE" ]; then
        FAKE=$SP_TMP/fake-systemd
        read -ra flags <<<"$(pkg-config --cflags --libs libsystemd mount)" || sp_skip "no libsystemd or libmount"
        "${CC:-cc}" -std=gnu11 -O2 -o "$FAKE" "$SP_SRCDIR/fake-systemd.c" "${flags[@]}" ||
                sp_skip "cannot build fake-systemd"
fi

# Below a shared mount point (as systemd's /), so that a sandboxed daemon's copy of the
# mount is a slave that an unmount on the host reaches.
mkdir -p "$SP_TMP/shared"
mount --bind "$SP_TMP/shared" "$SP_TMP/shared" || sp_fail "cannot bind-mount $SP_TMP/shared"
sp_defer "umount '$SP_TMP/shared'"
mount --make-shared "$SP_TMP/shared" || sp_fail "cannot make $SP_TMP/shared shared"

n=$(sp_free_loop_number)
l=loop$n
dir=$SP_TMP/shared/mnt-sd
unit=$(systemd-escape --path --suffix=mount "$dir")
sp_loop_attach "$n" 64M
sp_config_device "$l" on
rm_bus_start
sp_daemon_start
rm_wait_bus
rm_monitor_start
sp_wait_for 2000 "$l stable_writes=1" sp_flag_is "$l" 1 >/dev/null
sp_mkfs ext4 "/dev/$l"
sp_mount "/dev/$l" "$dir"
rm_fill "$dir"
opts=$(rm_options "$dir")
vfs=$(awk '{ print $6 }' <<<"$(rm_mountinfo "$dir")")

# flip on|off: the policy's word for the disk; waits until the mount is pending.
flip() {
        sp_dropin 50-flip.conf "[Device $l]
StableWrites=$1"
        sp_daemon_reload
        sp_wait_for 2000 "pending" sp_state_is "$(rm_fsq "$dir") | .pending" true >/dev/null
}
FAKE_PID=
fake_start() { # FAIL_MOUNTS [REQUIRED_BY] [UNIT]
        fake_stop
        : >"$SP_TMP/fake.log"
        "$FAKE" "${3:-$unit}" "$dir" "/dev/$l" ext4 "$vfs" "$1" ${2:+"$2"} >>"$SP_TMP/fake.log" 2>&1 &
        FAKE_PID=$!
        sp_defer "kill $FAKE_PID 2>/dev/null"
        sp_wait_for 3000 "fake-systemd on the bus" grep -q "^ready" "$SP_TMP/fake.log" >/dev/null
}
fake_stop() {
        [ -n "$FAKE_PID" ] || return 0
        kill "$FAKE_PID" 2>/dev/null
        wait "$FAKE_PID" 2>/dev/null || true
        FAKE_PID=
        sp_wait_for 3000 "systemd1 gone from the bus" sh -c '! busctl --system status org.freedesktop.systemd1' >/dev/null
}
apply() { # EXPECTED_EXIT: runs apply --remount, prints its output
        local rc=0 out
        out=$("$RM_CTL" --no-pager apply "$l" --remount 2>&1) || rc=$?
        [ "$rc" = "$1" ] || sp_fail "apply $l --remount exited $rc, expected $1: $out"
        echo "$out"
}

flip off
uid0=$(rm_unique_id "$dir")

# 1. An active unit requires the mount unit: not restarted.
fake_start 0 app.service
out=$(apply 1)
grep -q "not cycled: restarting $(sed 's/\\/\\\\/g' <<<"$unit") would restart app.service too" <<<"$out" ||
        sp_fail "the dependent unit does not stop the cycle: $out"
grep -q "^GetUnit $(sed 's/\\/\\\\/g' <<<"$unit")$" "$SP_TMP/fake.log" || sp_fail "the daemon asked for another unit name: $(cat "$SP_TMP/fake.log")"
grep -q "^RestartUnit" "$SP_TMP/fake.log" && sp_fail "a restart job was queued anyway"
[ "$(rm_unique_id "$dir")" = "$uid0" ] || sp_fail "the filesystem was unmounted"
sp_log "1. $(grep "not cycled" <<<"$out")"

# 2. The restart job unmounts but the mount fails: the old flag, then StartUnit.
fake_start 1
out=$(apply 1)
grep -q "THE CYCLE FAILED: systemd unmounted it but could not mount it again (failed); systemd mounted it again with the old state" <<<"$out" ||
        sp_fail "the failed restart is not reported: $out"
grep -q "^RestartUnit $(sed 's/\\/\\\\/g' <<<"$unit") replace" "$SP_TMP/fake.log" || sp_fail "no restart job"
grep -q "^StartUnit $(sed 's/\\/\\\\/g' <<<"$unit") replace" "$SP_TMP/fake.log" || sp_fail "no start job after the failed restart"
rm_is_mounted "$dir" || sp_fail "$dir is not mounted"
[ "$(rm_options "$dir")" = "$opts" ] || sp_fail "options changed"
rm_verify "$dir"
sp_wait_for 2000 "effective on (old state), pending" \
        sp_state_is "$(rm_fsq "$dir") | [.effective, (.pending | tostring)] | join(\" \")" "on true" >/dev/null
sp_log "2. $(grep "THE CYCLE FAILED" <<<"$out")"

# 3. The restart works.
fake_start 0
uid1=$(rm_unique_id "$dir")
out=$(apply 0)
grep -q "mnt-sd (ext4 on $l): unmounted and mounted again in .* ms, in systemd ($(sed 's/\\/\\\\/g' <<<"$unit")); stable writes now off, as decided" <<<"$out" ||
        sp_fail "not cycled through systemd: $out"
[ "$(rm_unique_id "$dir")" != "$uid1" ] || sp_fail "still the same mount"
[ "$(rm_options "$dir")" = "$opts" ] || sp_fail "options changed"
rm_verify "$dir"
sp_wait_for 2000 "effective off" sp_state_is "$(rm_fsq "$dir") | [.effective, (.pending | tostring)] | join(\" \")" "off false" >/dev/null
sed 's/^/#   fake-systemd: /' "$SP_TMP/fake.log"
sp_log "3. $(grep "unmounted and mounted again" <<<"$out")"

# 4. systemd is there but has no unit for this mount point: the daemon does it itself.
fake_start 0 "" other.mount
flip on
out=$(apply 0)
grep -q "unmounted and mounted again in .* ms, in .*(not through systemd: systemd has no unit $(sed 's/\\/\\\\/g' <<<"$unit") loaded)" <<<"$out" ||
        sp_fail "no fallback from systemd: $out"
sp_wait_for 2000 "effective on" sp_state_is "$(rm_fsq "$dir") | .effective" on >/dev/null
rm_verify "$dir"
sp_log "4. $(grep "unmounted and mounted again" <<<"$out")"

# 5. A sandboxed daemon: its own mount namespace, no CAP_SYS_ADMIN (no setns, no mount).
real=$(readlink -f "$SP_BIN")
printf '#!/bin/sh\nexec unshare -m --propagation slave setpriv --bounding-set -sys_admin -- %q "$@"\n' "$real" \
        >"$SP_TMP/stablepagesd-sandboxed"
chmod +x "$SP_TMP/stablepagesd-sandboxed"
sp_daemon_stop
SP_BIN=$SP_TMP/stablepagesd-sandboxed sp_daemon_start
rm_wait_bus
[ "$(readlink "/proc/$SP_PID/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || sp_fail "the daemon is not in a namespace of its own"
fake_start 0
flip off
uid2=$(rm_unique_id "$dir")
out=$(apply 0)
grep -q "mnt-sd (ext4 on $l): unmounted and mounted again in .* ms, in systemd ($(sed 's/\\/\\\\/g' <<<"$unit")); stable writes now off" <<<"$out" ||
        sp_fail "the sandboxed daemon did not cycle through systemd: $out"
[ "$(rm_unique_id "$dir")" != "$uid2" ] || sp_fail "still the same mount"
rm_verify "$dir"
sp_wait_for 2000 "effective off" sp_state_is "$(rm_fsq "$dir") | .effective" off >/dev/null
sp_log "5. sandboxed: $(grep "unmounted and mounted again" <<<"$out")"

# 6. The sandboxed daemon without systemd: nothing it can do, and it says so.
fake_stop
flip on
uid3=$(rm_unique_id "$dir")
out=$(apply 1)
grep -q "mnt-sd (ext4 on $l): not cycled: cannot enter .*Operation not permitted" <<<"$out" ||
        sp_fail "the sandboxed daemon does not say why it cannot cycle: $out"
[ "$(rm_unique_id "$dir")" = "$uid3" ] || sp_fail "the filesystem was touched"
sp_state_is "$(rm_fsq "$dir") | .pending" true || sp_fail "not pending any more"
sp_log "6. sandboxed, no systemd: $(grep "not cycled" <<<"$out")"
sp_log "remount through systemd: ok"
