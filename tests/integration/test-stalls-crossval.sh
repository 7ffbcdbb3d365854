#!/bin/bash
# Cross-validation of the BPF stall probe against a writer's own timing (issue 5).
#
# A loop device with stable_writes=1 at mount time carries ext4; its writeback is throttled to
# 10 write IOPS through the cgroup v1 blkio controller (measured on 6.18: at 10 IOPS 37-38 of
# 40 rewrites wait ~108 ms; at 20 IOPS only every second one waits ~100 ms, the others pass);
# stall-writer, inside that cgroup, rewrites a page right after starting its writeback and
# times each rewrite, while stall-probe-dump measures. Asserted, on that disk:
#   1. the probe's stable-pages waits of 1 ms or more (histogram buckets >= 1024 us) == the
#      writer's rewrites slower than 1 ms, within max(1, 5%): each slow rewrite is exactly one
#      wait (one page, one writeback); the slack covers a wait within 1000..1023 us (the bucket
#      edge is not the writer's threshold) and a rewrite whose extra syscall time pushes it
#      over 1 ms;
#   2. the probe's waits by the command stall-writer, of any duration, lie between the slow
#      rewrites and the rewrites: a fast rewrite can still wait a few us when its writeback
#      completes right away, and no rewrite waits twice;
#   3. the probe's p50 (the upper bound of its log2 bucket, capped at the max) is within a factor
#      of 2 of the writer's median rewrite latency;
#   4. the writer's two fsync() calls are counted apart, as data-integrity waits (sync_count),
#      when the probe classifies waits;
#   5. after unmount, stable_writes=0 and mount again, the probe sees no stable-pages waits on
#      that disk (the fsync waits remain: they do not depend on the flag);
#   6. in the raw-tracepoint mode, with waits classified: waits after the first ones were
#      classified from the stack slots learned from a walk (frame_reads >= 1), and no audit of
#      those answers by a walk found another caller (frame_mismatches == 0); 1 and 4 show that
#      the answers sort the rewrites' and the fsync()s' waits apart;
#   7. still with stable_writes=0 (BPF mode, kernels with the tracepoints of shadow waits), the
#      rewrites of the page under writeback are shadow waits, what stable writes would have
#      cost: the writer in SHADOW_RUNS runs of 5 rewrites 0.5 s apart (the page's writeback,
#      ~100 ms, ends between them, so each run dirties it under a new writeback of the same
#      file) gives between one shadow wait per run and one per rewrite, and their p50 is within
#      a factor of 2 of the writer's median rewrite with stable writes (round 1); at least one
#      per run was timed (the first of each writeback: none is in progress), and no more than
#      were counted;
#   8. the same writer unthrottled (FAST_ITERATIONS rewrites, a writeback every other one: tens
#      of thousands of shadow waits a second) has every shadow wait counted but only a sample
#      timed, at most one per CPU and clock tick: the timed ones are at least one and fewer than
#      a quarter of those counted. FAST_ITERATIONS=0 leaves this round out (the qemu guests of
#      tests/vm: there the loop device ends each writeback before the writer's next rewrite).
#
# With STALLS_MODE=tracefs (test-stalls-tracefs.sh) the probe is forced into its tracefs
# fallback (STABLEPAGES_STALLS_FORCE_TRACEFS=1, test only) and the same run shows that it counts
# the waits without durations: its waits by stall-writer lie between the slow rewrites and the
# rewrites, no duration figure is reported, fsync waits are set apart, flag 0 gives no waits,
# and its tracefs instance is gone after it exits. STABLEPAGES_STALLS_FORCE_UNAVAILABLE=1 then
# shows mode "unavailable" reporting no figures at all.
#
# Usage: test-stalls-crossval.sh [BUILDDIR]; the helpers are found through $STALL_PROBE_DUMP and
# $STALL_WRITER, else in BUILDDIR (default: the current directory) or BUILDDIR/tests.
# Root only. Touches only the loop device, mount point and cgroup it creates; removes them on
# every exit path. Exit 77 (skip) when a facility is missing.
set -uo pipefail

BUILDDIR=${1:-.}
MODE=${STALLS_MODE:-bpf}
ITERATIONS=${ITERATIONS:-40}
SHADOW_RUNS=4
FAST_ITERATIONS=${FAST_ITERATIONS:-20000}
IOPS=10
SLOW_USEC=1000

skip() { echo "SKIP: $*"; exit 77; }
find_helper() { # NAME ENVVALUE
        local p
        for p in "$2" "$BUILDDIR/$1" "$BUILDDIR/tests/$1"; do
                [ -n "$p" ] && [ -x "$p" ] && { echo "$p"; return 0; }
        done
        return 1
}

case "$MODE" in
bpf) unset STABLEPAGES_STALLS_FORCE_TRACEFS STABLEPAGES_STALLS_FORCE_UNAVAILABLE ;;
tracefs) export STABLEPAGES_STALLS_FORCE_TRACEFS=1; unset STABLEPAGES_STALLS_FORCE_UNAVAILABLE ;;
*) echo "unknown STALLS_MODE=$MODE"; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || skip "needs root (loop devices, mounts, cgroups, BPF)"
for t in losetup mkfs.ext4 jq; do
        command -v "$t" >/dev/null || skip "$t is missing"
done
DUMP=$(find_helper stall-probe-dump "${STALL_PROBE_DUMP:-}") || skip "stall-probe-dump not built"
WRITER=$(find_helper stall-writer "${STALL_WRITER:-}") || skip "stall-writer not built"

tmp=$(mktemp -d /tmp/stablepages-stalls.XXXXXX) || exit 1
loop="" mnt="$tmp/mnt" mounted=0 cgroot="" cgmounted=0 cg="" dump_pid=""
cleanup() {
        [ -n "$dump_pid" ] && kill "$dump_pid" 2>/dev/null && wait "$dump_pid" 2>/dev/null
        [ "$mounted" = 1 ] && umount "$mnt"
        [ -n "$loop" ] && losetup -d "/dev/$loop"
        [ -n "$cg" ] && rmdir "$cg"
        [ "$cgmounted" = 1 ] && umount "$cgroot" && rmdir "$cgroot"
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The blkio controller, cgroup v1 (mounted here by the distribution or by us).
if [ -e /sys/fs/cgroup/blkio/blkio.throttle.write_iops_device ]; then
        cgroot=/sys/fs/cgroup/blkio
elif grep -qw blkio /proc/cgroups; then
        cgroot="$tmp/blkio"
        mkdir "$cgroot" && mount -t cgroup -o blkio none "$cgroot" 2>/dev/null ||
                skip "cgroup v1 blkio controller cannot be mounted (bound to cgroup v2?)"
        cgmounted=1
        [ -e "$cgroot/blkio.throttle.write_iops_device" ] || skip "no blk-throttle (CONFIG_BLK_DEV_THROTTLING)"
else
        skip "no blkio cgroup controller"
fi
cg="$cgroot/stablepages-stalls-$$"
mkdir "$cg" || { cg=""; skip "cannot create a blkio cgroup"; }

truncate -s 256M "$tmp/backing"
loop=$(basename "$(losetup --find --show "$tmp/backing")") || { loop=""; echo "FAIL: losetup"; exit 1; }
devnum=$(cat "/sys/block/$loop/dev")
[ -w "/sys/block/$loop/queue/stable_writes" ] || skip "queue/stable_writes is read-only (kernel < 5.10)"
echo "loop device $loop ($devnum), backing $tmp/backing"
mkdir "$mnt"
mkfs.ext4 -q -F "/dev/$loop" || { echo "FAIL: mkfs.ext4"; exit 1; }
echo "$devnum $IOPS" > "$cg/blkio.throttle.write_iops_device" || { echo "FAIL: throttle"; exit 1; }

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# mount_with FLAG: unmount if mounted, set the flag, mount; the flag is captured at mount.
mount_with() {
        if [ "$mounted" = 1 ]; then
                umount "$mnt" || return 1
                mounted=0
        fi
        echo "$1" > "/sys/block/$loop/queue/stable_writes" || return 1
        mount "/dev/$loop" "$mnt" || return 1
        mounted=1
}

# run_round NAME [RUNS ITERATIONS [CGROUP]]: probe + writer throttled in CGROUP (default $cg; ""
# unthrottled), RUNS runs of ITERATIONS rewrites 0.5 s apart (default one of $ITERATIONS); leaves
# $tmp/NAME.writer (the last run's line) and $tmp/NAME.json.
run_round() {
        local name=$1 runs=${2:-1} iterations=${3:-$ITERATIONS} wcg=${4-$cg} i r
        rm -f "$tmp/ready"
        "$DUMP" --ready-file "$tmp/ready" > "$tmp/$name.json" 2> "$tmp/$name.dump.err" &
        dump_pid=$!
        for i in $(seq 100); do
                [ -s "$tmp/ready" ] && break
                kill -0 "$dump_pid" 2>/dev/null || break
                sleep 0.1
        done
        if [ "$(cat "$tmp/ready" 2>/dev/null)" != "$MODE" ]; then
                kill "$dump_pid" 2>/dev/null; wait "$dump_pid"; dump_pid=""
                skip "the probe is not in $MODE mode: $(cat "$tmp/$name.dump.err")"
        fi
        for r in $(seq "$runs"); do
                [ "$r" -gt 1 ] && sleep 0.5
                sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$wcg" \
                        "$WRITER" --iterations "$iterations" --slow-usec "$SLOW_USEC" "$mnt/$name.dat" \
                        > "$tmp/$name.writer" || fail "$name: the writer failed"
        done
        kill -TERM "$dump_pid"
        wait "$dump_pid" || fail "$name: stall-probe-dump exited $?"
        if [ "$MODE" = tracefs ]; then
                for i in /sys/kernel/tracing/instances/stablepages-"$dump_pid" \
                         /sys/kernel/debug/tracing/instances/stablepages-"$dump_pid"; do
                        [ -e "$i" ] && fail "$name: the probe left its tracefs instance $i"
                done
        fi
        dump_pid=""
        echo "$name writer: $(cat "$tmp/$name.writer")"
        jq -c --arg dev "$devnum" '{mode, lost} + {disk: ([.devices[] | select(.dev == $dev)][0] // null)}' \
                "$tmp/$name.json" | sed "s/^/$name probe: /"
}

writer_field() { sed -n "s/.*\<$2=\([0-9]*\).*/\1/p" "$tmp/$1.writer"; }
probe_field() { # ROUND JQ-EXPRESSION-ON-THE-DISK
        jq -r --arg dev "$devnum" "([.devices[] | select(.dev == \$dev)][0] // {count: 0, comms: []}) | $2" \
                "$tmp/$1.json"
}

# 1-4: flag 1 at mount.
mount_with 1 || { echo "FAIL: mount with stable_writes=1"; exit 1; }
run_round on
slow=$(writer_field on slow)
median=$(writer_field on median_usec)
waits=$(probe_field on '[.comms[] | select(.comm == "stall-writer") | .count] | add // 0')
sync=$(probe_field on '.sync_count // 0')
classified=$(probe_field on '.classified // false')
tol=$(( slow * 5 / 100 )); [ "$tol" -lt 1 ] && tol=1
[ "$slow" -ge $((ITERATIONS / 2)) ] ||
        fail "only $slow of $ITERATIONS rewrites were slow: the throttle did not bite, nothing to compare"
[ "$waits" -ge $((slow - tol)) ] && [ "$waits" -le "$ITERATIONS" ] ||
        fail "probe waits by stall-writer $waits outside [$((slow - tol)), $ITERATIONS]"
if [ "$classified" = true ]; then
        [ "$sync" -ge 1 ] || fail "the writer's fsync waits were not counted as data-integrity waits"
fi
[ "$(jq .lost "$tmp/on.json")" = 0 ] || fail "the probe lost waits: $(jq .lost "$tmp/on.json")"

if [ "$MODE" = bpf ]; then
        probe_slow=$(probe_field on '[(.hist // [])[10:][]] | add // 0')
        p50=$(probe_field on '.p50_usec // 0')
        echo "flag 1: writer: $slow of $ITERATIONS rewrites > 1 ms, median $median us;" \
             "probe: $probe_slow waits >= 1024 us (tolerance $tol), $waits waits by stall-writer," \
             "p50 <= $p50 us, $sync fsync waits set apart (classified: $classified)"
        diff=$(( probe_slow > slow ? probe_slow - slow : slow - probe_slow ))
        [ "$diff" -le "$tol" ] ||
                fail "probe waits >= 1 ms: $probe_slow, writer slow rewrites: $slow: off by $diff > $tol"
        if [ "$p50" -le 0 ] || [ "$median" -le 0 ] || [ $((p50 * 2)) -lt "$median" ] ||
           [ "$p50" -gt $((median * 2)) ]; then
                fail "probe p50 $p50 us not within a factor of 2 of the writer's median $median us"
        fi
else
        echo "flag 1: writer: $slow of $ITERATIONS rewrites > 1 ms, median $median us;" \
             "probe (tracefs): $waits waits by stall-writer, $sync fsync waits set apart" \
             "(classified: $classified)"
        [ "$(probe_field on '.durations')" = false ] || fail "tracefs mode claims durations"
        [ "$(probe_field on 'has("p50_usec") or has("hist") or has("sum_usec")')" = false ] ||
                fail "tracefs mode reports duration figures it did not measure"
fi

# 6: the raw-tracepoint mode's shortcut past the stack walk.
if [ "$MODE" = bpf ] && [ "$classified" = true ] && jq -e '.reason | startswith("BPF raw tracepoints")' \
        "$tmp/on.json" > /dev/null; then
        frame_reads=$(jq .frame_reads "$tmp/on.json")
        frame_mismatches=$(jq .frame_mismatches "$tmp/on.json")
        echo "raw tracepoints: $frame_reads waits classified from the learned stack slots," \
             "$frame_mismatches audits failed"
        [ "$frame_reads" -ge 1 ] || fail "no wait was classified from the learned stack slots"
        [ "$frame_mismatches" = 0 ] || fail "$frame_mismatches audits of the stack slots found another caller"
fi

# 5: flag 0 at mount: no stable-pages waits on that disk.
mount_with 0 || { echo "FAIL: mount with stable_writes=0"; exit 1; }
run_round off
total0=$(probe_field off '.count')
echo "flag 0: writer: $(writer_field off slow) of $ITERATIONS rewrites > 1 ms, median" \
     "$(writer_field off median_usec) us; probe: $total0 stable-pages waits," \
     "$(probe_field off '.sync_count // 0') fsync waits"
[ "$total0" = 0 ] || fail "the probe saw $total0 stable-pages waits on $devnum with stable_writes=0 at mount"

# 7: the same rewrites as shadow waits.
if [ "$MODE" = bpf ] && [ "$(probe_field off '.shadows')" = true ]; then
        run_round shadow "$SHADOW_RUNS" 5
        shadows=$(probe_field shadow '.shadow_count')
        timed=$(probe_field shadow '.shadow_timed // 0')
        shadow_p50=$(probe_field shadow '.shadow_p50_usec // 0')
        echo "flag 0: $SHADOW_RUNS runs of 5 rewrites: $shadows shadow waits, $timed timed, p50 <= $shadow_p50 us" \
             "(with stable writes: median $median us), $(probe_field shadow '.count') stable-pages waits"
        [ "$shadows" -ge "$SHADOW_RUNS" ] && [ "$shadows" -le $((SHADOW_RUNS * 5)) ] ||
                fail "shadow waits $shadows outside [$SHADOW_RUNS, $((SHADOW_RUNS * 5))]"
        [ "$timed" -ge "$SHADOW_RUNS" ] && [ "$timed" -le "$shadows" ] ||
                fail "timed shadow waits $timed outside [$SHADOW_RUNS, $shadows]"
        if [ "$shadow_p50" -le 0 ] || [ $((shadow_p50 * 2)) -lt "$median" ] ||
           [ "$shadow_p50" -gt $((median * 2)) ]; then
                fail "shadow p50 $shadow_p50 us not within a factor of 2 of the writer's median $median us with stable writes"
        fi
        [ "$(probe_field shadow '.count')" = 0 ] || fail "stable-pages waits with stable_writes=0 at mount"

        # 8: unthrottled, the durations are a sample.
        if [ "$FAST_ITERATIONS" -gt 0 ]; then
                run_round fast 1 "$FAST_ITERATIONS" ""
                fast=$(probe_field fast '.shadow_count')
                fast_timed=$(probe_field fast '.shadow_timed // 0')
                echo "flag 0, unthrottled: $FAST_ITERATIONS rewrites: $fast shadow waits, $fast_timed timed"
                [ "$fast" -ge $((FAST_ITERATIONS / 10)) ] ||
                        fail "only $fast shadow waits in $FAST_ITERATIONS unthrottled rewrites: nothing to sample"
                [ "$fast_timed" -ge 1 ] && [ $((fast_timed * 4)) -lt "$fast" ] ||
                        fail "timed shadow waits $fast_timed: not a sample (at least 1, under a quarter) of $fast"
        fi
elif [ "$MODE" = bpf ]; then
        echo "shadow waits are not measured here: $(jq -r .reason "$tmp/off.json")"
fi

if [ "$MODE" = tracefs ]; then
        out=$(STABLEPAGES_STALLS_FORCE_UNAVAILABLE=1 "$DUMP" --duration 0 2>/dev/null)
        echo "forced unavailable: $out"
        [ "$(jq -r .mode <<<"$out")" = unavailable ] && [ "$(jq -c .devices <<<"$out")" = null ] ||
                fail "mode unavailable must report no figures: $out"
fi

[ "$fails" -eq 0 ] && echo "PASS" || echo "$fails failure(s)"
[ "$fails" -eq 0 ]
