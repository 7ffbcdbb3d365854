#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Effective state is real, not assumed. For ext4 and xfs on a loop device: mounted while
# stable_writes=1; the policy then turns the device off (drop-in + SIGHUP); the daemon
# reports the mount pending, and a writer rewriting a page under writeback (throttled to
# 20 write IOPS with the blkio controller) still stalls tens of ms per rewrite; after a
# full umount + mount the stall is gone (microseconds) and the daemon reports the mount
# effective off.
#
# Usage: test-daemon-effective.sh [STABLEPAGESD]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"

IOPS=20
REWRITES=20


sp_cg_setup

declare -A LOOP BEFORE PENDING AFTER
fss=()
for fs in ext4 xfs; do
        if sp_fs_usable "$fs"; then fss+=("$fs"); else sp_log "$fs cannot be made here, skipped"; fi
done
[ ${#fss[@]} -gt 0 ] || sp_skip "neither ext4 nor xfs can be made here"

devices=
for fs in "${fss[@]}"; do
        n=$(sp_free_loop_number)
        LOOP[$fs]=loop$n
        sp_loop_attach "$n" 512M # xfs wants at least 300 MB
        devices="$devices loop$n"
done

conf="[Manager]
Devices=$devices
RescanSec=0"
for fs in "${fss[@]}"; do
        conf="$conf

[Device ${LOOP[$fs]}]
StableWrites=on"
done
sp_config "$conf"
sp_daemon_start

for fs in "${fss[@]}"; do
        l=${LOOP[$fs]}
        sp_wait_for 1000 "$l stable_writes=1" sp_flag_is "$l" 1 >/dev/null
        sp_mkfs "$fs" "/dev/$l"
        sp_mount "/dev/$l" "$SP_TMP/mnt-$fs"
        sp_cg_throttle "$(cat "/sys/block/$l/dev")" "$IOPS"
done

fsq() { echo ".filesystems[] | select(.target == \"$SP_TMP/mnt-$1\")"; }

# 1. Mounted while the flag is 1: effective on, observed (we saw it appear), not pending.
for fs in "${fss[@]}"; do
        sp_wait_for 1000 "$fs mount tracked as effective on" \
                sp_state_is "$(fsq "$fs") | [.effective, .origin, .pending] | map(tostring) | join(\" \")" "on observed false" >/dev/null
        r=$(sp_measure "$SP_TMP/mnt-$fs/page" "$REWRITES")
        sp_log "$fs, flag 1, mounted with 1:           $r"
        BEFORE[$fs]=$r
done

# 2. Policy turns the devices off; the filesystems keep what they captured.
dropin=""
for fs in "${fss[@]}"; do
        dropin="$dropin[Device ${LOOP[$fs]}]
StableWrites=off
"
done
sp_dropin 50-off.conf "$dropin"
sp_daemon_reload
for fs in "${fss[@]}"; do
        l=${LOOP[$fs]}
        sp_wait_for 1000 "$l stable_writes=0" sp_flag_is "$l" 0 >/dev/null
        sp_wait_for 1000 "$fs mount pending" \
                sp_state_is "$(fsq "$fs") | [.effective, (.pending | tostring), .reason] | join(\"/\")" "on/true/takes effect at next mount" >/dev/null
        r=$(sp_measure "$SP_TMP/mnt-$fs/page" "$REWRITES")
        sp_log "$fs, flag 0, still mounted with 1:     $r  (daemon: pending)"
        PENDING[$fs]=$r
done

# 3. A full umount + mount applies it.
for fs in "${fss[@]}"; do
        umount "$SP_TMP/mnt-$fs"
        mount "/dev/${LOOP[$fs]}" "$SP_TMP/mnt-$fs"
        sp_wait_for 1000 "$fs mount effective off after the cycle" \
                sp_state_is "$(fsq "$fs") | [.effective, .origin, (.pending | tostring)] | join(\" \")" "off observed false" >/dev/null
        r=$(sp_measure "$SP_TMP/mnt-$fs/page" "$REWRITES")
        sp_log "$fs, flag 0, mounted again with 0:     $r  (daemon: effective off)"
        AFTER[$fs]=$r
done

# The verdicts: tens of ms while stable writes are in force (before the cycle, whatever
# the flag says), microseconds after; and the page was really under writeback then.
fail=0
for fs in "${fss[@]}"; do
        b=$(sp_field rewrite_avg_us "${BEFORE[$fs]}")
        p=$(sp_field rewrite_avg_us "${PENDING[$fs]}")
        a=$(sp_field rewrite_avg_us "${AFTER[$fs]}")
        w=$(sp_field inflight_avg_us "${AFTER[$fs]}")
        sp_log "$fs: average stall per rewrite: $b us (flag 1), $p us (flag 0, pending), $a us (after umount+mount; writeback still in flight for $w us)"
        ((b >= 10000)) || { echo "FAIL: $fs: no stall measured with stable writes on ($b us)" >&2; fail=1; }
        ((p >= 10000)) || { echo "FAIL: $fs: the stall vanished before the remount ($p us)" >&2; fail=1; }
        ((a < 2000)) || { echo "FAIL: $fs: still stalling after umount+mount ($a us)" >&2; fail=1; }
        ((w >= 10000)) || { echo "FAIL: $fs: the page was not under writeback when rewritten ($w us)" >&2; fail=1; }
done
((fail == 0)) || sp_fail "stall measurements do not show the effective state"
sp_log "effective: ok"
