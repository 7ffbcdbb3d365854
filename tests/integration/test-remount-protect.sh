#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The unmount + mount cycle never lowers protection, and writes the flag only through the
# project's one writer (flag.h). An ext4 filesystem on a loop device that the configuration
# says needs stable writes (Need=required), mounted while the flag read 0 (so it runs without
# them, pending on):
#   1. the mount with stable writes on fails once (test hook STABLEPAGES_TEST_REMOUNT_FAIL=
#      mount:1): the old state (off) is never written back on such a disk (the flag never
#      makes a mount fail): the mount is tried again with stable writes on and works; apply
#      says so and exits 0; the flag never read 0; the journal never said "mounting-old"; the
#      daemon tracks it on, not pending; a writer under throttled writeback waits (stable
#      writes in force);
#   2. both mounts fail (mount:2): left unmounted, retried from the journal with stable
#      writes on (stage mounting-new), mounted with them;
#   3. a journal at stage "mounting-old" with the old flag 0 (what an earlier version left
#      after its fallback): its replay mounts with stable writes on, and says so;
#   4. fault injection (STABLEPAGES_TEST_FLAG_WRITE=refuse refuses every flag write and says
#      so): on a disk that needs nothing, the cycle's fallback write and a replay's write are
#      refused, the flag stays as it was, the log names the test hook and the writer, and the
#      filesystem is mounted with the flag as it stays (the state the report says).
#
# Usage: test-remount-protect.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
source "$SP_SRCDIR/remount-lib.sh"
RM_CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
rm_require python3 mkfs.ext4 findmnt timeout
sp_fs_usable ext4 || sp_skip "no ext4 here"
sp_cg_setup

n=$(sp_free_loop_number)
l=loop$n
dir=$SP_TMP/mnt-req
sp_loop_attach "$n" 64M
sp_defer "rm_umount_dev /dev/$l"
sp_config "[Manager]
Devices=$l
RescanSec=0

[Device $l]
Need=required"
sp_mkfs ext4 "/dev/$l"
mkdir -p "$dir"
rm_pause_setup
env0=$SP_DAEMON_ENV
rm_bus_start
base_env=$SP_DAEMON_ENV

# The flag of $l, every 5 ms, into $SP_TMP/flags (a background sampler, stopped at exit).
sampler() { while :; do cat "/sys/block/$l/queue/stable_writes"; sleep 0.005; done >>"$SP_TMP/flags" 2>/dev/null; }
# mounted_off: $dir mounted by hand while the flag reads 0, the daemon stopped.
mounted_off() {
        [ -z "$SP_PID" ] || sp_daemon_stop
        rm_umount_dev "/dev/$l"
        echo 0 >"/sys/block/$l/queue/stable_writes"
        mount "/dev/$l" "$dir" || sp_fail "cannot mount /dev/$l"
}
# start ENV...: the daemon with these test hooks; $dir must be tracked off, pending.
start() {
        SP_DAEMON_ENV="$base_env $*" sp_daemon_start
        rm_wait_bus
        sp_wait_for 3000 "$dir tracked off, pending" \
                sp_state_is "$(rm_fsq "$dir") | [.effective, (.pending | tostring)] | join(\" \")" "off true" >/dev/null
}
apply() {
        rc=0
        out=$("$RM_CTL" --no-pager apply "$l" --remount 2>&1) || rc=$?
        sp_log "apply --remount (exit $rc):"
        sed 's/^/#   /' <<<"$out"
}
tracked_on() {
        sp_wait_for 3000 "$dir tracked on, not pending" \
                sp_state_is "$(rm_fsq "$dir") | [.effective, (.pending | tostring)] | join(\" \")" "on false" >/dev/null
}

mounted_off
rm_fill "$dir"
sp_cg_throttle "$(cat "/sys/block/$l/dev")" "$RM_IOPS"

# 1. The mount with stable writes on fails once: tried again with them, never with the old 0.
start STABLEPAGES_TEST_REMOUNT_FAIL=mount:1
sp_flag_is "$l" 1 || sp_fail "the daemon did not turn stable writes on for $l (need required)"
uid0=$(rm_unique_id "$dir")
sampler &
sampler_pid=$!
sp_defer "kill $sampler_pid"
apply
kill "$sampler_pid"
# What the system shows first: the flag, the mount, what a writer waits; then what is said.
sp_log "the flag during the cycle: $(sort "$SP_TMP/flags" | uniq -c | tr '\n' ' ')"
grep -q 0 "$SP_TMP/flags" && sp_fail "the flag of $l read 0 during the cycle"
rm_is_mounted "$dir" || sp_fail "$dir is not mounted"
[ "$(rm_unique_id "$dir")" != "$uid0" ] || sp_fail "still the old mount"
rm_verify "$dir"
m=$(sp_measure "$dir/page" "$RM_REWRITES")
sp_log "after the cycle: $m"
(($(sp_field rewrite_avg_us "$m") >= 10000)) || sp_fail "the filesystem runs without stable writes"
[ "$rc" = 0 ] || sp_fail "apply --remount exited $rc, expected 0 (mounted with stable writes on)"
grep -q "mnt-req (ext4 on $l): unmounted and mounted again in .*; mounting it with the new state failed: Invalid argument; not falling back to the old state: stable writes stay on: $l: refusing to turn stable writes off: its need is required (force required); mounted it again with the new state; stable writes now on, as decided" <<<"$out" ||
        sp_fail "apply does not say it was mounted again with stable writes on, the old state refused"
[ -z "$(rm_journals)" ] || sp_fail "a journal is left: $(rm_journals)"
tracked_on
sp_log_has_since 0 "mnt-req .*unmounted and mounted again .*not falling back to the old state" ||
        sp_fail "the daemon's log does not say why it did not fall back"
sp_log "1. a required disk's failed mount: mounted again with stable writes on"

# 2. Both attempts fail: left unmounted, retried with stable writes on.
mounted_off
: >"$SP_TMP/flags"
start STABLEPAGES_TEST_REMOUNT_FAIL=mount:2
sampler &
sampler_pid=$!
sp_defer "kill $sampler_pid"
apply
journal=$(cat "$SP_RUNTIME"/cycles/*.mount 2>/dev/null)
[ "$rc" = 1 ] || sp_fail "apply --remount exited $rc, expected 1 (left unmounted)"
grep -q "NOT MOUNTED: mounting it with the new state failed: Invalid argument; not falling back to the old state: .*; mounting it with the new state failed too: Invalid argument .*retrying in 1 s" <<<"$out" ||
        sp_fail "being left unmounted is not reported as such"
grep -qx "stage=mounting-new" <<<"$journal" || sp_fail "the journal does not say mounting-new: $(grep stage= <<<"$journal")"
sp_wait_for 10000 "$dir mounted again by a retry" rm_is_mounted "$dir" >/dev/null
tracked_on
kill "$sampler_pid"
grep -q 0 "$SP_TMP/flags" && sp_fail "the flag of $l read 0 while it was unmounted"
sp_wait_for 3000 "the journal gone" sh -c "[ -z \"\$(find '$SP_RUNTIME/cycles' -maxdepth 1 -type f ! -name '*.lock')\" ]" >/dev/null
rm_verify "$dir"
sp_log "2. both attempts failed: retried from the journal at stage mounting-new, mounted with stable writes on"

# 3. A journal at stage mounting-old with the old flag 0 (an earlier version's fallback): the
# replay mounts with stable writes on. The cycle is stopped after its unmount, the journal
# rewritten as that version left it.
mounted_off
start
rm_kill_at after-umount "$l"
jf=$(ls "$SP_RUNTIME"/cycles/*.mount)
sed -i 's/^stage=.*/stage=mounting-old/' "$jf"
grep -qx "old_flag=0" "$jf" || sp_fail "the journal's old flag is not 0: $(grep _flag= "$jf")"
off=$(sp_lines "$SP_TMP/daemon.log")
SP_DAEMON_ENV=$base_env sp_daemon_start
sp_wait_for 10000 "the replay" sp_log_has_since "$off" "mnt-req .*stable writes stay on: $l: refusing to turn stable writes off.*mounted it again with the new state" >/dev/null
sp_flag_is "$l" 1 || sp_fail "the flag of $l is $(sp_flag "$l") after the replay"
tracked_on
rm_is_mounted "$dir" || sp_fail "$dir is not mounted after the replay"
rm_verify "$dir"
sp_log "3. $(tail -n +"$((off + 1))" "$SP_TMP/daemon.log" | grep -m1 "mnt-req .*stable writes stay on")"

# 4. Fault injection: every flag write refused (test hook). A disk that needs nothing, wanted on:
# the flag set to 1 by hand, as the daemon cannot write it.
sp_daemon_stop
sp_config "[Manager]
Devices=$l
RescanSec=0

[Device $l]
StableWrites=on"
mounted_off
#   the cycle's write: its fallback to the old flag (0) after the mount with the new state failed.
start STABLEPAGES_TEST_FLAG_WRITE=refuse STABLEPAGES_TEST_REMOUNT_FAIL=mount:1
sp_log_has_since 0 "$l: not writing 1 to queue/stable_writes: refused by the test hook STABLEPAGES_TEST_FLAG_WRITE=refuse \\(stablepagesd\\)" ||
        sp_fail "the daemon's own write is not refused by the test hook"
echo 1 >"/sys/block/$l/queue/stable_writes"
apply
[ "$rc" = 0 ] || sp_fail "apply --remount exited $rc"
grep -q "not falling back to the old state: stable writes stay on: $l: not writing 0 to queue/stable_writes: refused by the test hook STABLEPAGES_TEST_FLAG_WRITE=refuse (cycle); mounted it again with the new state" <<<"$out" ||
        sp_fail "the cycle's refused write is not reported with the test hook"
sp_flag_is "$l" 1 || sp_fail "the flag changed: $(sp_flag "$l")"
sp_log_has_since 0 "refused by the test hook STABLEPAGES_TEST_FLAG_WRITE=refuse \\(cycle\\)" || sp_fail "not logged"
tracked_on
sp_log "4. the cycle's flag write goes through flag_write(): refused by the hook, the flag stays 1"
#   a replay's write: the journal wants 1 at stage mounting-new, the flag reads 0.
mounted_off
start STABLEPAGES_TEST_FLAG_WRITE=refuse
echo 1 >"/sys/block/$l/queue/stable_writes"
rm_kill_at after-umount "$l"
echo 0 >"/sys/block/$l/queue/stable_writes"
off=$(sp_lines "$SP_TMP/daemon.log")
SP_DAEMON_ENV="$base_env STABLEPAGES_TEST_FLAG_WRITE=refuse" sp_daemon_start
sp_wait_for 10000 "the replay" sp_log_has_since "$off" "mnt-req .*stable writes stay off: $l: not writing 1 to queue/stable_writes: refused by the test hook STABLEPAGES_TEST_FLAG_WRITE=refuse \\(replay\\); mounted it again with the old state" >/dev/null
sp_flag_is "$l" 0 || sp_fail "the flag changed: $(sp_flag "$l")"
rm_is_mounted "$dir" || sp_fail "$dir is not mounted after the replay"
sp_wait_for 3000 "$dir tracked off (the flag it was mounted with), pending" \
        sp_state_is "$(rm_fsq "$dir") | [.effective, (.pending | tostring)] | join(\" \")" "off true" >/dev/null
rm_verify "$dir"
sp_log "4. a replay's flag write goes through flag_write(): refused by the hook, the flag stays 0, tracked off"
SP_DAEMON_ENV=$env0
sp_log "remount protection: ok"
