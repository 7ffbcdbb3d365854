# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Shared by the adaptive-policy tests: the throttled writer, a filesystem mounted with stable
# writes, and stablepagesd on a private system bus. Source after lib.sh's sp_setup (uses
# $SP_TMP, sp_defer, sp_fail, sp_skip) and with $SRC set.

# stalls_setup: a private system bus (bus-lib.sh, no polkitd) and the throttling cgroup of
# lib.sh's sp_cg_setup.
stalls_setup() {
        tmp=$SP_TMP
        . "$SRC/tests/integration/bus-lib.sh"
        bus_start --no-polkit || sp_fail "cannot start a private system bus"
        sp_defer bus_stop
        sp_cg_setup
}

# stalls_throttle DISK IOPS: limits the writes of the cgroup to DISK.
stalls_throttle() { sp_cg_throttle "$(cat "/sys/block/$1/dev")" "$2" || sp_fail "cannot throttle $1"; }

# stalls_mount_flag1 DISK DIR: mkfs.ext4 on DISK and mounts it on DIR (unmounted at exit) with
# stable_writes=1 captured at mount. Another test's daemon that manages every disk could
# write the flag between the write and the mount: then it mounts again.
stalls_mount_flag1() {
        local try
        mkfs.ext4 -q -F "/dev/$1" || sp_fail "mkfs.ext4 on $1"
        mkdir -p "$2"
        sp_defer "umount '$2'"
        for try in 1 2 3; do
                echo 1 >"/sys/block/$1/queue/stable_writes"
                mount "/dev/$1" "$2" || sp_fail "cannot mount /dev/$1"
                sp_flag_is "$1" 1 && return 0
                sp_log "the flag of $1 moved during the mount (another daemon?), mounting again"
                umount "$2"
        done
        sp_fail "cannot mount $1 with stable_writes=1: something else writes its flag"
}

# stalls_zram_throttled: a new zram device (need required; removed at exit) with ext4 mounted on
# $SP_TMP/mnt and its writes throttled to 10 IOPS; sets zram (its name) and mnt. Skips when
# the kernel does not declare stable writes on zram.
stalls_zram_throttled() {
        zram=zram$(cat /sys/class/zram-control/hot_add) || sp_fail "zram hot_add failed"
        sp_defer "echo ${zram#zram} > /sys/class/zram-control/hot_remove"
        echo 128M >"/sys/block/$zram/disksize"
        mkfs.ext4 -q -F "/dev/$zram" || sp_fail "mkfs.ext4 on $zram"
        mnt=$SP_TMP/mnt
        sp_mount "/dev/$zram" "$mnt"
        sp_flag_is "$zram" 1 || sp_skip "$zram does not declare stable writes on this kernel"
        stalls_throttle "$zram" 10
}

# stalls_loop_mounted SIZE: a loop device of the test's own ($loop, removed at exit) with ext4
# mounted on $mnt with stable writes captured (stalls_mount_flag1).
stalls_loop_mounted() {
        local n
        n=$(sp_free_loop_number)
        loop=loop$n
        sp_loop_attach "$n" "$1"
        mnt=$SP_TMP/mnt
        stalls_mount_flag1 "$loop" "$mnt"
}

# stalls_write FILE ITERATIONS: runs stall-writer in the throttled cgroup; prints its line.
stalls_write() {
        sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$SP_CG" \
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
