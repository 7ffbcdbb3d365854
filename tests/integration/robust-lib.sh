# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Helpers of the robustness tests (test-robust-*.sh, issue 9): lib.sh (temp dir, loop
# devices, the daemon with a notify socket, cleanup on every exit path) plus a private
# system bus (bus-lib.sh) that the daemon is put on. Source it, then call robust_setup "$@".

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# robust_setup [--bus|--bus-polkit] [STABLEPAGESD [STABLEPAGESCTL]]
robust_setup() {
        local bus=
        case "${1:-}" in
        --bus | --bus-polkit) bus=$1; shift ;;
        esac
        sp_setup "$@"
        SP_CTL=${2:-${STABLEPAGESCTL:-$(dirname "$SP_BIN")/../ctl/stablepagesctl}}
        SRC=${SRC:-$(cd "$SP_SRCDIR/../.." && pwd)}
        [ -z "$bus" ] && return 0
        for tool in dbus-daemon busctl dbus-send; do
                command -v "$tool" >/dev/null || sp_skip "$tool is not installed"
        done
        if [ "$bus" = --bus-polkit ]; then
                [ -x /usr/lib/polkit-1/polkitd ] || sp_skip "polkitd is not installed"
        fi
        # bus-lib.sh works in $tmp and needs $SRC.
        tmp=$SP_TMP
        export SRC
        source "$SP_SRCDIR/bus-lib.sh"
        sp_defer "bus_stop"
        if [ "$bus" = --bus-polkit ]; then bus_start; else bus_start --no-polkit; fi ||
                sp_fail "cannot start the private system bus"
        SP_DAEMON_ENV="DBUS_SYSTEM_BUS_ADDRESS=$DBUS_SYSTEM_BUS_ADDRESS ${SP_DAEMON_ENV:-}"
}

# robust_own_loop SIZE: a loop device of the test's own ($loop, $loop_n; removed at exit) and
# a configuration in which the daemon manages it alone, without periodic rescans.
robust_own_loop() {
        loop_n=$(sp_free_loop_number)
        loop=loop$loop_n
        sp_loop_attach "$loop_n" "$1"
        sp_config "[Manager]
Devices=$loop
RescanSec=0"
}

# True when org.stablepages1 has an owner on the private bus.
robust_has_name() { busctl --system status org.stablepages1 >/dev/null 2>&1; }

# Starts the daemon (sp_daemon_start) and waits until it owns its bus name.
robust_daemon_start() {
        sp_daemon_start "$@"
        sp_wait_for "${SP_READY_TIMEOUT_MS:-5000}" "org.stablepages1 on the bus" robust_has_name >/dev/null
}

# robust_call METHOD ARGS...: calls a Manager method with dbus-send; prints the reply or
# the error (dbus-send prints the error name); exit status of dbus-send.
robust_call() {
        dbus-send --system --print-reply --reply-timeout=30000 --dest=org.stablepages1 /org/stablepages1 \
                "org.stablepages1.Manager.$@" 2>&1
}

# robust_loop_pair: attaches two loop devices of 32 MiB, $loop and $prot, and configures the
# daemon to manage both, $prot "needing" stable writes (Need=required: off without force is
# refused, and its own StableWrites=off cannot be applied).
robust_loop_pair() {
        local n m
        n=$(sp_free_loop_number)
        loop=loop$n
        sp_loop_attach "$n" 32M
        m=$(sp_free_loop_number)
        prot=loop$m
        sp_loop_attach "$m" 32M
        sp_config "[Manager]
Devices=$loop $prot
RescanSec=0

[Device $prot]
Need=required"
}

# VmRSS of a process in KiB.
robust_rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
