# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Shared helpers of the daemon integration tests. Source it, then call sp_setup "$@".
#
# The tests run stablepagesd for real, as root, on loop and zram devices they create
# themselves; they touch nothing they did not create and undo everything on every exit
# path (sp_defer registers the undo steps, run in reverse order at exit). Exit 77 means
# skipped (not root, a kernel facility is missing), with the reason on stderr.
#
# The daemon binary is $1 or $STABLEPAGESD. The C helper (sp-helper.c, next to this file)
# is $SP_HELPER, else built with ${CC:-cc} into the test's temp dir.

set -euo pipefail

SP_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SP_CLEANUP=()
SP_PID=
SP_TMP=

sp_log() { echo "# $*"; }
sp_skip() { echo "SKIP: $*" >&2; exit 77; }
sp_fail() {
        echo "FAIL: $*" >&2
        if [ -n "$SP_TMP" ] && [ -s "$SP_TMP/daemon.log" ]; then
                echo "--- daemon log (last 40 lines) ---" >&2
                tail -n 40 "$SP_TMP/daemon.log" >&2
        fi
        exit 1
}

# Registers a command (one string, eval'ed) to run at exit.
sp_defer() { SP_CLEANUP+=("$1"); }

sp_cleanup() {
        local rc=$? i
        set +e
        for ((i = ${#SP_CLEANUP[@]} - 1; i >= 0; i--)); do
                eval "${SP_CLEANUP[$i]}" >/dev/null 2>&1
        done
        if [ -n "$SP_TMP" ] && [ -d "$SP_TMP" ]; then
                # Never follow into a mount left behind by a failed umount.
                if grep -q " ${SP_TMP}/" /proc/self/mountinfo; then
                        echo "warning: mounts left under $SP_TMP, not removing it" >&2
                else
                        rm -rf --one-file-system "$SP_TMP"
                fi
        fi
        exit "$rc"
}

sp_setup() {
        SP_BIN=${1:-${STABLEPAGESD:-}}
        [ "$(id -u)" -eq 0 ] || sp_skip "needs root (real block devices, mounts and cgroups)"
        [ -n "$SP_BIN" ] || sp_fail "no stablepagesd binary: pass it as \$1 or in \$STABLEPAGESD"
        [ -x "$SP_BIN" ] || sp_fail "$SP_BIN is not executable"
        for tool in jq losetup mount umount; do
                command -v "$tool" >/dev/null || sp_skip "$tool is not installed"
        done
        [ -e /dev/loop-control ] || sp_skip "no loop device support (/dev/loop-control)"

        SP_TMP=$(mktemp -d /tmp/stablepages-test.XXXXXX)
        trap sp_cleanup EXIT
        trap 'exit 130' INT TERM
        SP_ETC=$SP_TMP/etc
        SP_RUNTIME=$SP_TMP/run
        mkdir -p "$SP_ETC/stablepages.conf.d"

        if [ -z "${SP_HELPER:-}" ]; then
                SP_HELPER=$SP_TMP/sp-helper
                "${CC:-cc}" -std=gnu11 -O2 -o "$SP_HELPER" "$SP_SRCDIR/sp-helper.c" ||
                        sp_skip "cannot build sp-helper (no C compiler?)"
        fi
}

# Milliseconds since the epoch.
# sp_require TOOL...: skips unless every TOOL is on the PATH.
sp_require() {
        local t
        for t in "$@"; do
                command -v "$t" >/dev/null || sp_skip "$t is missing (scripts/install-deps test)"
        done
}

# sp_ctl_arg PATH: sets CTL to stablepagesctl, given as PATH (a test's $2) or $STABLEPAGESCTL.
sp_ctl_arg() {
        CTL=${1:-${STABLEPAGESCTL:-}}
        [ -x "$CTL" ] || sp_fail "no stablepagesctl: pass it as \$2 or in \$STABLEPAGESCTL"
}

sp_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# sp_run VAR CMD...: runs CMD; its output (stdout and stderr) in VAR, its exit status in rc.
sp_run() {
        local -n _sp_out=$1
        shift
        rc=0
        _sp_out=$("$@" 2>&1) || rc=$?
}

# sp_wait_for MS DESCRIPTION COMMAND...: polls COMMAND every 20 ms until it succeeds;
# fails the test after MS milliseconds. Prints the milliseconds it took.
sp_wait_for() {
        local ms=$1 what=$2 start
        shift 2
        start=$(sp_now_ms)
        while ! "$@" >/dev/null 2>&1; do
                if (($(sp_now_ms) - start > ms)); then
                        sp_fail "timed out after $ms ms waiting for: $what"
                fi
                sleep 0.02
        done
        echo $(($(sp_now_ms) - start))
}

# Picks an unused loop device number (the device does not exist yet), from a random
# place in 200..999 so that parallel tests rarely collide.
sp_free_loop_number() {
        local n i
        for ((i = 0; i < 800; i++)); do
                n=$((200 + (RANDOM + i) % 800))
                [ -e "/sys/block/loop$n" ] || { echo "$n"; return 0; }
        done
        sp_fail "no free loop device number"
}

# sp_loop_attach N SIZE: creates a sparse backing file and attaches it as loopN (which
# the kernel creates); detaches and removes the device at exit.
sp_loop_attach() {
        local n=$1 size=$2
        truncate -s "$size" "$SP_TMP/loop$n.img"
        sp_defer "sp_loop_destroy $n"
        losetup "/dev/loop$n" "$SP_TMP/loop$n.img" || sp_fail "cannot attach /dev/loop$n"
}

# Detaches loopN and removes the device node the kernel made for it.
sp_loop_destroy() {
        local n=$1 i
        losetup -d "/dev/loop$n" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
                [ -e "/sys/block/loop$n" ] || return 0
                "$SP_HELPER" loop-remove "$n" 2>/dev/null && return 0
                sleep 0.1
        done
        return 1
}

# Writeback throttling for the writer-stall measurements: cgroup v1 blkio (mounted under the
# test's temp dir when it is not mounted yet), else cgroup v2 io.max when the io controller
# is enabled. Sets SP_CG (the test's cgroup, removed at exit) and SP_CG_KIND (v1 or v2);
# skips the test when neither exists.
sp_cg_setup() {
        local v1 root
        v1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)blkio(,|$)/ { print $2; exit }' /proc/self/mounts)
        if [ -z "$v1" ] && grep -q '^blkio' /proc/cgroups; then
                mkdir -p "$SP_TMP/blkio"
                if mount -t cgroup -o blkio stablepages-test "$SP_TMP/blkio" 2>/dev/null; then
                        sp_defer "umount '$SP_TMP/blkio'"
                        v1=$SP_TMP/blkio
                fi
        fi
        if [ -n "$v1" ] && [ -e "$v1/blkio.throttle.write_iops_device" ]; then
                SP_CG=$v1/stablepages-test-$$
                SP_CG_KIND=v1
        else
                root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
                grep -qw io "$root/cgroup.subtree_control" 2>/dev/null ||
                        sp_skip "no blkio throttling: neither cgroup v1 blkio nor cgroup v2 with io enabled"
                SP_CG=$root/stablepages-test-$$
                SP_CG_KIND=v2
        fi
        mkdir "$SP_CG" || sp_fail "cannot create the cgroup $SP_CG"
        sp_defer "rmdir '$SP_CG'"
}

# sp_cg_throttle MAJ:MIN IOPS: limits writes of the test's cgroup to the disk.
sp_cg_throttle() {
        if [ "$SP_CG_KIND" = v1 ]; then
                echo "$1 $2" >"$SP_CG/blkio.throttle.write_iops_device"
        else
                echo "$1 wiops=$2" >"$SP_CG/io.max"
        fi
}

# sp_measure FILE REWRITES: rewrites a page of FILE under writeback REWRITES times from
# inside the throttled cgroup; prints sp-helper's result line (rewrite_avg_us=…).
sp_measure() {
        (
                echo "$BASHPID" >"$SP_CG/cgroup.procs"
                exec "$SP_HELPER" rewrite "$1" "$2"
        )
}

# sp_field NAME LINE: the number after NAME= in LINE.
sp_field() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<<"$2"; }

# sp_fs_usable FS: true when mkfs.FS exists and the kernel has FS.
sp_fs_usable() {
        command -v "mkfs.$1" >/dev/null || return 1
        grep -qw "$1" /proc/filesystems || modprobe "$1" 2>/dev/null || true
        grep -qw "$1" /proc/filesystems
}

# sp_mkfs FS DEV: makes a filesystem, quietly.
sp_mkfs() {
        case $1 in
        ext4) mkfs.ext4 -q -F "$2" ;;
        xfs) mkfs.xfs -q -f "$2" ;;
        btrfs) mkfs.btrfs -q -f "$2" ;;
        *) "mkfs.$1" "$2" ;;
        esac >/dev/null 2>&1 || sp_fail "mkfs.$1 $2 failed"
}

sp_flag() { cat "/sys/block/$1/queue/stable_writes"; }
# sp_flag_is DISK VALUE: true when queue/stable_writes of DISK reads VALUE.
sp_flag_is() { [ "$(cat "/sys/block/$1/queue/stable_writes" 2>/dev/null)" = "$2" ]; }

# sp_mount DEV DIR [OPTIONS]: mounts and unmounts at exit.
sp_mount() {
        mkdir -p "$2"
        mount ${3:+-o "$3"} "$1" "$2" || sp_fail "cannot mount $1 on $2"
        sp_defer "umount '$2'"
}

# sp_config TEXT: writes the main configuration file.
sp_config() { printf '%s\n' "$1" >"$SP_ETC/stablepages.conf"; }
# sp_config_device DISK SETTING: a main configuration that manages only DISK, without periodic
# rescans, and wants StableWrites=SETTING for it.
sp_config_device() {
        sp_config "[Manager]
Devices=$1
RescanSec=0

[Device $1]
StableWrites=$2"
}
# sp_dropin NAME TEXT: writes a drop-in.
sp_dropin() { printf '%s\n' "$2" >"$SP_ETC/stablepages.conf.d/$1"; }

# The daemon's view: jq FILTER applied to runtime_dir/devices.json (rewritten atomically
# after each reconcile).
sp_state() { jq -er "$1" "$SP_RUNTIME/devices.json"; }
# sp_state_is FILTER VALUE: true when the filter prints exactly VALUE.
sp_state_is() { [ "$(jq -r "$1" "$SP_RUNTIME/devices.json" 2>/dev/null)" = "$2" ]; }

# Counts lines of a file (0 when missing).
sp_lines() { if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# sp_log_has_since LINE REGEX: true when the daemon log has REGEX after line LINE.
sp_log_has_since() { grep -Eq -- "$2" <(tail -n +"$(($1 + 1))" "$SP_TMP/daemon.log"); }
sp_notify_has_since() { grep -Eq -- "$2" <(tail -n +"$(($1 + 1))" "$SP_TMP/notify.log"); }

# Starts the daemon in the background with the test's config and runtime dirs and waits
# for READY=1 on its notify socket. Extra arguments go to the daemon; environment for it
# can be given in SP_DAEMON_ENV (e.g. "WATCHDOG_USEC=1000000"); SP_READY_TIMEOUT_MS (default
# 5000) bounds the wait.
sp_daemon_start() {
        local off
        if [ ! -e "$SP_TMP/notify.sock" ]; then
                "$SP_HELPER" notify-listen "$SP_TMP/notify.sock" >>"$SP_TMP/notify.log" &
                sp_defer "kill $!"
                sp_wait_for 2000 "notify socket" test -S "$SP_TMP/notify.sock" >/dev/null
        fi
        off=$(sp_lines "$SP_TMP/notify.log")
        # JOURNAL_STREAM that does not match stderr makes the daemon log to stderr even when
        # a journal socket exists.
        env JOURNAL_STREAM=0:0 NOTIFY_SOCKET="$SP_TMP/notify.sock" \
                DBUS_SYSTEM_BUS_ADDRESS="unix:path=$SP_TMP/no-bus" ${SP_DAEMON_ENV:-} \
                "$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" "$@" \
                >>"$SP_TMP/daemon.log" 2>&1 &
        SP_PID=$!
        sp_defer "sp_daemon_kill $SP_PID"
        local start
        start=$(sp_now_ms)
        until sp_notify_has_since "$off" '^READY=1$'; do
                kill -0 "$SP_PID" 2>/dev/null || sp_fail "stablepagesd exited during start-up"
                (($(sp_now_ms) - start < ${SP_READY_TIMEOUT_MS:-5000})) ||
                        sp_fail "stablepagesd did not send READY=1 within ${SP_READY_TIMEOUT_MS:-5000} ms"
                sleep 0.02
        done
}

# Kills a daemon we started (if still running) and reaps it.
sp_daemon_kill() {
        kill -KILL "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
}

# Stops the daemon with SIGTERM; fails unless it exits with status 0 within 5 s.
sp_daemon_stop() {
        local i rc=0
        kill -TERM "$SP_PID"
        for ((i = 0; i < 250; i++)); do
                kill -0 "$SP_PID" 2>/dev/null || break
                sleep 0.02
        done
        kill -0 "$SP_PID" 2>/dev/null && sp_fail "stablepagesd did not exit on SIGTERM"
        wait "$SP_PID" || rc=$?
        [ "$rc" -eq 0 ] || sp_fail "stablepagesd exited with status $rc on SIGTERM"
        SP_PID=
}

# Sends SIGHUP and waits for the reload to finish (READY=1 after RELOADING=1).
sp_daemon_reload() {
        local off
        off=$(sp_lines "$SP_TMP/notify.log")
        kill -HUP "$SP_PID"
        sp_wait_for 5000 "RELOADING=1 then READY=1 after SIGHUP" \
                sh -c "tail -n +$((off + 1)) '$SP_TMP/notify.log' | grep -A100 '^RELOADING=1$' | grep -q '^READY=1$'" >/dev/null
}
