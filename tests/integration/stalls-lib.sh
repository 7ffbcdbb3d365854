# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Shared by the adaptive-policy tests: a blkio v1 cgroup that throttles writes, the throttled
# writer, and stablepagesd on a private system bus. Source after lib.sh's sp_setup (uses
# $SP_TMP, sp_defer, sp_fail, sp_skip) and with $SRC set.

# stalls_cgroup: creates a blkio cgroup (mounting the v1 controller when needed) in $STALLS_CG.
stalls_cgroup() {
        local root
        if [ -e /sys/fs/cgroup/blkio/blkio.throttle.write_iops_device ]; then
                root=/sys/fs/cgroup/blkio
        elif grep -qw blkio /proc/cgroups; then
                root=$SP_TMP/blkio
                mkdir "$root"
                mount -t cgroup -o blkio none "$root" 2>/dev/null ||
                        sp_skip "cgroup v1 blkio controller cannot be mounted (bound to cgroup v2?)"
                sp_defer "umount '$root'; rmdir '$root'"
                [ -e "$root/blkio.throttle.write_iops_device" ] || sp_skip "no blk-throttle"
        else
                sp_skip "no blkio cgroup controller"
        fi
        STALLS_CG=$root/stablepages-adaptive-$$
        mkdir "$STALLS_CG" || sp_skip "cannot create a blkio cgroup"
        sp_defer "rmdir '$STALLS_CG'"
}

# stalls_throttle DISK IOPS: limits the writes of the cgroup to DISK.
stalls_throttle() {
        echo "$(cat "/sys/block/$1/dev") $2" >"$STALLS_CG/blkio.throttle.write_iops_device" ||
                sp_fail "cannot throttle $1"
}

# stalls_write FILE ITERATIONS: runs stall-writer in the throttled cgroup; prints its line.
stalls_write() {
        sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$STALLS_CG" \
                "$STALL_WRITER" --iterations "$2" --slow-usec 1000 "$1" || sp_fail "stall-writer failed"
}

# stalls_field LINE KEY: a key=value of the writer's line.
stalls_field() { sed -n "s/.*\<$2=\([0-9]*\).*/\1/p" <<<"$1"; }

# stalls_daemon_start: stablepagesd on the private bus (bus-lib.sh's bus_start first) with
# the test's config, runtime and state dirs; waits until it owns its name.
stalls_daemon_start() {
        env JOURNAL_STREAM=0:0 ${SP_DAEMON_ENV:-} "$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" \
                --state-dir="$SP_TMP/state" --log-target=console >>"$SP_TMP/daemon.log" 2>&1 &
        SP_PID=$!
        sp_defer "sp_daemon_kill $SP_PID"
        for _ in $(seq 200); do
                busctl --system status org.stablepages1 >/dev/null 2>&1 && return 0
                kill -0 "$SP_PID" 2>/dev/null || sp_fail "stablepagesd exited during start-up"
                sleep 0.05
        done
        sp_fail "stablepagesd did not take its bus name within 10 s"
}

# stalls_dev_prop DISK PROPERTY: a property of the disk's D-Bus object, value only.
stalls_dev_prop() {
        busctl --system get-property org.stablepages1 "/org/stablepages1/device/$1" org.stablepages1.Device "$2" |
                cut -d' ' -f2-
}
