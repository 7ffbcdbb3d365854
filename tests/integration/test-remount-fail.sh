#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A mount that fails during the unmount + mount cycle (issue 7). The test hook
# STABLEPAGES_TEST_REMOUNT_FAIL=mount:N (test-only, stablepagesd(8)) makes the first N mount
# attempts of cycles use an option no filesystem knows, so mount(2) fails with EINVAL after
# the filesystem was unmounted. An ext4 filesystem with files whose checksums were taken,
# mounted with stable writes on, pending off:
#   1. mount:1: the mount with the new state fails; the daemon writes the old flag back and
#      mounts it again: it is mounted (a new mount, same options), runs with its old state
#      (the writer still stalls tens of ms, the daemon says effective on), stays pending
#      with the reason, the error is logged and signalled, Apply says so, no file is lost;
#   2. mount:3: both mounts of the cycle fail: the filesystem is left unmounted, reported
#      loudly ("NOT MOUNTED", signal, error log), its disk keeps the old flag, and the
#      daemon retries with backoff (1 s, 2 s) until the mount works (the 4th attempt): it
#      is mounted again with the old state, files intact;
#   3. mount:2, and the first retry cannot even start its process (the daemon's open file
#      limit lowered with prlimit: pipe2() fails): the filesystem stays listed unmounted with
#      that reason (the Unmounted property), and the next retry, the limit back, mounts it.
#
# Usage: test-remount-fail.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
source "$SP_SRCDIR/remount-lib.sh"
RM_CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
rm_require python3 mkfs.ext4
sp_fs_usable ext4 || sp_skip "no ext4 here"
sp_cg_setup

n=$(sp_free_loop_number)
l=loop$n
dir=$SP_TMP/mnt-fail
sp_loop_attach "$n" 64M
sp_config_device "$l" on
rm_bus_start
SP_DAEMON_ENV="$SP_DAEMON_ENV STABLEPAGES_TEST_REMOUNT_FAIL=mount:1" sp_daemon_start
rm_wait_bus
rm_monitor_start
sp_wait_for 2000 "$l stable_writes=1" sp_flag_is "$l" 1 >/dev/null
sp_mkfs ext4 "/dev/$l"
sp_mount "/dev/$l" "$dir"
rm_fill "$dir"
sp_cg_throttle "$(cat "/sys/block/$l/dev")" "$RM_IOPS"
opts=$(rm_options "$dir")
sp_dropin 50-off.conf "[Device $l]
StableWrites=off"
sp_daemon_reload
sp_wait_for 2000 "pending" sp_state_is "$(rm_fsq "$dir") | [.effective, (.pending | tostring)] | join(\" \")" "on true" >/dev/null
uid0=$(rm_unique_id "$dir")

# 1. The mount with the new state fails; the old state comes back.
rc=0
out=$("$RM_CTL" --no-pager apply "$l" --remount 2>&1) || rc=$?
sp_log "apply --remount (exit $rc):"
sed 's/^/#   /' <<<"$out"
[ "$rc" = 1 ] || sp_fail "apply --remount with a failing mount exited $rc, expected 1"
grep -q "mnt-fail (ext4 on $l): THE CYCLE FAILED: mounting it with the new state failed: Invalid argument; mounted it again with the old state" <<<"$out" ||
        sp_fail "the failure is not reported as such"
rm_is_mounted "$dir" || sp_fail "$dir is not mounted"
uid1=$(rm_unique_id "$dir")
[ "$uid1" != "$uid0" ] || sp_fail "still the old mount: was it unmounted at all?"
[ "$(rm_options "$dir")" = "$opts" ] || sp_fail "options changed: '$opts' -> '$(rm_options "$dir")'"
rm_verify "$dir"
sp_wait_for 2000 "effective on (old state), pending, with the reason" \
        sp_state_is "$(rm_fsq "$dir") | [.effective, (.pending | tostring), (.reason | startswith(\"takes effect at next mount (the last cycle failed: mounting it with the new state failed\") | tostring)] | join(\" \")" "on true true" >/dev/null
sp_log_has_since 0 "error: .*mnt-fail .*THE CYCLE FAILED" || sp_fail "the failure was not logged as an error"
sp_wait_for 2000 "RemountFinished FAILED" grep -q "^remount  $dir on $l: FAILED .*THE CYCLE FAILED" "$SP_TMP/monitor.log" >/dev/null
m=$(sp_measure "$dir/page" "$RM_REWRITES")
sp_log "after the failed cycle: $m"
(($(sp_field rewrite_avg_us "$m") >= 10000)) || sp_fail "the filesystem does not run with its old state (stable writes on)"
sp_log "failed mount: mounted again with the old state, files intact"

# 2. Both mounts fail: left unmounted, reported loudly, retried until it is back.
sp_daemon_stop
SP_DAEMON_ENV="$SP_DAEMON_ENV STABLEPAGES_TEST_REMOUNT_FAIL=mount:3" sp_daemon_start
rm_wait_bus
sp_wait_for 2000 "pending again" sp_state_is "$(rm_fsq "$dir") | .pending" true >/dev/null
rc=0
start=$(sp_now_ms)
out=$("$RM_CTL" --no-pager apply "$l" --remount 2>&1) || rc=$?
sp_log "apply --remount (exit $rc):"
sed 's/^/#   /' <<<"$out"
[ "$rc" = 1 ] || sp_fail "apply --remount exited $rc, expected 1"
grep -q "mnt-fail (ext4 on $l): NOT MOUNTED: mounting it with the new state failed: Invalid argument; mounting it with the old state failed too: Invalid argument .*retrying in 1 s" <<<"$out" ||
        sp_fail "being left unmounted is not reported"
rm_is_mounted "$dir" && sp_fail "$dir is mounted although every mount failed? $(rm_mountinfo "$dir")"
sp_flag_is "$l" 1 || sp_fail "$l does not keep the old flag while its filesystem is unmounted"
sp_log_has_since 0 "error: .*mnt-fail .*NOT MOUNTED" || sp_fail "NOT MOUNTED was not logged as an error"
waited=$(sp_wait_for 15000 "$dir mounted again by the retries" rm_is_mounted "$dir")
sp_log "mounted again $(($(sp_now_ms) - start)) ms after the request (waited $waited ms)"
sp_wait_for 2000 "the retry that worked, signalled" grep -q "^remount  $dir on $l: FAILED .*mounted it again with the old state after 2 retries" "$SP_TMP/monitor.log" >/dev/null
grep -c "^remount  $dir on $l: FAILED .*NOT MOUNTED" "$SP_TMP/monitor.log" | { read -r c; ((c >= 2)) || sp_fail "expected a NOT MOUNTED signal per failed attempt, got $c"; }
sed -n "s/^remount  .*NOT MOUNTED/# signal: ... NOT MOUNTED/p; s/^remount  .*after 2 retries.*/# signal: &/p" "$SP_TMP/monitor.log"
[ "$(rm_options "$dir")" = "$opts" ] || sp_fail "options changed: '$opts' -> '$(rm_options "$dir")'"
rm_verify "$dir"
sp_wait_for 2000 "effective on (old state)" sp_state_is "$(rm_fsq "$dir") | .effective" on >/dev/null
sp_wait_for 2000 "the disk released: the policy's flag again" sp_flag_is "$l" 0 >/dev/null
sp_log "left unmounted: retried with backoff and mounted again with the old state, files intact"

# 3. A retry whose process cannot start: its reason says so (its old reason was freed and then
#    copied: a use after free).
sp_daemon_stop
SP_DAEMON_ENV="$SP_DAEMON_ENV STABLEPAGES_TEST_REMOUNT_FAIL=mount:2" sp_daemon_start
rm_wait_bus
sp_wait_for 2000 "pending again" sp_state_is "$(rm_fsq "$dir") | .pending" true >/dev/null
# The lowest file descriptor the daemon has free: its limit there, the next pipe fails.
lowest_free() {
        local used fd=0
        used=" $(ls "/proc/$SP_PID/fd" | tr '\n' ' ') "
        while [[ $used == *" $fd "* ]]; do fd=$((fd + 1)); done
        echo "$fd"
}
hard=$(prlimit --pid "$SP_PID" --nofile --output HARD --noheadings | tr -d ' ')
rc=0
off=$(sp_lines "$SP_TMP/daemon.log")
out=$("$RM_CTL" --no-pager apply "$l" --remount 2>&1) || rc=$?
prlimit --pid "$SP_PID" --nofile="$(lowest_free):$hard" || sp_fail "cannot lower the daemon's open file limit"
grep -q "NOT MOUNTED: .*retrying in 1 s" <<<"$out" || sp_fail "apply: $out"
sp_wait_for 5000 "a retry that cannot start" sp_log_has_since "$off" "mnt-fail .* is NOT MOUNTED and its replay cannot start: Too many open files" >/dev/null
unmounted=$(busctl --system --json=short get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager Unmounted)
prlimit --pid "$SP_PID" --nofile="$hard:$hard"
sp_log "Unmounted: $unmounted"
[ "$(jq -r '.data[0][2]' <<<"$unmounted")" = "its replay cannot start: Too many open files" ] ||
        sp_fail "the reason of the retry that could not start is not said: $unmounted"
sp_wait_for 10000 "$dir mounted again by the next retry" rm_is_mounted "$dir" >/dev/null
rm_verify "$dir"
sp_log "a retry that could not start: said so, and the next one mounted it"
sp_log "remount failures: ok"
