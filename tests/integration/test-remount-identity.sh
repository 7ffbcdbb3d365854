#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A journal of an interrupted unmount + mount cycle is replayed only onto the disk and the
# filesystem it was written for. An ext4 filesystem on a loop device, turned on by the policy
# and cycled; the cycle is stopped after its unmount (test hook STABLEPAGES_TEST_REMOUNT_PAUSE),
# the daemon and the cycle killed, and before the next daemon starts:
#   1. the loop device is detached and another image with another ext4 attached under the same
#      name (a USB disk pulled and another one plugged: a new diskseq): the replay is refused
#      at error level, naming the diskseq that differs and the command that mounts it by hand;
#      nothing is mounted (not the other disk's filesystem either); the journal is kept in
#      cycles-refused/; the name is released: the daemon writes the new disk's flag (on), and
#      nothing is listed unmounted;
#   2. the journal is rewritten as the version before wrote it (no diskseq, no filesystem
#      UUID): it cannot tell this disk from another, so its replay, which would mount, is
#      refused the same way (the disk is the same one here: the administrator mounts it by
#      hand);
#   3. with a udev database (--udev-data-dir) that knows the filesystem's UUID: first the
#      database has no entry for the device (udev not done yet): not mounted, retried; then
#      the disk is the same but the filesystem was made anew (another UUID): refused; a
#      replay of the right filesystem (its entry back) mounts it.
#
# Usage: test-remount-identity.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
source "$SP_SRCDIR/remount-lib.sh"
# shellcheck disable=SC2034 # used by remount-lib.sh
RM_CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
rm_require python3 mkfs.ext4 findmnt timeout blkid
sp_fs_usable ext4 || sp_skip "no ext4 here"

n=$(sp_free_loop_number)
l=loop$n
dir=$SP_TMP/mnt-id
udev=$SP_TMP/udev
mkdir -p "$udev" "$dir"
sp_loop_attach "$n" 64M
sp_defer "rm_umount_dev /dev/$l"
sp_config_device "$l" off
rm_pause_setup
rm_bus_start
sp_mkfs ext4 "/dev/$l"
# Another disk for the name: an image with a filesystem of its own.
truncate -s 64M "$SP_TMP/other.img"
mkfs.ext4 -q -F "$SP_TMP/other.img" >/dev/null 2>&1 || sp_fail "cannot make the other filesystem"

start() {
        sp_daemon_start --udev-data-dir="$udev"
        rm_wait_bus
}
# cycle_killed: $dir (ext4 on $l, stable writes off) is mounted; the policy turns $l on, a
# cycle unmounts it and is killed there with its daemon. JOURNAL is its journal file.
cycle_killed() {
        sp_config_device "$l" off
        start
        sp_wait_for 2000 "$l off" sp_flag_is "$l" 0 >/dev/null
        rm_umount_dev "/dev/$l"
        mount "/dev/$l" "$dir" || sp_fail "cannot mount /dev/$l"
        [ -e "$dir/data" ] || rm_fill "$dir"
        sp_wait_for 3000 "$dir tracked off" sp_state_is "$(rm_fsq "$dir") | .effective" off >/dev/null
        sp_config_device "$l" on
        sp_daemon_reload
        sp_wait_for 3000 "$dir pending" sp_state_is "$(rm_fsq "$dir") | .pending" true >/dev/null
        rm_kill_at after-umount "$l"
        JOURNAL=$(ls "$SP_RUNTIME"/cycles/*.mount)
        rm_is_mounted "$dir" && sp_fail "$dir is mounted after the unmount"
        return 0
}
# refused REGEX: the next daemon refuses the replay (its log says REGEX), mounts nothing, keeps
# the journal aside and releases the name.
refused() {
        local off aside
        off=$(sp_lines "$SP_TMP/daemon.log")
        start
        sp_wait_for 10000 "the replay refused" sp_log_has_since "$off" "error: .*mnt-id .*NOT MOUNTED: not mounting it back: $1" >/dev/null
        tail -n +"$((off + 1))" "$SP_TMP/daemon.log" | grep -m1 "NOT MOUNTED: not mounting it back" | sed 's/^/# log: /'
        sp_log_has_since "$off" "NOT MOUNTED: .*its journal is kept in $SP_RUNTIME/cycles-refused/.*; to mount it by hand once its filesystem is there: mount -t ext4 -o rw,relatime.* $dir" ||
                sp_fail "the refusal does not say where the journal is and how to mount it by hand"
        [ -z "$(findmnt -n --source "/dev/$l")" ] || sp_fail "/dev/$l is mounted: $(findmnt -n --source "/dev/$l")"
        rm_is_mounted "$dir" && sp_fail "something is mounted on $dir: $(rm_mountinfo "$dir")"
        [ -z "$(rm_journals)" ] || sp_fail "the journal is still in cycles/: $(rm_journals)"
        aside=$(ls "$SP_RUNTIME"/cycles-refused/)
        [ -n "$aside" ] || sp_fail "no journal in cycles-refused/"
        sp_state_is ".unmounted | length" 0 || sp_fail "still listed unmounted: $(sp_state .unmounted)"
        sp_wait_for 3000 "the name released: $l's flag written per policy (on)" sp_flag_is "$l" 1 >/dev/null
        sp_log "journal kept as cycles-refused/$aside"
        rm -f "$SP_RUNTIME"/cycles-refused/*
        sp_daemon_stop
}

# 1. Another disk under the name (new diskseq).
cycle_killed
seq0=$(cat "/sys/block/$l/diskseq")
losetup -d "/dev/$l" || sp_fail "cannot detach /dev/$l"
losetup "/dev/$l" "$SP_TMP/other.img" || sp_fail "cannot attach the other image as /dev/$l"
sp_log "$l: diskseq $seq0 -> $(cat "/sys/block/$l/diskseq") (another disk under the name)"
# A loop device keeps its queue across attachments: the new disk's flag as a new disk has it.
echo 0 >"/sys/block/$l/queue/stable_writes"
refused "$l is another disk now \\(diskseq $(cat "/sys/block/$l/diskseq"); the journal's was diskseq $seq0\\)"
sp_log "1. another disk under the name: not mounted back, refused, released"

# Back to the first disk (a new diskseq again, its own filesystem).
losetup -d "/dev/$l"
losetup "/dev/$l" "$SP_TMP/loop$n.img" || sp_fail "cannot attach /dev/$l again"

# 2. A journal of the version before: no diskseq, no filesystem UUID.
cycle_killed
sed -i '/^diskseq=/d; /^fs_uuid=/d' "$JOURNAL"
refused "its journal was written by an earlier version of stablepages, which did not record which disk and filesystem it was"
mount "/dev/$l" "$dir" || sp_fail "cannot mount /dev/$l by hand"
rm_verify "$dir"
sp_log "2. a journal of the version before: refused where it would mount; mounted by hand, files intact"

# 3. The udev database knows the filesystem's UUID.
uuid=$(blkid -o value -s UUID "/dev/$l")
printf 'E:ID_FS_TYPE=ext4\nE:ID_FS_UUID=%s\n' "$uuid" >"$udev/b$(cat "/sys/block/$l/dev")"
cycle_killed
grep -qx "fs_uuid=$uuid" "$JOURNAL" || sp_fail "the journal does not record the filesystem's UUID $uuid"
#    Not in the database (yet): not mounted, retried.
mv "$udev/b$(cat "/sys/block/$l/dev")" "$SP_TMP/udev-entry"
off=$(sp_lines "$SP_TMP/daemon.log")
start
sp_wait_for 10000 "the replay waits for udev" sp_log_has_since "$off" "NOT MOUNTED: .*the udev database has no filesystem UUID for /dev/$l now: not mounting it before it can be told from another filesystem.*retrying" >/dev/null
rm_is_mounted "$dir" && sp_fail "mounted without knowing its filesystem"
#    Back in the database: mounted by the next retry.
mv "$SP_TMP/udev-entry" "$udev/b$(cat "/sys/block/$l/dev")"
sp_wait_for 10000 "mounted again by a retry" rm_is_mounted "$dir" >/dev/null
rm_verify "$dir"
sp_daemon_stop
sp_log "3. its UUID unknown to udev: retried, then mounted once known"
#    The filesystem made anew on the same disk: another UUID.
cycle_killed
mkfs.ext4 -q -F "/dev/$l" >/dev/null 2>&1 || sp_fail "cannot make the filesystem anew"
uuid2=$(blkid -o value -s UUID "/dev/$l")
printf 'E:ID_FS_TYPE=ext4\nE:ID_FS_UUID=%s\n' "$uuid2" >"$udev/b$(cat "/sys/block/$l/dev")"
refused "the filesystem on /dev/$l is another one now \\(UUID $uuid2; the journal's was UUID $uuid\\)"
sp_log "3. the filesystem made anew under the journal: refused"
sp_log "remount identity: ok"
