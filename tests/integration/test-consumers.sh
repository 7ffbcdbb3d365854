#!/bin/bash
# Every consumer of a disk, each with what it took: a loop device with ext4 mounted, a swap file
# on that filesystem (a swap file writes to its filesystem's disk), and two processes holding the
# disk open for writing (one buffered, one with O_DIRECT).
# - without the daemon, stablepagesctl explain lists the page cache, the filesystem and the swap
#   area, a line each; with the disk made "required" (Need=required) and its flag 0, each of
#   the three is a hazard said at error level, the page cache's with the buffered writer's PID
#   (and the O_DIRECT one said to bypass it);
# - the daemon (Policy=observe: the flag stays as the test sets it) says the same in explain,
#   in the CACHE/SWAP column of status, in status --json (DumpJSON) and in its log;
# - a swap area activated again while the flag is 1 is seen taking it ("observed"), and keeps
#   it when the flag is set to 0 afterwards; the page cache keeps what it took at its creation.
set -uo pipefail
SPD=${1:-${STABLEPAGESD:-stablepagesd}}
CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a loop device, a mount, a swap area, a system bus)"; exit 77; }
for t in dbus-daemon busctl losetup mkfs.ext4 mkswap swapon swapoff jq python3; do
        command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done

tmp=$(mktemp -d /tmp/stablepages-consumers.XXXXXX)
loop="" daemon_pid="" mnt=$tmp/mnt pids=()
. "$SRC/tests/integration/bus-lib.sh"
cleanup() {
        [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        bus_stop
        [ -n "$loop" ] && swapoff "$mnt/swapfile" 2>/dev/null
        mountpoint -q "$mnt" && umount "$mnt"
        [ -n "$loop" ] && losetup -d "/dev/$loop" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ctl() { "$CTL" --no-pager --config-dir="$tmp/etc" "$@"; }
# expect FILE WHAT PATTERN: FILE has a line matching PATTERN (grep -E)
expect() { grep -qE -- "$3" "$1" || fail "$2: no \"$3\" in: $(cat "$1")"; }
flag() { echo "$1" > "/sys/block/$loop/queue/stable_writes"; }

truncate -s 96M "$tmp/backing"
loop=$(basename "$(losetup --find --show "$tmp/backing")") || exit 1
swapfile=$mnt/swapfile
flag 0
mkdir -p "$tmp/etc/stablepages.conf.d" "$tmp/run" "$mnt"
mkfs.ext4 -q -F "/dev/$loop" || exit 1
mount "/dev/$loop" "$mnt" || exit 1
dd if=/dev/zero of="$swapfile" bs=1M count=16 status=none && chmod 600 "$swapfile" || exit 1
mkswap -q "$swapfile" >/dev/null || exit 1
swapon -p 0 "$swapfile" || exit 1
sleep 600 3<>"/dev/$loop" &
buffered=$!
pids+=("$buffered")
python3 -c 'import os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_DIRECT); time.sleep(600)' \
        "/dev/$loop" &
direct=$!
pids+=("$direct")
for _ in $(seq 100); do # python3 may take a while to start (and exec through a shim)
        find "/proc/$direct/fd" -lname "/dev/$loop" 2>/dev/null | grep -q . && break
        sleep 0.1
done
direct_comm=$(cat "/proc/$direct/comm")

printf '[Manager]\nDevices=%s\nPolicy=observe\nRescanSec=0\n' "$loop" > "$tmp/etc/stablepages.conf"

# 1. No daemon, need none: the three consumers, a line each, nothing at error level.
rc=0
ctl explain "$loop" > "$tmp/out" 2> "$tmp/err" || rc=$?
echo "--- explain, no daemon:"; cat "$tmp/out" "$tmp/err"
[ "$rc" = 0 ] || fail "explain, no daemon, need none: exit $rc"
expect "$tmp/out" "explain, no daemon" "consumer: page cache of /dev/$loop: off \(kernel\)"
expect "$tmp/out" "explain, no daemon" "consumer: $mnt \(ext4\): off since .* \(assumed\)"
expect "$tmp/out" "explain, no daemon" "consumer: swap $swapfile \(file\): off since .* \(assumed\)"
grep -q "error:" "$tmp/err" && fail "explain, no daemon, need none: says an error"

# 2. No daemon, Need=required: each of the three is a hazard; the writers are named.
printf '[Device %s]\nNeed=required\n' "$loop" >> "$tmp/etc/stablepages.conf"
rc=0
ctl explain "$loop" > "$tmp/out" 2> "$tmp/err" || rc=$?
echo "--- explain, no daemon, required:"; cat "$tmp/out" "$tmp/err"
[ "$rc" = 1 ] || fail "explain, no daemon, required: exit $rc, expected 1"
expect "$tmp/out" "explain, required" "consumer: page cache of /dev/$loop: off \(kernel\), HAZARD"
expect "$tmp/err" "explain, required" "error: raw buffered writes to /dev/$loop go through a page cache that runs without stable writes .*but $loop needs them \(need required: Need=required.*What helps: writes with O_DIRECT"
expect "$tmp/err" "explain, required" "processes with /dev/$loop open for writing:.* PID $buffered \(sleep, buffered\)"
expect "$tmp/err" "explain, required" "PID $direct \($direct_comm, O_DIRECT: not through the page cache\)"
expect "$tmp/err" "explain, required" "error: $mnt \(ext4 on $loop\) runs without stable writes, but $loop needs them \(need required"
expect "$tmp/err" "explain, required" "error: swap area $swapfile on $loop runs without stable writes \(taken at swapon\), but $loop needs them.*swapoff and swapon it again"
expect "$tmp/err" "explain, required" "warning: $loop needs stable writes .* but its flag is off"
rc=0
ctl status "$loop" > "$tmp/out" 2> "$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "status, no daemon, required: exit $rc, expected 1"
expect "$tmp/out" "status, no daemon" "^$loop +required +off +- +$mnt:off +cache:off! swap:off!"

# 3. The daemon (observe: it leaves the flag alone).
bus_start --no-polkit || exit 1
"$SPD" --config-dir="$tmp/etc" --runtime-dir="$tmp/run" --log-target=console >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do busctl --system status org.stablepages1 >/dev/null 2>&1 && break; sleep 0.05; done
busctl --system status org.stablepages1 >/dev/null 2>&1 || { cat "$tmp/daemon.log"; echo "FAIL: no daemon"; exit 1; }
rc=0
ctl explain "$loop" > "$tmp/out" 2> "$tmp/err" || rc=$?
echo "--- explain, daemon:"; cat "$tmp/out" "$tmp/err"
[ "$rc" = 1 ] || fail "explain, daemon: exit $rc, expected 1"
expect "$tmp/out" "explain, daemon" "consumer: page cache of /dev/$loop: off \(kernel\), HAZARD"
expect "$tmp/out" "explain, daemon" "consumer: $mnt \(ext4\): off since .* \(assumed\), HAZARD"
expect "$tmp/out" "explain, daemon" "consumer: swap $swapfile \(file\): off since .* \(assumed\), HAZARD"
expect "$tmp/err" "explain, daemon" "PID $buffered \(sleep, buffered\)"
rc=0
ctl status > "$tmp/out" 2> "$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "status, daemon: exit $rc, expected 1"
expect "$tmp/out" "status, daemon" "^$loop +required +off +- +$mnt:off +cache:off! swap:off!"
expect "$tmp/err" "status, daemon" "error: raw buffered writes to /dev/$loop"
ctl --json=short status "$loop" > "$tmp/json" 2>/dev/null
[ "$(jq -r '[.[0].consumers[] | "\(.kind)=\(.captured)/\(.hazard)"] | join(" ")' "$tmp/json")" = \
        "page-cache=off/true filesystem=off/true swap=off/true" ] ||
        fail "status --json: consumers $(jq -c '.[0].consumers' "$tmp/json")"
expect "$tmp/daemon.log" "the daemon's log" "raw buffered writes to /dev/$loop go through a page cache.*Now: processes with /dev/$loop open for writing:.*PID $buffered \(sleep, buffered\)"
expect "$tmp/daemon.log" "the daemon's log" "swap area $swapfile on $loop runs without stable writes"

# 4. swapon again with the flag 1: observed on; the flag set to 0 afterwards changes nothing of it.
swapoff "$swapfile" && flag 1 && swapon -p 0 "$swapfile" || exit 1
echo change > "/sys/block/$loop/uevent"
for _ in $(seq 100); do
        [ "$(ctl --json=short status "$loop" 2>/dev/null |
                jq -r '.[0].consumers[] | select(.kind == "swap") | "\(.captured) \(.origin)"')" = "on observed" ] && break
        sleep 0.05
done
flag 0
echo change > "/sys/block/$loop/uevent"
for _ in $(seq 100); do
        [ "$(ctl --json=short status "$loop" 2>/dev/null | jq -r '.[0].stable_writes')" = 0 ] && break
        sleep 0.05
done
ctl explain "$loop" > "$tmp/out" 2> "$tmp/err"
echo "--- explain, daemon, swap taken again with the flag 1, then the flag 0:"; cat "$tmp/out" "$tmp/err"
expect "$tmp/out" "swap after a later flag change" "consumer: swap $swapfile \(file\): on since .* \(observed\)$"
expect "$tmp/out" "page cache after a later flag change" "consumer: page cache of /dev/$loop: off \(kernel\), HAZARD"
grep -q "error: swap area" "$tmp/err" && fail "the swap area taken with the flag 1 is said to be a hazard"
kill "$daemon_pid" && wait "$daemon_pid"
daemon_pid=""

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
