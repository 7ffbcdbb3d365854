# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Helpers of the unmount + mount cycle tests (test-remount-*.sh), on top of lib.sh: a private
# system bus, writeback throttling and the stall measurement (as test-daemon-effective.sh),
# the host's view of a mount, files with checksums. Source after lib.sh and sp_setup.

RM_IOPS=20
RM_REWRITES=20

# rm_require TOOL...: skips the test when a tool is missing.
rm_require() {
        local t
        for t in "$@"; do
                command -v "$t" >/dev/null || sp_skip "$t is not installed"
        done
}

# A private system bus (bus-lib.sh, without polkit: root is allowed without it) that the
# daemon started next uses; stopped at exit.
rm_bus_start() {
        rm_require dbus-daemon busctl
        # shellcheck disable=SC2034 # used by bus-lib.sh
        tmp=$SP_TMP
        # shellcheck source=bus-lib.sh
        source "$SP_SRCDIR/bus-lib.sh"
        sp_defer bus_stop
        bus_start --no-polkit || sp_fail "cannot start a private system bus"
        SP_DAEMON_ENV="${SP_DAEMON_ENV:-} DBUS_SYSTEM_BUS_ADDRESS=$DBUS_SYSTEM_BUS_ADDRESS"
}

# Waits until the daemon owns its name on the bus.
rm_wait_bus() {
        sp_wait_for 5000 "org.stablepages1 on the bus" busctl --system status org.stablepages1 >/dev/null
}

# Follows the daemon's signals (stablepagesctl monitor) into $SP_TMP/monitor.log.
rm_monitor_start() {
        "$RM_CTL" --no-pager monitor >"$SP_TMP/monitor.log" 2>&1 &
        sp_defer "kill $!"
        sp_wait_for 3000 "stablepagesctl monitor" grep -q Monitoring "$SP_TMP/monitor.log" >/dev/null
}


# The kernel's unique id of the mount on PATH (statx STATX_MNT_ID_UNIQUE, 6.8+; else the
# reusable mount id), seen from the test's (the host's) mount namespace.
rm_unique_id() {
        python3 - "$1" <<'PY'
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(256)
for mask in (0x4000, 0x1000):  # STATX_MNT_ID_UNIQUE, STATX_MNT_ID
    if libc.statx(-100, sys.argv[1].encode(), 0x800, mask, buf) == 0 and \
            int.from_bytes(buf.raw[0:4], "little") & mask:
        print(int.from_bytes(buf.raw[144:152], "little"))
        sys.exit(0)
sys.exit(1)
PY
}

# The mountinfo line of the mount visible on PATH in the test's namespace, "" if none.
rm_mountinfo() { awk -v t="$1" '$5 == t { l = $0 } END { print l }' /proc/self/mountinfo; }
rm_is_mounted() { [ -n "$(rm_mountinfo "$1")" ]; }
# The per-mount and superblock options of the mount on PATH: "VFS | FS".
rm_options() { rm_mountinfo "$1" | awk '{ for (i = 7; $i != "-"; i++); print $6 " | " $(i + 3) }'; }

# rm_fill DIR: a few files of random data in a small tree, and their checksums in
# $SP_TMP/DIRNAME.sha256 (outside the filesystem); synced.
rm_fill() {
        local dir=$1 name
        name=$(basename "$dir")
        mkdir -p "$dir/data/sub"
        head -c 3M /dev/urandom >"$dir/data/big"
        head -c 123457 /dev/urandom >"$dir/data/sub/odd"
        seq 1 20000 >"$dir/data/sub/text"
        for i in 1 2 3 4 5; do head -c 4096 /dev/urandom >"$dir/data/page$i"; done
        (cd "$dir" && find data -type f -print0 | sort -z | xargs -0 sha256sum) >"$SP_TMP/$name.sha256"
        sync -f "$dir/data/big"
}

# rm_verify DIR: the files are all there with their checksums.
rm_verify() {
        local dir=$1 name
        name=$(basename "$dir")
        (cd "$dir" && sha256sum --quiet -c "$SP_TMP/$name.sha256") ||
                sp_fail "$dir: files differ from their checksums"
        [ "$(cd "$dir" && find data -type f | wc -l)" = "$(wc -l <"$SP_TMP/$name.sha256")" ] ||
                sp_fail "$dir: the number of files changed"
}

# jq selector of the daemon's record of the filesystem on TARGET.
rm_fsq() { echo ".filesystems[] | select(.target == \"$1\")"; }

# rm_umount_dev DEV: unmounts DEV wherever it is mounted (a cycle may leave it elsewhere).
rm_umount_dev() {
        local t
        while t=$(findmnt -n -o TARGET --source "$1" 2>/dev/null | tail -n1) && [ -n "$t" ]; do
                umount "$t" || return 1
        done
}

# The test hook STABLEPAGES_TEST_REMOUNT_PAUSE (stablepagesd(8)): each cycle of the daemon
# started next pauses at its steps while the test holds $RM_FIFO open (rm_pause_open).
rm_pause_setup() {
        RM_FIFO=$SP_TMP/pause
        mkfifo "$RM_FIFO" "$RM_FIFO.go"
        SP_DAEMON_ENV="${SP_DAEMON_ENV:-} STABLEPAGES_TEST_REMOUNT_PAUSE=$RM_FIFO"
}
rm_pause_open() { exec 7<>"$RM_FIFO"; }
rm_pause_close() { exec 7<&-; }
# rm_release: the paused cycle goes on.
rm_release() { timeout 10 sh -c "echo go >'$RM_FIFO.go'" 2>/dev/null || true; }
# rm_step_to STEP: lets the cycle go on at each step before STEP ("before-umount",
# "after-umount", "after-mount"); RM_CHILD is then the PID of the cycle's process.
rm_step_to() {
        local step pid
        while read -r -t 20 step pid <&7; do
                if [ "$step" = "$1" ]; then
                        RM_CHILD=$pid
                        return 0
                fi
                rm_release
        done
        sp_fail "the cycle never reached the step $1"
}
# The journal files of cycles in flight.
rm_journals() { find "$SP_RUNTIME/cycles" -maxdepth 1 -type f ! -name '*.lock' -printf '%f\n' 2>/dev/null; }
# rm_kill_at STEP DISK: asks for a cycle of DISK (apply --remount, its output in
# $SP_TMP/apply.out), lets it go on to STEP (rm_pause_setup) and kills it there with its
# daemon, both frozen first (killed one after the other, the daemon could see its cycle die
# and mount it back before its own SIGKILL lands). SP_PID is empty afterwards.
rm_kill_at() {
        local apid
        rm_pause_open
        "$RM_CTL" --no-pager apply "$2" --remount >"$SP_TMP/apply.out" 2>&1 7<&- &
        apid=$!
        rm_step_to "$1"
        rm_pause_close
        kill -STOP "$SP_PID" "$RM_CHILD"
        kill -9 "$RM_CHILD" "$SP_PID"
        wait $apid || true
        wait "$SP_PID" 2>/dev/null || true
        SP_PID=
}
