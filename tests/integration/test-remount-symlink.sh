#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The unmount + mount cycle never mounts through a changed path and never on top of another
# mount (issue 14), when the daemon mounts by itself (no systemd here; the guest scenario
# remount-kill shows the same through systemd). An ext4 filesystem below root's directories,
# pending; the test hook STABLEPAGES_TEST_REMOUNT_PAUSE stops the cycle after its unmount:
#   1. the mount point's parent is renamed and a symbolic link to another directory put in
#      its place: nothing is mounted at the link's target nor anywhere else, the cycle says
#      NOT MOUNTED and why, apply exits 1, nothing is retried (3 s, the first retry would
#      come after 1 s), status lists it; mounted by hand where it is now, the daemon forgets
#      it and its journal;
#   2. a tmpfs is mounted on the mount point meanwhile: the filesystem is not stacked on it;
#   3. below a directory a user owns, the cycle is refused before anything is touched.
#
# Usage: test-remount-symlink.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
source "$SP_SRCDIR/remount-lib.sh"
RM_CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
rm_require python3 mkfs.ext4 findmnt timeout
sp_fs_usable ext4 || sp_skip "no ext4 here"

n=$(sp_free_loop_number)
l=loop$n
sp_loop_attach "$n" 64M
sp_defer "rm_umount_dev /dev/$l"
sp_config_device "$l" on
rm_pause_setup
rm_bus_start
sp_daemon_start
rm_wait_bus
sp_wait_for 2000 "$l stable_writes=1" sp_flag_is "$l" 1 >/dev/null
sp_mkfs ext4 "/dev/$l"
base=$SP_TMP/sw
mkdir -p "$base/p/mnt" "$base/elsewhere/mnt"
mount "/dev/$l" "$base/p/mnt" || sp_fail "cannot mount /dev/$l"
rm_fill "$base/p/mnt"

# flip SETTING: the policy wants SETTING, the filesystem on TARGET becomes pending.
flip() {
        sp_dropin 50-flip.conf "[Device $l]
StableWrites=$1"
        sp_daemon_reload
        sp_wait_for 10000 "$2 pending" sp_state_is "$(rm_fsq "$2") | .pending" true >/dev/null
}

# paused_cycle: starts the cycle of the pending filesystem and waits until it has unmounted
# it; APID is the PID of stablepagesctl apply --remount.
paused_cycle() {
        rm_pause_open
        "$RM_CTL" --no-pager apply "$l" --remount >"$SP_TMP/apply.out" 2>&1 7<&- &
        APID=$!
        rm_step_to after-umount
        rm_pause_close
}
# finished_cycle: lets it go on; fails unless apply exits 1.
finished_cycle() {
        local rc=0
        rm_release
        wait "$APID" || rc=$?
        sed 's/^/#   /' "$SP_TMP/apply.out"
        [ $rc -eq 1 ] || sp_fail "apply --remount exited $rc, expected 1"
}

# 1. A symbolic link in place of the parent, between the unmount and the mount.
flip off "$base/p/mnt"
paused_cycle
rm_is_mounted "$base/p/mnt" && sp_fail "paused after the unmount, but $base/p/mnt is mounted"
mv "$base/p" "$base/p.moved"
ln -s "$base/elsewhere" "$base/p"
finished_cycle
grep -q "NOT MOUNTED: not mounting it again: the path $base/p/mnt changed: $base/p is a symbolic link or not a directory; not retrying" "$SP_TMP/apply.out" ||
        sp_fail "the result does not say it was not mounted through the changed path"
sleep 3
[ -z "$(findmnt -n --source "/dev/$l")" ] || sp_fail "/dev/$l is mounted: $(findmnt -n --source "/dev/$l")"
[ "$(awk -v t="$base/elsewhere/mnt" '$5 == t' /proc/self/mountinfo)" = "" ] || sp_fail "something is mounted at the link's target"
[ -n "$(rm_journals)" ] || sp_fail "no journal kept for the filesystem left unmounted"
st=$("$RM_CTL" --no-pager status)
grep -q "NOT MOUNTED: $base/p/mnt ($l), left unmounted by an unmount + mount cycle: .*(not retried" <<<"$st" ||
        sp_fail "status does not list $base/p/mnt as not mounted: $st"
sp_state_is ".unmounted[0].target" "$base/p/mnt" || sp_fail "devices.json does not list it under unmounted"
retries=$(grep -c "NOT MOUNTED" "$SP_TMP/daemon.log")
[ "$retries" = 1 ] || sp_fail "$retries NOT MOUNTED lines in the log: retried?"
sp_log "symlink swap: not mounted through $base/p, nothing retried in 3 s, listed as NOT MOUNTED"
mount "/dev/$l" "$base/p.moved/mnt" || sp_fail "cannot mount /dev/$l by hand"
sp_wait_for 10000 "the daemon forgets it" sh -c "! '$RM_CTL' --no-pager status | grep -q 'NOT MOUNTED'" >/dev/null
[ -z "$(rm_journals)" ] || sp_fail "its journal is left: $(rm_journals)"
rm_verify "$base/p.moved/mnt"
umount "$base/p.moved/mnt"
rm "$base/p"
mv "$base/p.moved" "$base/p"
mount "/dev/$l" "$base/p/mnt" || sp_fail "cannot mount /dev/$l again"

# 2. Something mounted on the mount point meanwhile: no stacked mount.
flip on "$base/p/mnt"
paused_cycle
mount -t tmpfs -o size=1m sptest "$base/p/mnt" || sp_fail "cannot mount a tmpfs"
finished_cycle
grep -q "NOT MOUNTED: not mounting it again: something else is mounted on $base/p/mnt already; not retrying" "$SP_TMP/apply.out" ||
        sp_fail "the result does not say something else is mounted there"
[ "$(awk -v t="$base/p/mnt" '$5 == t' /proc/self/mountinfo | wc -l)" = 1 ] || sp_fail "mounts stacked on $base/p/mnt"
[ -z "$(findmnt -n --source "/dev/$l")" ] || sp_fail "/dev/$l is mounted: $(findmnt -n --source "/dev/$l")"
umount "$base/p/mnt"
mount "/dev/$l" "$base/p/mnt" || sp_fail "cannot mount /dev/$l again"
sp_wait_for 10000 "the daemon forgets it" sh -c "! '$RM_CTL' --no-pager status | grep -q 'NOT MOUNTED'" >/dev/null
rm_verify "$base/p/mnt"
sp_log "mounted over meanwhile: not stacked, not retried"

# 3. Below a directory a user owns: refused before the unmount.
umount "$base/p/mnt"
mkdir -p "$base/user/mnt"
chown nobody "$base/user"
mount "/dev/$l" "$base/user/mnt" || sp_fail "cannot mount /dev/$l below $base/user"
flip off "$base/user/mnt"
uid0=$(rm_unique_id "$base/user/mnt")
rc=0
out=$("$RM_CTL" --no-pager apply "$l" --remount 2>&1) || rc=$?
sed 's/^/#   /' <<<"$out"
[ $rc -eq 1 ] || sp_fail "apply --remount exited $rc, expected 1"
grep -q "not cycled: $base/user belongs to UID $(id -u nobody), who could replace mnt by a symbolic link while it is unmounted" <<<"$out" ||
        sp_fail "the refusal does not name the user's directory"
[ "$(rm_unique_id "$base/user/mnt")" = "$uid0" ] || sp_fail "it was unmounted"
sp_log "remount symlink: ok"
