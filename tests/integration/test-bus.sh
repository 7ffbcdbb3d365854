#!/bin/bash
# The D-Bus API and stablepagesctl against a real (private) system dbus-daemon and the real
# polkitd (issue 4): root changes a flag with set --apply; an unprivileged user can read
# but is refused by polkit with exit 1 and the flag unchanged; busctl sees the documented
# members; status --json carries the same facts as dump --json; every kind of bad input
# is answered with an error and the daemon keeps answering.
set -uo pipefail
SPD=${1:-${STABLEPAGESD:-stablepagesd}}
CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (loop devices, polkitd, a system bus)"; exit 77; }
for t in dbus-daemon busctl setpriv losetup python3 jq; do
        command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done
[ -x /usr/lib/polkit-1/polkitd ] || { echo "SKIP: polkitd missing"; exit 77; }

tmp=$(mktemp -d /tmp/stablepages-bus.XXXXXX)
loop="" daemon_pid=""
. "$SRC/tests/integration/bus-lib.sh"
cleanup() {
        [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
        bus_stop
        [ -n "$loop" ] && losetup -d "/dev/$loop" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
flag() { cat "/sys/block/$loop/queue/stable_writes"; }

bus_start || exit 1
truncate -s 64M "$tmp/backing"
loop=$(basename "$(losetup --find --show "$tmp/backing")") || exit 1
echo 1 > "/sys/block/$loop/queue/stable_writes"
mkdir -p "$tmp/etc/stablepages.conf.d" "$tmp/run"
printf '[Manager]\nDevices=%s\nRescanSec=0\n' "$loop" > "$tmp/etc/stablepages.conf"

# 0. No daemon yet: status and explain read sysfs and say so; set says it is not running.
out=$("$CTL" --no-pager --config-dir="$tmp/etc" status "$loop" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "stablepagesd is not running: reading sysfs directly" <<<"$out" &&
        grep -q "^$loop " <<<"$out" || fail "fallback status: rc=$rc: $out"
out=$("$CTL" --no-pager explain "$loop" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "need none" <<<"$out" || fail "fallback explain: rc=$rc: $out"
out=$("$CTL" set "$loop" off 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "stablepagesd is not running" <<<"$out" || fail "set without daemon: rc=$rc: $out"
out=$("$CTL" frobnicate 2>&1); rc=$?
[ $rc -eq 2 ] || fail "unknown verb exited $rc, want 2"
out=$("$CTL" set "$loop" sideways 2>&1); rc=$?
[ $rc -eq 2 ] || fail "bad mode exited $rc, want 2"

start_daemon() {
        "$SPD" --config-dir="$tmp/etc" --runtime-dir="$tmp/run" --log-target=console >>"$tmp/daemon.log" 2>&1 &
        daemon_pid=$!
        for _ in $(seq 100); do busctl --system status org.stablepages1 >/dev/null 2>&1 && return 0; sleep 0.05; done
        cat "$tmp/daemon.log"; echo "FAIL: daemon not on the bus"; exit 1
}
start_daemon
# Policy=balanced, need none: the daemon turned the loop off at start.
[ "$(flag)" = 0 ] || fail "daemon did not apply the policy to $loop at start"

# 1. Root: set on, then off with --apply (runtime and persistent).
out=$("$CTL" --no-pager set "$loop" on --runtime --apply 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(flag)" = 1 ] || fail "root set on --runtime --apply: rc=$rc flag=$(flag): $out"
grep -q "^diskseq=$(cat "/sys/block/$loop/diskseq") $loop on$" "$tmp/run/overrides" ||
        fail "runtime override not in $tmp/run/overrides, bound to the diskseq of $loop"
out=$("$CTL" set "$loop" off --apply 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(flag)" = 0 ] || fail "root set off --apply: rc=$rc flag=$(flag): $out"
# A loop device is its backing file: the drop-in is bound to it, and named after it.
dropin="$tmp/etc/stablepages.conf.d/90-stablepagesctl-loop-$(sed 's|/|%2F|g' <<<"$tmp/backing").conf"
grep -qx "\[Device LOOP_BACKING_FILE=$tmp/backing\]" "$dropin" && grep -qx "StableWrites=off" "$dropin" ||
        fail "persistent override not written as a drop-in bound to the backing file: $out"

# 1b. monitor prints the change live; the persistent override survives a restart.
"$CTL" monitor > "$tmp/monitor.log" 2>&1 &
mon=$!
sleep 0.3
"$CTL" set "$loop" on --runtime --apply >/dev/null 2>&1
for _ in $(seq 50); do grep -q "applied  $loop: stable writes off -> on" "$tmp/monitor.log" && break; sleep 0.05; done
kill $mon; wait $mon 2>/dev/null
grep -q "applied  $loop: stable writes off -> on" "$tmp/monitor.log" || fail "monitor did not show the change: $(cat "$tmp/monitor.log")"
"$CTL" reset "$loop" --runtime || fail "reset --runtime failed"
[ "$(flag)" = 0 ] || fail "after reset --runtime the persistent off is not back"
kill "$daemon_pid"; wait "$daemon_pid"; rc=$?
[ $rc -eq 0 ] || fail "daemon exited $rc on SIGTERM"
echo 1 > "/sys/block/$loop/queue/stable_writes"
start_daemon
[ "$(flag)" = 0 ] || fail "persistent override not applied after a restart"
out=$("$CTL" explain "$loop" 2>&1)
grep -q "desired: off (config)" <<<"$out" || fail "explain after restart: $out"

# 2. Unprivileged: reads work (GetManagedObjects too), writes are refused by polkit, the flag
# is unchanged.
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
out=$(nobody "$CTL" --no-pager status 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "^$loop " <<<"$out" || fail "unprivileged status: rc=$rc: $out"
out=$(nobody "$CTL" --no-pager explain "$loop" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "^$loop (.*): need none" <<<"$out" || fail "unprivileged explain: rc=$rc: $out"
out=$(nobody "$CTL" set "$loop" on --runtime 2>&1 </dev/null); rc=$?
[ $rc -eq 1 ] || fail "unprivileged set exited $rc, want 1: $out"
grep -qi "access denied\|not authorized" <<<"$out" || fail "unprivileged set: no access-denied message: $out"
[ "$(flag)" = 0 ] || fail "unprivileged set changed the flag"
out=$(nobody busctl --system call org.stablepages1 /org/stablepages1 org.stablepages1.Manager Reload 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "AccessDenied\|not authorized" <<<"$out" || fail "unprivileged Reload: rc=$rc: $out"
# The ObjectManager is exported, and open to everyone like every read: every disk's object,
# with the Device interface and its properties, in one call.
out=$(nobody busctl --system --json=short call org.stablepages1 /org/stablepages1 \
        org.freedesktop.DBus.ObjectManager GetManagedObjects 2>&1); rc=$?
if [ $rc -ne 0 ]; then
        fail "unprivileged GetManagedObjects: rc=$rc: $out"
else
        jq -e --arg p "/org/stablepages1/device/$loop" --arg n "$loop" \
                '.data[0][$p]["org.stablepages1.Device"].Name.data == $n' <<<"$out" >/dev/null ||
                fail "unprivileged GetManagedObjects has no object of $loop with its Name: $(head -c 300 <<<"$out")"
        jq -e '.data[0] | length > 0 and all(to_entries[]; (.key | startswith("/org/stablepages1/device/"))
                and .value["org.stablepages1.Device"].Need.data != null)' <<<"$out" >/dev/null ||
                fail "unprivileged GetManagedObjects: an object that is not a disk's Device: $(head -c 300 <<<"$out")"
fi

# 3. busctl sees the documented members and reads a device's Need.
intro=$(busctl --system introspect org.stablepages1 /org/stablepages1 2>&1)
for member in ListDevices ListFilesystems GetDevice GetDeviceProperties DumpJSON SetDevicePolicy ResetDevicePolicy ListOverrides Apply Reload \
        Applied Refused Reloaded Version Policy ApplyMounted; do
        grep -q "\.$member " <<<"$intro" || fail "introspection lacks $member"
done
need=$(busctl --system get-property org.stablepages1 "/org/stablepages1/device/$loop" org.stablepages1.Device Need 2>&1)
[ "$need" = 's "none"' ] || fail "get-property Need of $loop: $need"

# 4. status --json has the same facts as dump --json, one entry per disk.
"$CTL" --json=short status > "$tmp/status.json" || fail "status --json failed"
"$SPD" --config-dir="$tmp/etc" --runtime-dir="$tmp/run" dump --json > "$tmp/dump.json" || fail "dump failed"
python3 - "$tmp/status.json" "$tmp/dump.json" <<'PY' || fail "status --json and dump --json disagree"
import json, os, sys
status = json.load(open(sys.argv[1])); dump = json.load(open(sys.argv[2]))
assert sorted(d["name"] for d in status) == sorted(os.listdir("/sys/block")), "one entry per disk"
by = {d["name"]: d for d in dump}
for s in status:
    d = by[s["name"]]
    for key in ("devnum", "kind", "stable_writes", "need", "reasons", "desired", "in_force", "facts"):
        assert s[key] == d[key], (s["name"], key, s[key], d[key])
    assert "mounts" in s
PY

# 4b. A disk named twice is one disk (the daemon takes at most one name per disk).
out=$("$CTL" --json=short status "$loop" "$loop" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(jq length <<<"$out")" = 1 ] || fail "status of $loop twice: rc=$rc: $out"

# 5. Bad input over the bus: each gets the documented error; the daemon keeps answering.
# dbus-send prints the error name, so the test asserts names, not only failure.
send() {
        dbus-send --system --print-reply --dest=org.stablepages1 /org/stablepages1 \
                "org.stablepages1.Manager.$@" 2>&1
}
long=$(printf 'x%.0s' $(seq 300))
check_error() {
        local what=$1 want=$2 out rc
        shift 2
        out=$(send "$@"); rc=$?
        [ $rc -ne 0 ] && grep -q "$want" <<<"$out" || fail "$what: rc=$rc: $out"
        send ListDevices >/dev/null || fail "daemon stopped answering after: $what"
}
check_error "slash in name" org.stablepages1.Error.InvalidName GetDevice string:"../sda"
check_error "dot-dot" org.stablepages1.Error.InvalidName GetDevice string:".."
check_error "path traversal" org.stablepages1.Error.InvalidName SetDevicePolicy string:"../../etc" string:off uint64:0
check_error "control character" org.stablepages1.Error.InvalidName GetDevice string:"$(printf 'lo\top')"
check_error "over-long name" org.stablepages1.Error.InvalidName GetDevice string:"$long"
check_error "empty name" org.stablepages1.Error.InvalidName GetDevice string:""
check_error "unknown device" org.stablepages1.Error.NoSuchDevice GetDevice string:nosuchdisk9
check_error "unknown device in Apply" org.stablepages1.Error.NoSuchDevice Apply array:string:nosuchdisk9 uint64:0
check_error "unknown mode" org.freedesktop.DBus.Error.InvalidArgs SetDevicePolicy string:"$loop" string:sideways uint64:0
check_error "unknown flag bits" org.freedesktop.DBus.Error.InvalidArgs SetDevicePolicy string:"$loop" string:on uint64:64
check_error "unknown apply flags" org.freedesktop.DBus.Error.InvalidArgs Apply array:string: uint64:128
check_error "unknown dump flags" org.freedesktop.DBus.Error.InvalidArgs DumpJSON array:string: uint64:9
check_error "unknown reset flags" org.freedesktop.DBus.Error.InvalidArgs ResetDevicePolicy string:"$loop" uint64:2
check_error "wrong types" org.freedesktop.DBus.Error.InvalidArgs SetDevicePolicy string:"$loop" string:on
check_error "wrong types (int for string)" org.freedesktop.DBus.Error.InvalidArgs GetDevice int32:7
kill -0 "$daemon_pid" || fail "daemon died"

# 6. The interlock over the bus: a protected device would be refused; ctl maps errors.
out=$("$CTL" explain nosuchdisk9 2>&1); rc=$?
[ $rc -eq 4 ] || fail "explain of a missing device exited $rc, want 4: $out"
out=$("$CTL" explain "$loop" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "need none" <<<"$out" || fail "explain $loop: rc=$rc: $out"

# 6b. GetDeviceProperties: GetDevice's path, every property GetAll gives with the same value,
# and StableId (GetAll leaves it out); explain makes that one call to the daemon and no other.
mgr() { busctl --system --json=short call org.stablepages1 /org/stablepages1 org.stablepages1.Manager "$@"; }
props=$(mgr GetDeviceProperties s "$loop" 2>&1) || fail "GetDeviceProperties $loop: $props"
path=$(mgr GetDevice s "$loop" | jq -r '.data[0]')
all=$(busctl --system --json=short call org.stablepages1 "$path" org.freedesktop.DBus.Properties GetAll \
        s org.stablepages1.Device 2>&1) || fail "GetAll $path: $all"
sid=$(busctl --system --json=short get-property org.stablepages1 "$path" org.stablepages1.Device StableId |
        jq -r .data)
jq -e --arg path "$path" --arg sid "$sid" --argjson all "$all" \
        '.data[0] == $path and .data[1].StableId.data == $sid and (.data[1] | del(.StableId)) == $all.data[0]' \
        <<<"$props" >/dev/null || fail "GetDeviceProperties differs from GetDevice, GetAll and StableId: $props"
check_error "unknown device (GetDeviceProperties)" org.stablepages1.Error.NoSuchDevice GetDeviceProperties string:nosuchdisk9
check_error "slash in name (GetDeviceProperties)" org.stablepages1.Error.InvalidName GetDeviceProperties string:"../sda"
busctl --system --json=short monitor --match "type='method_call',destination='org.stablepages1'" \
        >"$tmp/calls" 2>&1 &
monitor=$!
seen_pings() { grep -c '"member":"Ping"' "$tmp/calls"; }
for ((i = 0; i < 100; i++)); do
        busctl --system call org.stablepages1 /org/stablepages1 org.freedesktop.DBus.Peer Ping >/dev/null
        [ "$(seen_pings)" -gt 0 ] && break
        sleep 0.05
done
out=$("$CTL" --no-pager explain "$loop" 2>&1) || fail "explain $loop under the monitor: $out"
pings=$(seen_pings)
for ((i = 0; i < 100; i++)); do
        busctl --system call org.stablepages1 /org/stablepages1 org.freedesktop.DBus.Peer Ping >/dev/null
        [ "$(seen_pings)" -gt "$pings" ] && break
        sleep 0.05
done
kill "$monitor"; wait "$monitor" 2>/dev/null
calls=$(grep '^{' "$tmp/calls" | jq -r 'select(.member != "Ping") | .member' | tr '\n' ' ')
[ "$calls" = "GetDeviceProperties " ] || fail "explain called the daemon with: '$calls', want one GetDeviceProperties"

# 7. reset without --runtime removes the drop-in; check-config reports file:line, exit 1.
out=$("$CTL" reset "$loop" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "^$loop: removed persistent override $dropin$" <<<"$out" || fail "reset: rc=$rc: $out"
[ ! -e "$dropin" ] || fail "reset left the drop-in"
out=$("$CTL" reset "$loop" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "^error: $loop: no override to remove" <<<"$out" || fail "second reset: rc=$rc: $out"
printf '[Manager]\nPolicy=sideways\n' > "$tmp/bad.conf"
out=$("$CTL" check-config "$tmp/bad.conf" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "$tmp/bad.conf:2: error: invalid Policy=" <<<"$out" || fail "check-config: rc=$rc: $out"
out=$("$CTL" check-config --config-dir="$tmp/etc" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "check-config of the good configuration: rc=$rc: $out"

[ $fails -eq 0 ] || { echo "--- daemon log"; cat "$tmp/daemon.log"; echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
