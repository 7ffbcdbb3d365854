#!/bin/bash
# scripts/test pauses the machine's stablepagesd for the run and starts it again at the end
# (tests/pause-system-daemon): here a daemon started as scripts/run starts it (by hand, nohup,
# its output appended to a log) on a private system bus (the helper finds the daemon as the owner
# of org.stablepages1 on $DBUS_SYSTEM_BUS_ADDRESS).
# - pause names its PID, stops it with SIGTERM and waits: the name has no owner any more;
# - resume starts it again with the same command line, environment, working directory and log,
#   and says so with the new PID; a second resume starts nothing; pause with no daemon says
#   nothing.
# The systemd branch (systemctl mask --runtime + stop, unmask + start, the udev rule masked) is
# proven in the systemd guest (tests/vm/boot, scenario package, check pause-for-tests).
set -uo pipefail
SPD=${1:-${STABLEPAGESD:-stablepagesd}}
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PAUSE=$SRC/tests/pause-system-daemon
SPD=$(realpath "$(command -v "$SPD")") # started from another directory below

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a system bus of its own)"; exit 77; }
for t in dbus-daemon busctl; do
        command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done
for r in /usr/lib/udev/rules.d /lib/udev/rules.d; do
        if [ -S /run/udev/control ] && [ -e "$r/60-stablepages.rules" ]; then
                echo "SKIP: udevd runs here with $r/60-stablepages.rules: the helper would mask this machine's rule"
                exit 77
        fi
done

tmp=$(mktemp -d /tmp/stablepages-pause.XXXXXX)
. "$SRC/tests/integration/bus-lib.sh"
cleanup() {
        local p
        p=$(busctl --system status org.stablepages1 2>/dev/null | sed -n 's/^PID=//p')
        [ -n "$p" ] && kill "$p" 2>/dev/null
        for _ in $(seq 50); do [ -n "$p" ] && [ -e "/proc/$p" ] && sleep 0.1; done
        [ -n "$p" ] && [ -e "/proc/$p" ] && kill -9 "$p"
        bus_stop
        rm -rf "$tmp"
}
trap cleanup EXIT

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
owner() { busctl --system status org.stablepages1 2>/dev/null | sed -n 's/^PID=//p'; }

bus_start --no-polkit || exit 1
mkdir -p "$tmp/etc" "$tmp/run" "$tmp/state" "$tmp/cwd"
printf '[Manager]\nDevices=sp-pause-test-none\nPolicy=observe\nRescanSec=0\n' >"$tmp/etc/stablepages.conf"
cmd=("$SPD" --config-dir="$tmp/etc" --runtime-dir="$tmp/run" --state-dir="$tmp/state" --log-target=console)

# 0. Nothing runs: pause says nothing and does nothing.
out=$("$PAUSE" pause "$tmp/p0" 2>&1) || fail "pause with no daemon: exit $?: $out"
[ -z "$out" ] || fail "pause with no daemon said: $out"

# 1. A daemon started as scripts/run starts it.
(cd "$tmp/cwd" && SP_PAUSE_MARK=kept STABLEPAGES_STALLS_FORCE_UNAVAILABLE=1 \
        nohup "${cmd[@]}" >>"$tmp/daemon.log" 2>&1 &)
for _ in $(seq 100); do [ -n "$(owner)" ] && break; sleep 0.05; done
pid=$(owner)
[ -n "$pid" ] || { cat "$tmp/daemon.log"; echo "FAIL: the daemon is not on the bus"; exit 1; }
starts=$(grep -c . "$tmp/daemon.log")

# 2. pause: says which PID, stops it, waits for it.
out=$("$PAUSE" pause "$tmp/p" 2>&1); rc=$?
echo "pause: $out"
[ $rc -eq 0 ] || fail "pause: exit $rc"
grep -q "PID $pid (.*stablepagesd --config-dir=$tmp/etc .*) is paused for the test run: SIGTERM" <<<"$out" ||
        fail "pause does not name PID $pid and how it stops it"
grep -q "log: $tmp/daemon.log" <<<"$out" || fail "pause does not name the daemon's log"
[ -e "/proc/$pid" ] && fail "PID $pid still exists after pause returned"
[ -z "$(owner)" ] || fail "org.stablepages1 still has an owner after pause: $(owner)"

# 3. resume: the same command line, environment, directory and log; a new PID, said.
out=$("$PAUSE" resume "$tmp/p" 2>&1); rc=$?
echo "resume: $out"
[ $rc -eq 0 ] || fail "resume: exit $rc"
new=$(owner)
if [ -z "$new" ] || [ "$new" = "$pid" ]; then
        fail "resume: org.stablepages1 is owned by '${new}' (before: $pid)"
else
        grep -q "started again: PID $new (.*stablepagesd --config-dir=$tmp/etc .*, log: $tmp/daemon.log)" <<<"$out" ||
                fail "resume does not say the new PID $new, the command line and the log"
        [ "$(tr '\0' ' ' <"/proc/$new/cmdline")" = "${cmd[*]} " ] ||
                fail "resumed with another command line: $(tr '\0' ' ' <"/proc/$new/cmdline")"
        tr '\0' '\n' <"/proc/$new/environ" | grep -qx SP_PAUSE_MARK=kept || fail "resumed without its environment"
        [ "$(readlink "/proc/$new/cwd")" = "$tmp/cwd" ] || fail "resumed in $(readlink "/proc/$new/cwd")"
        [ "$(readlink "/proc/$new/fd/1")" = "$tmp/daemon.log" ] || fail "resumed with output to $(readlink "/proc/$new/fd/1")"
        [ "$(ps -o sid= -p "$new" | tr -d ' ')" = "$new" ] || fail "resumed in another process's session"
fi
[ "$(grep -c . "$tmp/daemon.log")" -gt "$starts" ] || fail "the log was not appended to"

# 4. A second resume starts nothing.
out=$("$PAUSE" resume "$tmp/p" 2>&1) || fail "second resume: exit $?: $out"
[ -z "$out" ] || fail "second resume said: $out"
[ "$(owner)" = "$new" ] || fail "second resume changed the owner: $(owner)"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
