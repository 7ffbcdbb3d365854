#!/bin/bash
# Scenario 5 (issue 6): stacking.
# - dm-linear over the scsi_debug T10 DIF + DIX disk: "required" by stacking, and the reasons
#   show the chain (dm-N -> stacked on sdX -> its integrity format); the kernel stacks the
#   need too (6.1: the dm device reads stable_writes=1; 6.11+: it reads 0 like the disk and
#   carries the disk's integrity profile); StableWrites=off without force is refused by the
#   applier and stable writes stay on (6.1: the flag does not move; 6.11+: the refusing
#   applier writes 1 where the flag read 0).
# - dm-crypt (plain, aes-xts) over a loop device: "none", the kernel flag reads 0, and the
#   applier with Policy=latency keeps it 0.
. "$VM_REPO/tests/vm/scenarios/lib.sh"

d=$(pidisk)
lin=$(linear sp-linear "/dev/$d")
show "$d"
show "$lin"
check "need of $lin (dm-linear over $d) is required" need_is "$lin" required
why=$(reasons "$lin")
sed 's/^/  reason: /' <<< "$why" | tee -a "$RESULT"
check "the reasons show the chain: stacked on $d, which is required" grep -q "^stacked on $d, which is required: " <<< "$why"
check "the chain ends at the disk's integrity format" \
        grep -q "^stacked on $d, which is required: integrity format T10-DIF-TYPE1-CRC" <<< "$why"
if kernel_at_least 6 11; then
        check "6.11+: $lin reads stable_writes=0, like $d" flag_is "$lin" 0
        check "6.11+: $lin carries the integrity profile T10-DIF-TYPE1-CRC" \
                [ "$(rd "/sys/block/$lin/integrity/format")" = T10-DIF-TYPE1-CRC ]
else
        check "6.1: the kernel stacked stable_writes=1 onto $lin" flag_is "$lin" 1
fi
before=$(flag "$lin")
config "[Manager]
Devices=$lin
[Device $lin]
StableWrites=off"
apply "$lin"; rc=$?
check "StableWrites=off without force on $lin is refused (exit 1)" [ "$rc" -eq 1 ]
if kernel_at_least 6 11; then
        # The refusal keeps stable writes on: the applier writes 1 where the flag read 0.
        check "6.11+: stable writes stay on: $lin reads 1 (was $before) and keeps its profile" \
                [ "$(flag "$lin")/$(rd "/sys/block/$lin/integrity/format")" = 1/T10-DIF-TYPE1-CRC ]
else
        check "6.1: the kernel flag of $lin did not move ($before)" flag_is "$lin" "$before"
fi
dmsetup remove sp-linear

l=$(newloop 32)
head -c 64 /dev/urandom > /run/sp/key
cryptsetup open --type plain --cipher aes-xts-plain64 --key-size 512 --key-file /run/sp/key "$l" sp-crypt ||
        die "cryptsetup open"
c=$(dmname sp-crypt)
show "$c"
check "need of $c (dm-crypt over ${l#/dev/}) is none" need_is "$c" none
say "  reason: $(reasons "$c" | head -1)"
check "the kernel flag of $c reads 0" flag_is "$c" 0
config "[Manager]
Policy=latency
Devices=$c"
apply "$c" || bad "the applier failed on $c"
check "Policy=latency: the kernel flag of $c still reads 0" flag_is "$c" 0
cryptsetup close sp-crypt
sp_done
