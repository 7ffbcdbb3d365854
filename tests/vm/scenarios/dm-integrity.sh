#!/bin/bash
# Scenario 6 (issue 6): dm-integrity (integritysetup, crc32c tags) over a loop device, in
# bitmap and journal modes: does rewriting pages under writeback with stable writes off cause
# read errors? Experiment, per mode and flag: ext4 (4 KiB blocks) is made and mounted after the
# flag was set; race-writer stores into mmap'ed pages of a file while writing them back again
# and again; meanwhile it reads the file's blocks straight from the dm device with O_DIRECT, so
# a sector whose stored tag does not match its stored data fails before a later write-back
# repairs it. Evidence: the failed reads and dm-integrity's "Checksum failed" kernel messages.
# Measured (6.1 and 6.12): bitmap mode with the flag forced to 0 fails reads within seconds;
# bitmap with the flag 1 and journal mode with the flag 0 never do (journal mode copies the
# data into its journal and computes the tag from that copy). The classification must match:
# bitmap "required" (the kernel declared stable writes: the flag reads 1 at creation), journal
# "none" (the kernel does not declare them).
. "$VM_REPO/tests/vm/scenarios/lib.sh"

SECONDS_PER_RUN=5

# experiment MODE FLAG: sets READS, READ_FAILS, KMSG_CSUM
experiment() {
        local mode=$1 flag=$2 l opt dev line
        l=$(newloop 64)
        integritysetup format --batch-mode "$l" > /dev/null 2>&1 || die "integritysetup format $l"
        case $mode in
        journal) opt="" ;;
        bitmap) opt=--integrity-bitmap-mode ;;
        esac
        # shellcheck disable=SC2086
        integritysetup open $opt "$l" sp-int || die "integritysetup open $mode"
        dev=$(dmname sp-int)
        say "$mode mode, stable_writes forced to $flag:"
        show "$dev"
        DECLARED=$(flag "$dev")
        NEED=$(need "$dev")
        say "  the kernel declared stable_writes=$DECLARED; the engine says need=$NEED"
        echo "$flag" > "/sys/block/$dev/queue/stable_writes"
        check "$mode: the kernel flag reads $flag" flag_is "$dev" "$flag"
        mkfs.ext4 -q -F -b 4096 "/dev/$dev" || die "mkfs.ext4"
        fresh_mount "/dev/$dev" /mnt/t
        kmsg_mark
        line=$(hung_guard 60 "$RACE_WRITER" --pages 64 --seconds "$SECONDS_PER_RUN" --read-device "/dev/$dev" /mnt/t/race) ||
                die "race-writer failed"
        say "  race-writer: $line"
        READS=$(sed -n 's/.* reads=\([0-9]*\).*/\1/p' <<< "$line")
        READ_FAILS=$(sed -n 's/.* read_errors=\([0-9]*\).*/\1/p' <<< "$line")
        KMSG_CSUM=$(kmsg_since | grep -c "Checksum failed")
        say "  kernel: $KMSG_CSUM \"Checksum failed\" messages"
        kmsg_since | grep "Checksum failed" | head -n 4 | sed 's/^/    kernel: /' | tee -a "$RESULT"
        umount /mnt/t
        integritysetup close sp-int
}

experiment bitmap 1
check "bitmap: the kernel declares stable writes (flag 1 at creation)" [ "$DECLARED" = 1 ]
check "bitmap: classified required" [ "$NEED" = required ]
check "bitmap, flag 1: the reads ran ($READS)" [ "${READS:-0}" -ge 100 ]
check "bitmap, flag 1: no read failed" [ "$READ_FAILS" -eq 0 ]
check "bitmap, flag 1: no checksum errors in the kernel log" [ "$KMSG_CSUM" -eq 0 ]

experiment bitmap 0
check "bitmap, flag 0: reads failed ($READ_FAILS of $READS)" [ "$READ_FAILS" -gt 0 ]
check "bitmap, flag 0: dm-integrity logged checksum errors" [ "$KMSG_CSUM" -gt 0 ]

experiment journal 0
check "journal: the kernel does not declare stable writes (flag 0 at creation)" [ "$DECLARED" = 0 ]
check "journal: classified none (the experiment finds no read errors)" [ "$NEED" = none ]
check "journal, flag 0: the reads ran ($READS)" [ "${READS:-0}" -ge 100 ]
check "journal, flag 0: no read failed" [ "$READ_FAILS" -eq 0 ]
check "journal, flag 0: no checksum errors in the kernel log" [ "$KMSG_CSUM" -eq 0 ]
sp_done
