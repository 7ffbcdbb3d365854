#!/bin/bash
# The hazard said where it exists (issue 13): a disk whose need is required runs without stable
# writes, as an older kernel's dm-integrity in bitmap mode does until the rule applies them,
# and a filesystem mounted meanwhile keeps running without them. Here a loop device made
# "required" with Need=required (the classification itself is tested on real devices in
# tests/vm), flag 0, ext4 mounted on it.
# - without the daemon, stablepagesctl status and explain say at error level that the mount runs
#   without stable writes and must be unmounted and mounted again (assumed: it took the flag as
#   it is now), and warn that the flag is off; exit status 1 (as for every error), the table or
#   the explanation printed all the same;
# - with the daemon (Policy=observe, so that nothing changes the flag), status and explain say
#   the same of the mount, and so does the daemon's log;
# - once the flag is on and the filesystem mounted again, nothing is said of the mount or of the
#   flag; the page cache of the loop device took stable writes off when the loop device was
#   created (the kernel adds loop devices without them) and is said at error level throughout.
set -uo pipefail
SPD=${1:-${STABLEPAGESD:-stablepagesd}}
CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a loop device, a mount, a system bus)"; exit 77; }
for t in dbus-daemon busctl losetup mkfs.ext4; do
        command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done

tmp=$(mktemp -d /tmp/stablepages-hazard.XXXXXX)
loop="" daemon_pid="" mnt=$tmp/mnt
. "$SRC/tests/integration/bus-lib.sh"
cleanup() {
        [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
        bus_stop
        mountpoint -q "$mnt" && umount "$mnt"
        [ -n "$loop" ] && losetup -d "/dev/$loop" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ctl() { "$CTL" --no-pager --config-dir="$tmp/etc" "$@"; }
# expect_error WHAT PATTERN COMMAND...: the command prints its report, says PATTERN on stderr
# as an error and exits 1; its stderr is left in $last_err
expect_error() {
        local what=$1 pattern=$2 out rc=0
        shift 2
        out=$("$@" 2>&1 >"$tmp/stdout") || rc=$?
        last_err=$out
        echo "$what: $out"
        [ "$rc" = 1 ] || fail "$what: exit $rc, expected 1"
        grep -q "$loop" "$tmp/stdout" || fail "$what: no report of $loop on stdout"
        grep -q -- "error: .*$pattern" <<<"$out" || fail "$what: no error \"$pattern\""
}

# expect_cache_only WHAT COMMAND...: of the hazards, only the page cache's (exit 1)
expect_cache_only() {
        local what=$1 out rc=0
        shift
        out=$("$@" 2>&1 >/dev/null) || rc=$?
        [ "$rc" = 1 ] || fail "$what: exit $rc, expected 1 (the page cache's hazard)"
        grep -q "error: raw buffered writes to /dev/$loop go through a page cache" <<<"$out" ||
                fail "$what: no page cache hazard in \"$out\""
        grep -qE "$mnt .*runs without|flag is off" <<<"$out" && fail "$what: says \"$out\""
}

truncate -s 64M "$tmp/backing"
loop=$(basename "$(losetup --find --show "$tmp/backing")") || exit 1
echo 0 > "/sys/block/$loop/queue/stable_writes"
mkdir -p "$tmp/etc/stablepages.conf.d" "$tmp/run" "$mnt"
printf '[Manager]\nDevices=%s\nPolicy=observe\nRescanSec=0\n[Device %s]\nNeed=required\n' "$loop" "$loop" \
        > "$tmp/etc/stablepages.conf"
mkfs.ext4 -q -F "/dev/$loop" || exit 1
mount "/dev/$loop" "$mnt" || exit 1

# 1. No daemon: the flag is off on a required disk, and so is the mount (assumed).
mount_hazard="$mnt (ext4 on $loop) runs without stable writes, but $loop needs them (need required: Need=required"
expect_error "status, no daemon" "$mount_hazard" ctl status "$loop"
grep -q "warning: $loop needs stable writes (need required: Need=required.*but its flag is off.*stablepagesd apply $loop" \
        <<<"$last_err" || fail "status, no daemon: no warning that the flag is off"
expect_error "explain, no daemon" "$mount_hazard.*unmount and mount it again" ctl explain "$loop"

# 2. The daemon (observe: it changes nothing) tracks the mount as running without.
bus_start --no-polkit || exit 1
"$SPD" --config-dir="$tmp/etc" --runtime-dir="$tmp/run" --log-target=console >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do busctl --system status org.stablepages1 >/dev/null 2>&1 && break; sleep 0.05; done
busctl --system status org.stablepages1 >/dev/null 2>&1 || { cat "$tmp/daemon.log"; echo "FAIL: no daemon"; exit 1; }
expect_error "status, daemon" "$mount_hazard" ctl status
expect_error "explain, daemon" "$mnt (ext4 on $loop) runs without stable writes.*unmount and mount it again" \
        ctl explain "$loop"
grep -q "$mnt (ext4 on $loop) runs without stable writes" "$tmp/daemon.log" || fail "the daemon did not log the hazard"

# 3. Flag on, mounted again: nothing to say.
echo 1 > "/sys/block/$loop/queue/stable_writes"
umount "$mnt" && mount "/dev/$loop" "$mnt" || exit 1
echo change > "/sys/block/$loop/uevent" # what makes the daemon read the disk again
for _ in $(seq 100); do
        grep -q '"in_force":true' <<<"$(ctl --json=short status "$loop")" && break
        sleep 0.05
done
sleep 0.3 # the mount table is re-read at most every 100 ms
expect_cache_only "status, daemon, fixed" ctl status
expect_cache_only "explain, daemon, fixed" ctl explain "$loop"
kill "$daemon_pid" && wait "$daemon_pid"
daemon_pid=""
expect_cache_only "status, no daemon, fixed" ctl status "$loop"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
