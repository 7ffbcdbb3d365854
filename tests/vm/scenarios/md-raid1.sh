#!/bin/bash
# Scenario 4 (issue 6): md raid1 is "recommended": Policy=latency leaves stable writes off at
# mount, Policy=integrity turns them on, proven on a mounted ext4 by the writer's own timing
# (stall-writer: a page rewritten right after its writeback started) and by the daemon's BPF
# stall probe. Writeback is made slow with dm-delay under both mirror legs (100 ms per write),
# so a rewrite that waits for writeback takes about 100 ms and one that does not takes
# microseconds.
. "$VM_REPO/tests/vm/scenarios/lib.sh"

legs=""
for i in 0 1; do
        legs="$legs /dev/$(delayed "sp-slow$i" "$(newloop 64)" 100)"
done
# shellcheck disable=SC2086
mkmd_on md0 1 "" $legs > /dev/null
show md0
check "need of md0 is recommended" need_is md0 recommended
say "  reasons: $(reasons md0 | head -1)"
mkfs.ext4 -q -F /dev/md0 || die "mkfs.ext4"
devnum=$(cat /sys/block/md0/dev)

# measure LABEL: mount, rewrite timing with the probe running, unmount
measure() {
        say "  $1: mount, probe, rewrites"
        fresh_mount /dev/md0 /mnt/t
        probe_start
        stalls /mnt/t/stall 10
        probe_stop "$devnum"
        umount /mnt/t
}

config "[Manager]
Policy=latency
Devices=md0"
apply md0 || bad "the applier failed (latency)"
check "Policy=latency: the kernel flag of md0 reads 0 before mount" flag_is md0 0
measure latency
# The probe's count is the measure: a TCG guest's wall clock says "slow" of a rewrite that
# merely lost the CPU (slow=1 of 10 with another guest beside it, while the probe saw 0 waits).
say "  Policy=latency: $STALL_SLOW of 10 rewrites took over 10 ms of wall clock"
check "Policy=latency: no rewrite waited for writeback: the stall probe saw no waits on md0" [ "$PROBE_WAITS" -eq 0 ]

config "[Manager]
Policy=integrity
Devices=md0"
apply md0 || bad "the applier failed (integrity)"
check "Policy=integrity: the kernel flag of md0 reads 1 before mount" flag_is md0 1
measure integrity
check "Policy=integrity: rewrites waited for writeback (slow=$STALL_SLOW of 10, >= 8)" [ "$STALL_SLOW" -ge 8 ]
check "Policy=integrity: the median rewrite took >= 50 ms ($STALL_MEDIAN us)" [ "$STALL_MEDIAN" -ge 50000 ]
# One wait may fall outside the probe's window or be missed: the slack of
# tests/integration/test-stalls-crossval.sh.
check "Policy=integrity: the stall probe saw the waits ($PROBE_WAITS, slow rewrites $STALL_SLOW)" \
        [ "$PROBE_WAITS" -ge "$((STALL_SLOW - 1))" ]
# Policy=balanced on a mirror: both sides of the trade. md1 mirrors a plain loop and one whose
# writes dm-delay holds 50 ms, so each leg reads a page under writeback at its own moment.
#   1. a writer rewriting pages under writeback waits (stable writes on): the daemon learns off;
#   2. mounted again without them, the same writer's pages are written under writeback: shadow
#      waits keep the learned off (no return on by a calm it cannot see), explain says what on
#      would cost; the file is deleted before it is written again and a check finds the legs
#      diverged: the daemon turns stable writes on, says why, and the alert fires in promtool;
#   3. repaired and mounted with stable writes, the same writer and check leave mismatch_cnt 0;
#   4. O_DIRECT writes from a buffer that changes in flight make the legs differ in both states:
#      the daemon counts them and reports them as a risk the flag cannot remove.
say "balanced on a mirror: shadow waits, checks, O_DIRECT (at ${SECONDS} s)"
echo 200000 > /proc/sys/dev/raid/speed_limit_min
# shellcheck disable=SC2046
mkmd_on md1 1 "" $(newloop 16) "/dev/$(delayed sp-slowm "$(newloop 16)" 50)" > /dev/null
mkfs.ext4 -q -F /dev/md1 || die "mkfs.ext4 md1"
config "[Manager]
Policy=balanced
Devices=md1
RescanSec=0
StallBudgetMSec=10
StallWindowSec=2
StallMinWaits=3
StallCalmSec=3600
MetricsFile=/run/sp/metrics.prom
MetricsIntervalSec=1"
bus_start
daemon_start
st() { ctl --json status md1 | jq -r ".[0].$1"; }
learned_is() { [ "$(st learned)" = "$1" ]; }
shadows_seen() { [ "$(st stalls.total.shadow_count)" -gt 0 ] 2> /dev/null; }
daemon_lines() { # what the daemon said of md1, when a step did not happen
        grep "md1" /run/sp/daemon.log | tail -20 | sed 's/^/  daemon: /' | tee -a "$RESULT"
}
wait_for() { # SECONDS WHAT COMMAND...: true when COMMAND succeeds within SECONDS
        local end=$((SECONDS + $1)) what=$2
        shift 2
        until "$@"; do
                [ "$SECONDS" -lt "$end" ] || { say "  gave up waiting for $what"; return 1; }
                sleep 0.5
        done
}
md_action() { # ACTION: runs an md check or repair of md1 to its end, says how long it took
        local start=$SECONDS
        echo "$1" > /sys/block/md1/md/sync_action || die "cannot start a $1 of md1"
        wait_for 120 "the $1 of md1" sh -c '[ "$(cat /sys/block/md1/md/sync_action)" = idle ]' || die "$1"
        say "  md1 $1: $((SECONDS - start)) s" >&2
}
check_end() { # waits until md1's check ends; prints mismatch_cnt
        md_action check
        cat /sys/block/md1/md/mismatch_cnt
}
check "balanced keeps stable writes on for the mirror at first" flag_is md1 1
fresh_mount /dev/md1 /mnt/m
stalls /mnt/m/s 20
check "1. the daemon learned off from real waits ($STALL_SLOW slow rewrites)" \
        wait_for 20 "learned off" learned_is off
check "1. md1's flag is 0" flag_is md1 0
flag_is md1 0 || daemon_lines
umount /mnt/m && fresh_mount /dev/md1 /mnt/m
# explain and the learned state are read while the writer runs: its shadow waits are in the window.
hung_guard 60 "$RACE_WRITER" --pages 256 --seconds 8 --unlink /mnt/m/race > /run/sp/race.out &
race_pid=$!
sleep 5
ctl explain md1 > /run/sp/explain.txt
reason_during=$(st stalls.reason 2> /dev/null || true)
learned_during=$(st learned)
wait "$race_pid" || die "race-writer"
say "  race-writer, stable writes off: $(cat /run/sp/race.out)"
sync
check "2. shadow waits were measured on md1 ($(st stalls.total.shadow_count))" \
        wait_for 10 "shadow waits" shadows_seen
shadow_p99=$(st stalls.total.shadow_p99_usec)
check "2. the learned off is kept while the writer runs: $reason_during" [ "$learned_during" = off ]
check "2. ... and after it: $(st stalls.reason 2> /dev/null || true)" [ "$(st learned)" = off ]
sed 's/^/  explain: /' /run/sp/explain.txt | tee -a "$RESULT" > /dev/null
check "2. explain shows the shadow waits" grep -q "^  shadows: [0-9]* shadow waits" /run/sp/explain.txt
check "2. explain says what turning stable writes on would cost" grep -q "^  on: *writers would wait: shadow p99" /run/sp/explain.txt
check "2. explain says what off risks on the mirror" grep -q "^  off: .*the mirror's legs may differ" /run/sp/explain.txt
mismatch=$(check_end)
say "  check with stable writes off: mismatch_cnt $mismatch (shadow p99 $shadow_p99 us)"
check "2. the check found the legs diverged (mismatch_cnt $mismatch)" [ "$mismatch" -gt 0 ]
check "2. the daemon turned stable writes on" wait_for 15 "flag 1" flag_is md1 1
check "2. ... and said why" grep -q "md1: md check of md1 found mismatch_cnt $mismatch (previous check: 0) after [0-9]* pages were modified under writeback while stable writes were off: the legs diverged" /run/sp/daemon.log
check "2. learned on, with the figures as its reason" [ "$(st learned)" = on ]
check "2. the metric says the mirror diverged" wait_for 5 metric grep -q '^stablepages_mirror_diverged{device="md1"} 1$' /run/sp/metrics.prom
python3 "$VM_REPO/tests/integration/rules-test-mirror.py" "$VM_REPO/conf/stablepages.rules.yml" \
        /run/sp/metrics.prom md1 > /run/sp/rules-test.yml || die "rules-test-mirror.py"
check "2. the alert StablepagesMirrorDiverged fires in promtool's rule test" promtool test rules /run/sp/rules-test.yml

md_action repair
umount /mnt/m && fresh_mount /dev/md1 /mnt/m
line=$(hung_guard 120 "$RACE_WRITER" --pages 256 --seconds 6 --unlink /mnt/m/race) || die "race-writer"
say "  race-writer, stable writes on: $line"
sync
mismatch=$(check_end)
check "3. with stable writes on, the same writer and check leave mismatch_cnt 0 ($mismatch)" [ "$mismatch" = 0 ]

line=$(hung_guard 60 "$RACE_WRITER" --pages 16 --seconds 3 --direct /mnt/m/direct) || die "race-writer --direct"
say "  O_DIRECT writer, stable writes on: $line"
mismatch=$(check_end)
check "4. O_DIRECT writes make the legs differ with stable writes on (mismatch_cnt $mismatch)" [ "$mismatch" -gt 0 ]
# Counted on every kernel of the matrix: the tracepoint iomap:iomap_dio_rw_begin on 6.12, their bios
# (fentry iomap_dio_bio_end_io) on 6.1 (null: not counted).
direct=$(st stalls.total.direct_count)
say "  probe: $(jq -r .stall_probe_reason "$RUNTIME/devices.json" | grep -o 'O_DIRECT writes[^;]*')"
check "4. the daemon counted the O_DIRECT writes ($direct)" [ "${direct/null/0}" -gt 0 ]
check "4. ... and reports them as a risk the flag cannot remove" \
        grep -q "O_DIRECT writes on md1 since the last check: a writer that changes its buffer" /run/sp/daemon.log
umount /mnt/m
daemon_stop # it would keep stable writes on for the mirror now
echo 0 > /sys/block/md1/queue/stable_writes
md_action repair
fresh_mount /dev/md1 /mnt/m
check "4. md1 was mounted with the flag 0" flag_is md1 0
line=$(hung_guard 60 "$RACE_WRITER" --pages 16 --seconds 3 --direct /mnt/m/direct) || die "race-writer --direct"
say "  O_DIRECT writer, flag 0: $line"
mismatch=$(check_end)
check "4. ... and with the flag 0 too (mismatch_cnt $mismatch)" [ "$mismatch" -gt 0 ]
say "  (done at ${SECONDS} s)"
umount /mnt/m
sp_done
