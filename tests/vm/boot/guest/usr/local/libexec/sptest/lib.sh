# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Helpers of the boot test's guest scripts (tests/vm/boot/scenarios/*/guest/.../boot-test),
# run by sp-boot-test.service with systemd as PID 1. Source it first: from then on all output
# goes to the second serial port, parsed by tests/vm/boot/test-boot, one line each:
#   SPTEST ok NAME | SPTEST not ok NAME: WHY | SPTEST info TEXT | SPTEST done PASSED FAILED
# End the script with sp_finish: on a failure the whole journal of the boot follows on the
# third serial port.

exec >/dev/ttyS1 2>&1
stty -F /dev/ttyS1 raw -echo 2>/dev/null

passed=0
failed=0

info() { echo "SPTEST info $*"; }
ok() {
        echo "SPTEST ok $1"
        passed=$((passed + 1))
}
fail() {
        echo "SPTEST not ok $1: $2"
        failed=$((failed + 1))
}
flag() { cat "/sys/block/$1/queue/stable_writes"; }
# mono UNIT PROPERTY: a property of a unit (e.g. a monotonic timestamp in µs).
mono() { systemctl show -P "$2" "$1"; }
# Waits up to $1 seconds for the flag of $2 to read $3.
wait_flag() {
        local i
        for ((i = 0; i < $1 * 10; i++)); do
                [ "$(flag "$2")" = "$3" ] && return 0
                sleep 0.1
        done
        return 1
}

# The journal of the daemon as info lines, the time, the journal on failure, the done line.
sp_finish() {
        local up
        journalctl -b --no-pager -o short-monotonic -t stablepagesd -u stablepagesd.service |
                sed 's/^/SPTEST info journal: /'
        read -r up _ </proc/uptime
        info "checks done at ${up} s uptime"
        if [ "$failed" -gt 0 ]; then
                journalctl -b --no-pager -o short-monotonic >/dev/ttyS2 2>&1
        fi
        echo "SPTEST done $passed $failed"
}

read -r _sp_up _ </proc/uptime
info "boot: test started at ${_sp_up} s uptime; userspace started at" \
        "$(($(systemctl show -P UserspaceTimestampMonotonic) / 1000)) ms;" \
        "stablepagesd active at $(($(mono stablepagesd.service ActiveEnterTimestampMonotonic) / 1000)) ms;" \
        "multi-user.target at $(($(mono multi-user.target ActiveEnterTimestampMonotonic) / 1000)) ms"
info "kernel $(uname -r), $(systemctl --version | head -n1)," \
        "kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)"
