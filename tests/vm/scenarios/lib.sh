# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Shared helpers of the guest scenarios (tests/vm/scenarios/*.sh), sourced by bash in the
# guest that tests/vm/vm-run boots. The guest is a throw-away VM: every device here is the
# scenario's own, so nothing is cleaned up beyond what a scenario needs to go on.
#
# Needs $BUILD (the meson build dir, given with vm-run --env BUILD=...). Results: "ok"/"FAIL"
# lines on stdout (the console log), a copy in $VM_OUT/result; sp_done exits 1 when any check
# failed. The device-making code follows tests/fixtures/scenarios/vm.sh.

set -uo pipefail

: "${BUILD:?BUILD (the meson build directory) is not set: vm-run --env BUILD=DIR}"
SPD=$BUILD/daemon/stablepagesd
CTL=$BUILD/ctl/stablepagesctl
RACE_WRITER=$BUILD/tests/vm/race-writer
STALL_WRITER=$BUILD/tests/stall-writer
ETC=/run/sp/etc        # the scenario's configuration (--config-dir)
RUNTIME=/run/sp/state  # the scenario's runtime dir
RESULT=$VM_OUT/result
SP_FAILS=0
mkdir -p "$ETC/stablepages.conf.d" "$RUNTIME"
: > "$RESULT"

say() { echo "$*" | tee -a "$RESULT"; }
ok() { say "ok: $*"; }
bad() { say "FAIL: $*"; SP_FAILS=$((SP_FAILS + 1)); }
# check DESCRIPTION COMMAND...: ok when COMMAND succeeds, FAIL otherwise.
check() {
        local what=$1
        shift
        if "$@"; then ok "$what"; else bad "$what"; fi
}
die() { bad "$*"; sp_done; }
sp_done() {
        if [ "$SP_FAILS" -gt 0 ]; then
                say "$SP_FAILS check(s) failed on $(uname -r)"
                exit 1
        fi
        say "all checks passed on $(uname -r)"
        exit 0
}

for f in "$SPD" "$CTL"; do
        [ -x "$f" ] || die "$f is not built"
done

kernel_at_least() { # MAJOR MINOR
        local v=${VM_KERNEL%%-*} ma mi
        ma=${v%%.*}; mi=${v#*.}; mi=${mi%%.*}
        [ "$ma" -gt "$1" ] || { [ "$ma" -eq "$1" ] && [ "$mi" -ge "$2" ]; }
}

rd() { if [ -r "$1" ]; then cat "$1"; else echo -; fi; }
flag() { rd "/sys/block/$1/queue/stable_writes"; }
flag_is() { [ "$(flag "$1")" = "$2" ]; }
show() {
        local b=/sys/block/$1
        say "  $1: stable_writes=$(rd "$b/queue/stable_writes") integrity/format=$(rd "$b/integrity/format")" \
                "write_generate=$(rd "$b/integrity/write_generate") md/level=$(rd "$b/md/level")" \
                "skip_copy=$(rd "$b/md/skip_copy") dm/uuid=$(rd "$b/dm/uuid")"
}

# ---- the project's binaries -------------------------------------------------------------
# config TEXT: the main configuration file of the scenario.
config() { printf '%s\n' "$1" > "$ETC/stablepages.conf"; }
# spd ARGS...: stablepagesd with the scenario's configuration and runtime dirs.
spd() { "$SPD" --config-dir="$ETC" --runtime-dir="$RUNTIME" "$@"; }
# apply DISK: the one-shot applier, what the udev rule runs; prints its log, returns its status.
apply() {
        local rc=0
        spd apply "$1" > /run/sp/apply.log 2>&1 || rc=$?
        sed 's/^/  apply: /' /run/sp/apply.log | tee -a "$RESULT"
        return "$rc"
}
# need DISK: the engine's need for DISK (stablepagesd dump --json).
need() { spd dump --json "$1" 2>/dev/null | jq -r '.[0].need'; }
# reasons DISK: the engine's reasons for DISK, one a line.
reasons() { spd dump --json "$1" 2>/dev/null | jq -r '.[0].reasons[]'; }
need_is() {
        local n
        n=$(need "$1")
        say "  need of $1: $n (expected $2)"
        [ "$n" = "$2" ]
}

# ---- kernel log ---------------------------------------------------------------------------
KMSG_MARK=0
kmsg_mark() { KMSG_MARK=$(dmesg | wc -l); }
kmsg_since() { dmesg | tail -n +"$((KMSG_MARK + 1))"; }

# ---- devices (after tests/fixtures/scenarios/vm.sh) -------------------------------------
modprobe loop max_loop=1 2> /dev/null

newfile() {
        local n=0
        while [ -e "/tmp/img$n" ]; do n=$((n + 1)); done
        : > "/tmp/img$n"
        echo "/tmp/img$n"
}
# newloop SIZE_MB [losetup options]: a loop device over a fresh tmpfs file, prints /dev/loopN
newloop() {
        local f
        f=$(newfile)
        truncate -s "${1}M" "$f"
        shift
        losetup --find --show "$@" "$f"
}
# pidisk [scsi_debug options]: scsi_debug disk with T10 DIF type 1 + DIX, prints its name
pidisk() {
        local i=0 b
        modprobe scsi_debug dif=1 dix=1 dev_size_mb=64 "$@" || die "modprobe scsi_debug"
        while :; do
                for b in /sys/bus/pseudo/drivers/scsi_debug/adapter*/host*/target*/*/block/*; do
                        [ -e "$b" ] && { echo "${b##*/}"; return 0; }
                done
                i=$((i + 1))
                [ $i -lt 100 ] || die "no scsi_debug disk"
                sleep 0.1
        done
}
# mkmd NAME LEVEL N [SKIP_COPY [SIZE_MB]]: /dev/NAME (md) over N fresh loops, prints NAME
mkmd() {
        local name=$1 level=$2 n=$3 sc=${4:-} size=${5:-64} devs="" i
        for ((i = 0; i < n; i++)); do devs="$devs $(newloop "$size")"; done
        mkmd_on "$name" "$level" "$sc" $devs
}
# mkmd_on NAME LEVEL SKIP_COPY DEV...: /dev/NAME over the given devices
mkmd_on() {
        local name=$1 level=$2 sc=$3
        shift 3
        mdadm --create "/dev/$name" --run --metadata=1.2 --assume-clean \
                --level="$level" --raid-devices="$#" "$@" < /dev/null > /run/sp/mdadm.log 2>&1 ||
                { cat /run/sp/mdadm.log; die "mdadm --create $name level $level"; }
        [ -n "$sc" ] && echo "$sc" > "/sys/block/$name/md/skip_copy"
        echo "$name"
}
dmname() { # the dm-N kernel name of dm device NAME
        local d
        for d in /sys/block/dm-*; do
                [ "$(cat "$d/dm/name")" = "$1" ] && { echo "${d##*/}"; return 0; }
        done
        die "no dm device $1"
}
# linear NAME DEV: dm-linear over the whole DEV, prints dm-N
linear() {
        local s
        s=$(blockdev --getsz "$2")
        dmsetup create "$1" --table "0 $s linear $2 0" || die "dmsetup create $1"
        dmname "$1"
}
# delayed NAME DEV WRITE_MS: dm-delay over DEV (reads undelayed, writes WRITE_MS), prints dm-N
delayed() {
        local s
        modprobe dm-delay || die "modprobe dm-delay"
        s=$(blockdev --getsz "$2")
        dmsetup create "$1" --table "0 $s delay $2 0 0 $2 0 $3" || die "dmsetup create $1 (delay)"
        dmname "$1"
}

# ---- measurements -------------------------------------------------------------------------
# hung_guard SECONDS COMMAND...: runs COMMAND; when it takes longer than SECONDS, writes the
# blocked tasks' stacks to the kernel log (sysrq w, on the console) and fails.
hung_guard() {
        local secs=$1 rc=0
        shift
        timeout "$secs" "$@" || rc=$?
        if [ "$rc" = 124 ]; then
                say "  $1 did not finish within $secs s; blocked tasks follow on the console"
                echo w > /proc/sysrq-trigger
        fi
        return "$rc"
}
# stalls FILE [ITERATIONS]: stall-writer's own timing of rewrites of a page right after its
# writeback started; prints its line and sets STALL_SLOW, STALL_MEDIAN (us)
stalls() {
        local line
        line=$(hung_guard 60 "$STALL_WRITER" --iterations "${2:-20}" --slow-usec 10000 "$1") ||
                die "stall-writer $1 failed"
        say "  stall-writer: $line"
        STALL_SLOW=$(sed -n 's/.* slow=\([0-9]*\).*/\1/p' <<< "$line")
        STALL_MEDIAN=$(sed -n 's/.* median_usec=\([0-9]*\).*/\1/p' <<< "$line")
}
# fresh_mount DEV DIR [mkfs]: (mkfs.ext4 when asked and) mount DEV on DIR
fresh_mount() {
        if [ "${3:-}" = mkfs ]; then
                mkfs.ext4 -q -F "$1" || die "mkfs.ext4 $1"
        fi
        mkdir -p "$2"
        hung_guard 60 mount "$1" "$2" || die "mount $1 $2"
}

# ---- udev, the system bus, the daemon ---------------------------------------------------
# udevd_start: the host's systemd-udevd in the guest, with the project's rule (running the
# built applier with the scenario's configuration); the log is /run/sp/udevd.log.
udevd_start() {
        export SYSTEMD_IGNORE_CHROOT=1 # udevadm settle/trigger are no-ops in a chroot otherwise
        mkdir -p /run/udev/rules.d
        sed "s|@SBINDIR@/stablepagesd|$SPD --config-dir=$ETC --runtime-dir=$RUNTIME|" \
                "$VM_REPO/units/60-stablepages.rules" > /run/udev/rules.d/60-stablepages.rules
        /lib/systemd/systemd-udevd --daemon --debug > /run/sp/udevd.log 2>&1 || die "systemd-udevd did not start"
        udevadm control --ping || die "systemd-udevd does not answer"
}
# udev_ran DISK: the applier lines udevd logged for DISK (since udev_mark, if called); the rule
# runs "stablepagesd apply --action=ACTION --diskseq=N DISK"
UDEV_MARK=0
udev_mark() { UDEV_MARK=$(wc -l < /run/sp/udevd.log); }
udev_ran() {
        local args="(--action=[a-z]* )?(--diskseq=[0-9]* )?"
        tail -n +"$((UDEV_MARK + 1))" /run/sp/udevd.log |
                grep -aE "^$1: .*stablepagesd.*apply $args$1'?\(err\)|^$1: Process '.*stablepagesd.* apply $args$1'"
}

# bus_start: a private system bus (dbus-daemon) with the project's bus policy, as in
# tests/integration/bus-lib.sh; no polkitd (the scenarios run as root).
bus_start() {
        local b=/run/sp/bus
        mkdir -p "$b/system.d"
        sed -e "s|<listen>.*</listen>|<listen>unix:path=$b/socket</listen>|" -e '/<pidfile>/d' -e '/<user>/d' \
                -e "s|<includedir>system.d</includedir>|<includedir>/usr/share/dbus-1/system.d</includedir>|" \
                /usr/share/dbus-1/system.conf > "$b/system.conf"
        cp "$VM_REPO/conf/org.stablepages1.conf" "$b/system.d/"
        sed -i "s|</busconfig>|<includedir>$b/system.d</includedir></busconfig>|" "$b/system.conf"
        dbus-daemon --config-file="$b/system.conf" --fork --nopidfile || die "dbus-daemon did not start"
        export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$b/socket
}
# daemon_start: stablepagesd in the background on that bus; waits for its bus name and sets
# DAEMON_PID to the daemon's own PID, from the bus ($! is the subshell that runs spd).
daemon_start() {
        local i
        JOURNAL_STREAM=0:0 spd > /run/sp/daemon.log 2>&1 &
        for ((i = 0; i < 100; i++)); do
                DAEMON_PID=$(busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
                        GetConnectionUnixProcessID s org.stablepages1 2> /dev/null | cut -d' ' -f2)
                [ -n "$DAEMON_PID" ] && return 0
                sleep 0.1
        done
        cat /run/sp/daemon.log
        die "stablepagesd did not take its bus name"
}
# daemon_stop: ends the daemon of daemon_start and waits until it is gone.
daemon_stop() {
        local i
        kill "$DAEMON_PID" || die "kill stablepagesd $DAEMON_PID"
        for ((i = 0; i < 100; i++)); do
                kill -0 "$DAEMON_PID" 2> /dev/null || return 0
                sleep 0.1
        done
        die "stablepagesd $DAEMON_PID did not exit within 10 s of SIGTERM"
}
ctl() { "$CTL" --no-pager "$@"; }

# ---- the daemon's stall probe (tests/integration/stall-probe-dump.c) ---------------------
PROBE_PID=
# probe_start: starts the BPF stall probe the daemon uses; waits until it is attached.
probe_start() {
        local i
        rm -f /run/sp/probe.ready
        "$BUILD/tests/stall-probe-dump" --ready-file /run/sp/probe.ready > /run/sp/probe.json 2> /run/sp/probe.err &
        PROBE_PID=$!
        for ((i = 0; i < 100; i++)); do
                [ -s /run/sp/probe.ready ] && return 0
                sleep 0.1
        done
        cat /run/sp/probe.err
        die "the stall probe did not start"
}
# probe_stop DEVNUM: stops the probe; sets PROBE_MODE and PROBE_WAITS (its count of stable-pages
# waits of writers on the filesystem of block device DEVNUM, e.g. 9:0)
probe_stop() {
        kill -TERM "$PROBE_PID"
        wait "$PROBE_PID"
        PROBE_MODE=$(jq -r .mode /run/sp/probe.json)
        PROBE_WAITS=$(jq -r --arg d "$1" '[.devices[]? | select(.dev == $d) | .count] | add // 0' /run/sp/probe.json)
        say "  stall probe ($PROBE_MODE): $PROBE_WAITS stable-pages waits on $1" \
                "$(jq -c --arg d "$1" '.devices[]? | select(.dev == $d) | {p50_usec, max_usec, comms}' \
                        /run/sp/probe.json)"
}
