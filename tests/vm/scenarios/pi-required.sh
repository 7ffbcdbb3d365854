#!/bin/bash
# Scenario 1 (issue 6): a scsi_debug disk with T10 DIF type 1 + DIX (dif=1 dix=1).
# - the engine classifies it "required" (the kernel generates PI: write_generate=1);
# - the kernel: 6.1 reads stable_writes=1; 6.11+ reads 0 while its integrity profile enforces
#   stable writes (integrity/format T10-DIF-TYPE1-CRC);
# - "stablepagesctl set sda off" without --force (through the daemon on a private system bus)
#   exits non-zero and the kernel flag does not move; so does the one-shot applier with
#   StableWrites=off and no Force=;
# - with write_generate=0 the need drops to "recommended" (DESIGN.md section 2), and then
#   StableWrites=off without force is applied on 6.1 (the kernel flag reads 0) while 6.11+
#   keeps stable writes (the profile still enforces them; the applier says so and refuses).
# On 6.11+ the daemon's first reconcile writes 1 to the flag that read 0 (desired on): the
# checks after that compare with the flag as the daemon left it.
. "$VM_REPO/tests/vm/scenarios/lib.sh"

d=$(pidisk)
show "$d"
check "integrity/format is T10-DIF-TYPE1-CRC" [ "$(rd "/sys/block/$d/integrity/format")" = T10-DIF-TYPE1-CRC ]
check "write_generate is 1" [ "$(rd "/sys/block/$d/integrity/write_generate")" = 1 ]
if kernel_at_least 6 11; then
        check "6.11+: the kernel reads stable_writes=0 on the PI disk (the profile enforces them)" flag_is "$d" 0
else
        check "6.1: the kernel set stable_writes=1 on the PI disk" flag_is "$d" 1
fi
check "need of $d is required" need_is "$d" required
say "  reasons: $(reasons "$d" | head -1)"

config "[Manager]
Devices=$d"
bus_start
daemon_start
before=$(flag "$d")
say "  after the daemon's first reconcile (Policy=balanced) the kernel flag reads $before"
check "the daemon leaves stable writes on (flag 1)" flag_is "$d" 1
out=$(ctl set "$d" off 2>&1); rc=$?
say "  stablepagesctl set $d off: exit $rc: $out"
check "stablepagesctl set $d off (no --force) is refused with a non-zero exit" [ "$rc" -ne 0 ]
check "stablepagesctl names the refusal" grep -q "refusing" <<< "$out"
check "the kernel flag of $d did not move ($before)" flag_is "$d" "$before"
out=$(ctl --no-legend status "$d" 2>&1)
say "  stablepagesctl status: $out"

config "[Manager]
Devices=$d
[Device $d]
StableWrites=off"
apply "$d"; rc=$?
check "the applier with StableWrites=off and no Force= exits 1 (refused)" [ "$rc" -eq 1 ]
check "the kernel flag of $d did not move ($before)" flag_is "$d" "$before"

echo 0 > "/sys/block/$d/integrity/write_generate"
show "$d"
check "with write_generate=0 the need drops to recommended" need_is "$d" recommended
apply "$d"; rc=$?
if kernel_at_least 6 11; then
        check "6.11+: StableWrites=off is still refused (the profile enforces stable writes)" [ "$rc" -eq 1 ]
        check "6.11+: integrity/format is still a checksum format" \
                [ "$(rd "/sys/block/$d/integrity/format")" = T10-DIF-TYPE1-CRC ]
else
        check "6.1: StableWrites=off is applied once the need is only recommended" [ "$rc" -eq 0 ]
        check "6.1: the kernel flag of $d reads 0" flag_is "$d" 0
fi
sp_done
