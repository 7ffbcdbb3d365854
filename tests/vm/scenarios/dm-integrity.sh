#!/bin/bash
# Scenario 6 (issues 6 and 13): dm-integrity (crc32c tags) over a loop device in journal (J),
# bitmap (B) and direct (D) modes made by integritysetup, and in bitmap mode made by a bare
# dmsetup table (no integritysetup, no "INTEGRITY-" uuid). The host's systemd-udevd runs the
# project's rule (units/60-stablepages.rules: the import of the dm table, then the applier)
# with the default policy, as at boot.
#
# Per mode: the flag the kernel declared ("before": older kernels, e.g. Debian's 6.1.176,
# declare nothing for B and D) and the flag after the rule ran ("after"), before anything is
# mounted; the need the sandboxed daemon would see (stablepagesd dump without CAP_SYS_ADMIN:
# the table from the udev database only). Then the hazard itself: ext4 (4 KiB blocks) on the
# device; race-writer stores into mmap'ed pages of a file while writing them back again and
# again, and reads the file's blocks straight from the dm device with O_DIRECT, so a sector
# whose stored tag does not match its data fails (EILSEQ) before a later write-back repairs it.
# Once with the flag as the rule left it, once with the flag forced to 0 before mounting, the
# way an administrator would force it (StableWrites=off with Force=yes for the device, applied
# by the rule on a "change" event): a flag written by hand would not last, as udev's watch of
# the device sends a "change" event when mkfs closes it, and the rule puts the flag back.
# Expected: B and D (both makers) end with the flag 1 on every kernel and read back without a
# single EILSEQ; forced to 0, the same writer gets EILSEQ reads and "Checksum failed" kernel
# messages. J stays 0 and reads back clean (it copies the data into its journal).
. "$VM_REPO/tests/vm/scenarios/lib.sh"
# shellcheck source=tests/vm/devices.sh
. "$VM_REPO/tests/vm/devices.sh"

SECONDS_PER_RUN=4
MIN_READS=100 # what each race must have read for its "no EILSEQ" to count
udevd_start
# Force=yes binds only to an identity of the disk itself: a rule of the scenario's own gives
# each dm device it makes a serial, as udev gives a real disk one (bare-B has no dm uuid).
echo 'SUBSYSTEM=="block", KERNEL=="dm-*", ATTR{dm/name}=="sp-*", ENV{ID_SERIAL}="SPTEST_$attr{dm/name}"' \
        > /run/udev/rules.d/59-sptest-serial.rules
udevadm control --reload || die "udevadm control --reload"

# Whether this kernel declares stable writes for dm-integrity's internal-hash modes B and D:
# "dm-integrity: require stable writes for internal hash modes" (7.3; 6.12.115, 6.1.191).
declares() {
        local v
        v=$(uname -v | sed -n 's/.*Debian \([0-9][0-9.]*\).*/\1/p')
        case $v in
        6.1.*) [ "${v#6.1.}" -ge 191 ] ;;
        6.12.*) [ "${v#6.12.}" -ge 115 ] ;;
        *) return 1 ;;
        esac
}
if declares; then KERNEL_DECLARES=1; else KERNEL_DECLARES=0; fi
say "kernel $(uname -r) ($(uname -v | sed -n 's/.*\(Debian [0-9.-]*\).*/\1/p')): declares stable writes for B and D: $KERNEL_DECLARES"

# make MODE: a fresh 32 MiB dm-integrity device in MODE (J, B, D, or bare-B); sets DEV (dm-N)
# once udev processed its events.
make_device() {
        local mode=$1 l opt
        l=$(newloop 32)
        case $mode in
        bare-B)
                modprobe dm-integrity 2> /dev/null
                integrity_bare sp-bare "$l" B || die "dmsetup integrity"
                DEV=$(dmname sp-bare)
                integrity_wipe "/dev/$DEV" || die "wipe /dev/$DEV"
                ;;
        *)
                integritysetup format --batch-mode "$l" > /dev/null 2>&1 || die "integritysetup format $l"
                case $mode in
                J) opt="" ;;
                B) opt=--integrity-bitmap-mode ;;
                D) opt=--integrity-no-journal ;;
                esac
                # shellcheck disable=SC2086
                integritysetup open $opt "$l" "sp-int-$mode" || die "integritysetup open $mode"
                DEV=$(dmname "sp-int-$mode")
                ;;
        esac
        udevadm settle -t 60 || bad "udevadm settle"
}

# race LABEL [ROUNDS]: ext4 on DEV, mounted with the flag as it is now (AT_MOUNT: the flag read
# right after the mount, which the filesystem captured), and race-writer on it for up to ROUNDS
# rounds of SECONDS_PER_RUN (default 1), stopping at the first round with a failed read (a
# loaded machine reads less per round), and for up to 3 rounds until it read MIN_READS blocks
# (a clean-clone CI run read 84 in J's one round, 2,600 in the other kernels'); sets READS,
# READ_FAILS (summed), KMSG_CSUM
race() {
        local line round
        mkfs.ext4 -q -F -b 4096 "/dev/$DEV" || die "mkfs.ext4"
        udevadm settle -t 30 # the "change" event of mkfs closing the device (udev's watch)
        fresh_mount "/dev/$DEV" /mnt/t
        AT_MOUNT=$(flag "$DEV")
        kmsg_mark
        READS=0 READ_FAILS=0
        for ((round = 1; round <= ${2:-1} || (READS < MIN_READS && round <= 3); round++)); do
                line=$(hung_guard 60 "$RACE_WRITER" --pages 64 --seconds "$SECONDS_PER_RUN" \
                        --read-device "/dev/$DEV" /mnt/t/race) || die "race-writer failed"
                READS=$((READS + $(sed -n 's/.* reads=\([0-9]*\).*/\1/p' <<< "$line")))
                READ_FAILS=$((READ_FAILS + $(sed -n 's/.* read_errors=\([0-9]*\).*/\1/p' <<< "$line")))
                say "  $1, round $round: flag $AT_MOUNT at mount; race-writer: $line"
                [ "$READ_FAILS" -gt 0 ] && break
        done
        KMSG_CSUM=$(kmsg_since | grep -c "Checksum failed")
        say "  $1: $READ_FAILS of $READS reads failed; $KMSG_CSUM \"Checksum failed\" kernel messages"
        kmsg_since | grep "Checksum failed" | head -n 2 | sed 's/^/    kernel: /' | tee -a "$RESULT"
        umount /mnt/t
}

for mode in J B D bare-B; do
        say "mode $mode:"
        udev_mark
        make_device "$mode"
        show "$DEV"
        before=$(spd dump --json "$DEV" | jq -r '.[0].declared')
        after=$(flag "$DEV")
        check "$mode: the rule ran the applier on the events of $DEV" udev_ran "$DEV" > /dev/null
        udev_ran "$DEV" | grep -a "stable writes" | tail -n 1 | sed 's/^/  udevd: /' | tee -a "$RESULT"
        check "$mode: udev recorded the table of $DEV" \
                grep -q "^E:STABLEPAGES_DM_TARGETS=integrity,mode=${mode#bare-},hash=crc32c$" \
                "/run/udev/data/b$(cat "/sys/block/$DEV/dev")"
        # What the sandboxed daemon sees: no CAP_SYS_ADMIN, the table from the udev database.
        sandboxed=$(setpriv --bounding-set=-sys_admin "$SPD" --config-dir="$ETC" --runtime-dir="$RUNTIME" \
                dump --json "$DEV" | jq -r '.[0] | "\(.need) \(.facts.dm_table_source)"')
        case $mode in
        J)
                check "J: the kernel declared nothing (flag $before)" [ "$before" = 0 ]
                check "J: the flag stays 0 after the rule" [ "$after" = 0 ]
                check "J: need none, also without CAP_SYS_ADMIN ($sandboxed)" [ "$sandboxed" = "none udev" ]
                race "J, flag as applied"
                check "J: the filesystem was mounted with the flag 0" [ "$AT_MOUNT" = 0 ]
                check "J, flag 0: the reads ran ($READS)" [ "${READS:-0}" -ge "$MIN_READS" ]
                check "J, flag 0: no read failed with EILSEQ" [ "$READ_FAILS" -eq 0 ]
                check "J, flag 0: no checksum errors in the kernel log" [ "$KMSG_CSUM" -eq 0 ]
                say "summary: mode=$mode before=$before after=$after eilseq_applied=$READ_FAILS/$READS eilseq_forced_off=-"
                ;;
        *)
                check "$mode: the kernel declared stable writes: $before (this kernel: $KERNEL_DECLARES)" \
                        [ "$before" = "$KERNEL_DECLARES" ]
                check "$mode: the flag reads 1 after the rule, before any mount" [ "$after" = 1 ]
                check "$mode: need required, also without CAP_SYS_ADMIN ($sandboxed)" \
                        [ "$sandboxed" = "required udev" ]
                say "  reason: $(reasons "$DEV" | head -n 1)"
                race "$mode, flag as applied"
                on_reads=$READS on_fails=$READ_FAILS
                check "$mode, flag 1: the filesystem was mounted with the flag 1" [ "$AT_MOUNT" = 1 ]
                check "$mode, flag 1: the reads ran ($READS)" [ "${READS:-0}" -ge "$MIN_READS" ]
                check "$mode, flag 1: no read failed with EILSEQ" [ "$READ_FAILS" -eq 0 ]
                check "$mode, flag 1: no checksum errors in the kernel log" [ "$KMSG_CSUM" -eq 0 ]
                config "[Device $DEV]
StableWrites=off
[Device ID_SERIAL=SPTEST_$(cat "/sys/block/$DEV/dm/name")]
Force=yes"
                udevadm trigger --action=change "/sys/block/$DEV" && udevadm settle -t 30
                check "$mode: forced off, the rule turned the flag off" flag_is "$DEV" 0
                race "$mode, flag forced to 0" 3
                rm -f "$ETC/stablepages.conf"
                check "$mode, flag 0: the filesystem was mounted with the flag 0" [ "$AT_MOUNT" = 0 ]
                check "$mode, flag 0: reads failed with EILSEQ ($READ_FAILS of $READS)" [ "$READ_FAILS" -gt 0 ]
                check "$mode, flag 0: dm-integrity logged checksum errors" [ "$KMSG_CSUM" -gt 0 ]
                say "summary: mode=$mode before=$before after=$after eilseq_applied=$on_fails/$on_reads" \
                        "eilseq_forced_off=$READ_FAILS/$READS"
                ;;
        esac
        case $mode in
        bare-B) dmsetup remove --retry sp-bare ;;
        *) integritysetup close "sp-int-$mode" ;;
        esac
done
sp_done
