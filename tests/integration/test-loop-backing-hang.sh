#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A hung filesystem under a loop device's backing file stops neither the daemon nor the udev
# applier (loop-backing.h, stablepagesd(8) udev-facts). A loop device in direct I/O mode whose
# backing file lives on a FUSE mount served by sp-helper fuse-serve (nothing cached: every
# lookup and stat asks the server); the server is stopped with SIGSTOP, as a hung NFS server
# or a stuck FUSE daemon would be, after udev has seen the device:
#
# 1. Without the udev rule's record: the applier returns within 5 s, and stablepagesd dump
#    lists the loop device's error (its filesystem did not answer within 1000 ms); the daemon
#    starts (READY=1) and, while a reload rescans, answers stablepagesctl status within 3 s.
# 2. "stablepagesd udev-facts" (what the rule imports, as root), run while the server answers,
#    records the device of the FUSE mount for the loop device's diskseq; run while it is
#    stopped, it returns within 5 s and records why it could not tell.
# 3. With the record in the udev database (the test's own, as udevd writes it): the daemon and
#    the applier take the device from it and touch no path: no error, although the server is
#    still stopped.
#
# Usage: test-loop-backing-hang.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"
[ -c /dev/fuse ] || sp_skip "no /dev/fuse"
grep -qw fuse /proc/filesystems || modprobe fuse 2>/dev/null || true
grep -qw fuse /proc/filesystems || sp_skip "the kernel has no FUSE"

SP_UDEV=$SP_TMP/udev
mkdir -p "$SP_UDEV" "$SP_TMP/fuse"
CTL=("$SP_CTL" --no-pager)
SPD=("$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" --udev-data-dir="$SP_UDEV")
out='' rc=0 ms=0
# timed VAR CMD...: runs CMD under timeout 20, its output in VAR, exit status in rc, time in ms.
timed() {
        local -n _out=$1
        local start
        shift
        start=$(sp_now_ms)
        rc=0
        _out=$(timeout 20 "$@" 2>&1) || rc=$?
        ms=$(($(sp_now_ms) - start))
}

truncate -s 32M "$SP_TMP/backing.img"
"$SP_HELPER" fuse-serve "$SP_TMP/fuse" "$SP_TMP/backing.img" >"$SP_TMP/fuse.out" 2>&1 &
server=$!
# Undone in reverse: the server continued first, then the loop device detached (the server
# answers its release), then the server ended and the mount gone.
sp_defer "umount -l '$SP_TMP/fuse'"
sp_defer "kill $server"
sp_wait_for 5000 "the FUSE server" grep -qx ready "$SP_TMP/fuse.out" >/dev/null
n=$(sp_free_loop_number)
loop=loop$n
sp_defer "sp_loop_destroy $n"
losetup --direct-io=on "/dev/$loop" "$SP_TMP/fuse/img" || sp_fail "cannot attach $SP_TMP/fuse/img as $loop"
sp_defer "kill -CONT $server"
[ "$(cat "/sys/block/$loop/loop/dio")" = 1 ] || sp_skip "the kernel gave $loop no direct I/O over FUSE"
fusedev=$(stat -c '%Hd:%Ld' "$SP_TMP/fuse/img")
seq=$(cat "/sys/block/$loop/diskseq" 2>/dev/null || echo 0)
# udevd probes a new device (blkid reads it): let it finish before the server stops.
[ -e /run/udev/control ] && udevadm settle --timeout=30
sp_config "[Manager]
Policy=latency
Devices=$loop
RescanSec=0"

# What udev-facts records while the server answers (checked in 2).
record=''
timed record "${SPD[@]}" udev-facts "$loop"
record_rc=$rc record_ms=$ms

kill -STOP "$server"
sp_log "FUSE server $server stopped"

# --- 1. no record: bounded, in the applier and in the daemon ------------------------------
timed out "${SPD[@]}" --log-target=console apply "$loop"
sp_log "applier ($ms ms, exit $rc): $out"
[ $rc -ne 124 ] && ((ms <= 5000)) || sp_fail "the applier did not return within 5 s (exit $rc, $ms ms): $out"
[ $rc -eq 0 ] || sp_fail "the applier failed: exit $rc: $out"
timed out "${SPD[@]}" dump --json "$loop"
[ $rc -eq 0 ] && jq -e '.[0].errors | any(test("did not answer within 1000 ms"))' <<<"$out" >/dev/null ||
        sp_fail "dump does not list the hung backing file ($ms ms, exit $rc): $out"
robust_daemon_start --udev-data-dir="$SP_UDEV"
sp_state_is ".devices[] | select(.name == \"$loop\") | .errors | any(test(\"did not answer within 1000 ms\"))" true ||
        sp_fail "the daemon's view of $loop does not name the hung backing file: $(sp_state ".devices[] | select(.name == \"$loop\")")"
"${CTL[@]}" reload >/dev/null 2>&1 &
reload=$!
sleep 0.2
timed out "${CTL[@]}" status "$loop"
sp_log "status during a reload ($ms ms, exit $rc)"
[ $rc -eq 0 ] && ((ms <= 3000)) || sp_fail "status did not answer within 3 s during a reload (exit $rc, $ms ms): $out"
wait "$reload" || sp_fail "the reload failed"

# --- 2. the record: while the server answered, and now that it is stopped ---------------
[ $record_rc -eq 0 ] && grep -qx "STABLEPAGES_LOOP_DISKSEQ=$seq" <<<"$record" &&
        grep -qx "STABLEPAGES_LOOP_BACKING_DEVNUM=$fusedev" <<<"$record" ||
        sp_fail "udev-facts $loop: exit $record_rc, want the diskseq $seq and the device $fusedev: $record"
sp_log "udev-facts while the server answered ($record_ms ms): $(tr '\n' ' ' <<<"$record")"
timed out "${SPD[@]}" udev-facts "$loop"
sp_log "udev-facts while the server is stopped ($ms ms, exit $rc): $(tr '\n' ' ' <<<"$out")"
[ $rc -eq 0 ] && ((ms <= 5000)) && grep -qx "STABLEPAGES_LOOP_DISKSEQ=$seq" <<<"$out" &&
        grep -q "^STABLEPAGES_LOOP_BACKING_ERROR=LOOP_GET_STATUS64 got no answer" <<<"$out" ||
        sp_fail "udev-facts with the server stopped: exit $rc, $ms ms: $out"

# --- 3. with the record: no path is walked ---------------------------------------------
{ printf 'E:%s\n' "DEVNAME=/dev/$loop" "DEVTYPE=disk"; sed 's/^/E:/' <<<"$record"; } >"$SP_UDEV/b$(cat "/sys/block/$loop/dev")"
timed out "${CTL[@]}" reload
[ $rc -eq 0 ] || sp_fail "reload with the record: exit $rc: $out"
sp_state_is ".devices[] | select(.name == \"$loop\") | .errors | length" 0 ||
        sp_fail "the daemon did not take the device from the record: $(sp_state ".devices[] | select(.name == \"$loop\")")"
timed out "${SPD[@]}" dump --json "$loop"
[ $rc -eq 0 ] && jq -e '.[0].errors | length == 0' <<<"$out" >/dev/null ||
        sp_fail "dump did not take the device from the record ($ms ms, exit $rc): $out"
sp_log "with the record: the daemon and dump ($ms ms) know the backing device, no error"

sp_daemon_stop
sp_log "loop-backing-hang: ok"
