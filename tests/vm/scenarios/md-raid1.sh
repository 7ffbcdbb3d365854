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
check "Policy=latency: no rewrite waited for writeback (slow=$STALL_SLOW of 10)" [ "$STALL_SLOW" -eq 0 ]
check "Policy=latency: the stall probe saw no waits on md0" [ "$PROBE_WAITS" -eq 0 ]

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
sp_done
