#!/bin/bash
# Scenario 2 (issue 6): the hazard behind the safety interlock, on a scsi_debug T10 DIF type 1
# + DIX disk with kernel PI generation (write_generate=1). race-writer stores into mmap'ed
# pages of a file while writing them back again and again, on ext4 mounted after the flag was
# set, and the kernel's answer is read from the kernel log and from the writer's own errors.
# - Stable writes on: the same workload is clean (no guard errors, no write errors).
# - 6.1: stablepagesd apply with StableWrites=off + Force=yes writes 0 (a FORCED warning);
#   then the workload makes scsi_debug reject writes ("GUARD check failed"), the block layer
#   logs "protection error", and the writer gets EIO. The kernel messages are recorded here.
# - 6.11+: the hazard cannot be reproduced: the applier refuses even with Force= (the
#   integrity profile enforces stable writes), and writing 0 to queue/stable_writes by hand is
#   accepted but changes nothing: the workload stays clean, and the writer's own timing on a
#   slow disk (scsi_debug delay) shows each rewrite still waiting for writeback.
. "$VM_REPO/tests/vm/scenarios/lib.sh"

GUARD='GUARD check failed|protection error|guard tag|Logical block guard'
RACE_SECONDS=4

d=$(pidisk)
show "$d"
# sdebug_delay JIFFIES: the delay before each scsi_debug command completes. scsi_debug refuses
# a change (EBUSY) while commands are in flight, as the race's writeback may still be: sync and
# try again, for 5 s at most.
sdebug_delay() {
        for _ in $(seq 50); do
                sync
                echo "$1" 2>/dev/null > /sys/bus/pseudo/drivers/scsi_debug/delay && return 0
                sleep 0.1
        done
        die "scsi_debug refused delay=$1 for 5 s (commands in flight)"
}
# race LABEL: one race-writer run on the mounted filesystem; sets RACE_ERRORS, KMSG_GUARD
race() {
        local line
        kmsg_mark
        line=$(hung_guard 60 "$RACE_WRITER" --seconds "$RACE_SECONDS" /mnt/t/race) || die "race-writer failed"
        say "  race-writer ($1): $line"
        RACE_ERRORS=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<< "$line")
        KMSG_GUARD=$(kmsg_since | grep -cE "$GUARD")
        say "  kernel messages ($1): $(kmsg_since | wc -l) lines, $KMSG_GUARD guard/protection errors"
        kmsg_since | grep -E "$GUARD|I/O error" | head -n 8 | sed 's/^/    kernel: /' | tee -a "$RESULT"
}

config "[Manager]
Devices=$d"
apply "$d" || bad "the applier failed with the default policy"
mkfs.ext4 -q -F "/dev/$d" || die "mkfs.ext4"
check "stable writes are on before the clean run (flag 1)" flag_is "$d" 1
fresh_mount "/dev/$d" /mnt/t
race "stable writes on"
check "stable writes on: the writer got no write errors" [ "$RACE_ERRORS" -eq 0 ]
check "stable writes on: no guard/protection errors in the kernel log" [ "$KMSG_GUARD" -eq 0 ]
umount /mnt/t

# Force=yes binds only to an identity of the disk itself, never to its kernel name: the serial
# udev would record (no udevd runs here, so the scenario writes its database entry).
mkdir -p /run/udev/data
echo "E:ID_SERIAL=SP_PI_DISK" > "/run/udev/data/b$(cat "/sys/block/$d/dev")"
config "[Manager]
Devices=$d
[Device $d]
StableWrites=off
[Device ID_SERIAL=SP_PI_DISK]
Force=yes"
apply "$d"; rc=$?
if ! kernel_at_least 6 11; then
        check "6.1: the forced StableWrites=off is applied" [ "$rc" -eq 0 ]
        check "6.1: the applier logged the change as FORCED" grep -q FORCED /run/sp/apply.log
        check "6.1: the kernel flag reads 0" flag_is "$d" 0
        fresh_mount "/dev/$d" /mnt/t
        race "stable writes forced off"
        check "6.1: stable writes off: the kernel logged guard/protection errors" [ "$KMSG_GUARD" -gt 0 ]
        check "6.1: stable writes off: the writer's write-backs failed (EIO)" [ "$RACE_ERRORS" -gt 0 ]
        umount /mnt/t
        sp_done
fi

check "6.11+: the applier refuses StableWrites=off even with Force=yes" [ "$rc" -eq 1 ]
echo 0 > "/sys/block/$d/queue/stable_writes" || bad "writing 0 to queue/stable_writes failed"
show "$d"
check "6.11+: the kernel accepts 0 in queue/stable_writes" flag_is "$d" 0
fresh_mount "/dev/$d" /mnt/t
race "stable_writes=0 written by hand"
check "6.11+: with stable_writes=0 the writer still gets no write errors" [ "$RACE_ERRORS" -eq 0 ]
check "6.11+: with stable_writes=0 no guard/protection errors in the kernel log" [ "$KMSG_GUARD" -eq 0 ]
sdebug_delay 25
stalls /mnt/t/stall 10
check "6.11+: with stable_writes=0 every rewrite still waits for writeback (slow=$STALL_SLOW of 10)" \
        [ "$STALL_SLOW" -ge 9 ]
sdebug_delay 1
umount /mnt/t
say "6.11+: the hazard is not reproducible on this kernel: the T10 integrity profile keeps stable" \
        "writes in force whatever queue/stable_writes says"
sp_done
