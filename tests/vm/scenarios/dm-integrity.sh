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
#
# Then what each consumer took (stablepagesd(8), CONSUMERS), in the same boot: the dm device's
# own page cache, which takes the flag when the disk is added and never again. race-writer --raw
# stores into mapped pages of /dev/dm-N itself while writing them back, and reads them back with
# O_DIRECT; beside each row, what stablepagesd dump says of the page cache (from the disk's flag
# history, which the rule's applier recorded at the add). The kernel's rows: on 6.1.176 (which
# declares nothing) B added with 0, then set to 1 by the rule (row 1), and left at 0 (row 2,
# Policy=observe): raw reads fail with EILSEQ and the page cache is a hazard although the flag
# of row 1 reads 1; on 6.1.192 and 6.12 B added with 1 and left at 1 (row 3), then forced to 0
# (row 4): no raw read fails and no hazard is said although the flag of row 4 reads 0. A hazard
# is said exactly where raw reads fail. Last, a swap area on zram with the daemon running: the
# state it took at swapon is reported, and unchanged when the flag changes afterwards, both
# ways. ONLY_CONSUMERS=1 runs these last parts alone.
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

# make MODE [SIZE_MB]: a fresh dm-integrity device (32 MiB) in MODE (J, B, D, or bare-B); sets
# DEV (dm-N) once udev processed its events.
make_device() {
        local mode=$1 l opt
        l=$(newloop "${2:-32}")
        case $mode in
        bare-B)
                modprobe dm-integrity 2> /dev/null
                integrity_bare sp-bare "$l" B || die "dmsetup integrity"
                DEV=$(dmname sp-bare)
                integrity_wipe "/dev/$DEV" || die "wipe /dev/$DEV"
                ;;
        *)
                integritysetup format --batch-mode "$l" > /dev/null 2>&1 || die "integritysetup format $l"
                # format's temporary dm device is gone: its events are done before another takes
                # its name (an event handled late would be taken for the new device's first sight)
                udevadm settle -t 60
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
        [ "${ONLY_CONSUMERS:-0}" = 1 ] && break
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
# ---- what each consumer took -------------------------------------------------------------
# raw_race LABEL [ROUNDS]: race-writer --raw on /dev/$DEV (its first 64 pages, through the dm
# device's own page cache), up to ROUNDS rounds (default 1) stopping at the first with a failed
# read, and up to 5 until it read RAW_MIN_READS blocks (each O_DIRECT read of the device waits
# for the writeback of the pages it covers: far fewer reads than through a filesystem); sets
# READS, READ_FAILS, KMSG_CSUM
RAW_MIN_READS=40
raw_race() {
        local line round
        kmsg_mark
        READS=0 READ_FAILS=0
        for ((round = 1; round <= ${2:-1} || (READS < RAW_MIN_READS && round <= 5); round++)); do
                line=$(hung_guard 60 "$RACE_WRITER" --raw --pages 64 --seconds "$SECONDS_PER_RUN" "/dev/$DEV") ||
                        die "race-writer --raw failed"
                READS=$((READS + $(sed -n 's/.* reads=\([0-9]*\).*/\1/p' <<< "$line")))
                READ_FAILS=$((READ_FAILS + $(sed -n 's/.* read_errors=\([0-9]*\).*/\1/p' <<< "$line")))
                say "  $1, round $round: race-writer --raw: $line"
                [ "$READ_FAILS" -gt 0 ] && break
        done
        udevadm settle -t 30 # the "change" of race-writer closing the device (udev's watch)
        KMSG_CSUM=$(kmsg_since | grep -c "Checksum failed")
        say "  $1: $READ_FAILS of $READS raw reads failed; $KMSG_CSUM \"Checksum failed\" kernel messages"
}
# page_cache DEV: what stablepagesd dump says of DEV's page cache, and of the next consumer
page_cache() {
        spd dump --json "$1" 2> /dev/null | jq -r '.[0] | (.consumers[] | select(.kind == "page-cache") |
                "captured=\(.captured) origin=\(.origin) hazard=\(.hazard)") + " in_force(next consumer)=\(.in_force)"'
}
page_cache_note() { spd dump --json "$1" 2> /dev/null | jq -r '.[0].consumers[] | select(.kind == "page-cache") | .note'; }
first_sight() { sed -n 's/^first=\([01] [a-z]*\) .*/\1/p' "$RUNTIME/history/$1"; }
# raw_row ROW WHAT [ROUNDS]: the raw race on $DEV, the project's view beside it, and the checks
raw_row() {
        local row=$1 what=$2 view hazard
        view=$(page_cache "$DEV")
        say "  row $row ($what): first sight $(first_sight "$DEV"), flag now $(flag "$DEV"); dump: $view"
        say "  note: $(page_cache_note "$DEV")"
        raw_race "row $row" "${3:-1}"
        hazard=$(sed -n 's/.*hazard=\([a-z]*\).*/\1/p' <<< "$view")
        if [ "$READ_FAILS" -gt 0 ]; then
                check "row $row: raw reads failed ($READ_FAILS of $READS), and the page cache is a hazard" \
                        [ "$hazard" = true ]
        else
                check "row $row: the raw reads ran ($READS)" [ "$READS" -ge "$RAW_MIN_READS" ]
                check "row $row: no raw read failed ($READS), and the page cache is no hazard" [ "$hazard" = false ]
        fi
        say "summary: raw row=$row kernel=$(uname -r) first=$(first_sight "$DEV" | tr ' ' ':') flag=$(flag "$DEV")" \
                "$view eilseq=$READ_FAILS/$READS"
}

say "the page cache of a dm-integrity device (raw buffered writes):"
rm -f "$ETC/stablepages.conf"
if [ "$KERNEL_DECLARES" = 0 ]; then
        make_device B 8
        check "row 1: the kernel set 0 at the add (history: $(first_sight "$DEV"))" [ "$(first_sight "$DEV")" = "0 add" ]
        check "row 1: the rule set the flag to 1" flag_is "$DEV" 1
        raw_row 1 "added with 0, then set to 1 by the rule" 3
        check "row 1: raw reads failed with EILSEQ" [ "$READ_FAILS" -gt 0 ]
        integritysetup close sp-int-B
        config "[Manager]
Policy=observe"
        make_device B 8
        check "row 2: the kernel set 0 at the add (history: $(first_sight "$DEV"))" [ "$(first_sight "$DEV")" = "0 add" ]
        check "row 2: the flag stays 0 (Policy=observe)" flag_is "$DEV" 0
        raw_row 2 "added with 0, left at 0" 3
        check "row 2: raw reads failed with EILSEQ" [ "$READ_FAILS" -gt 0 ]
        integritysetup close sp-int-B
else
        make_device B 8
        check "row 3: the kernel set 1 at the add (history: $(first_sight "$DEV"))" [ "$(first_sight "$DEV")" = "1 add" ]
        check "row 3: the flag stays 1" flag_is "$DEV" 1
        raw_row 3 "added with 1, left at 1"
        check "row 3: no raw read failed" [ "$READ_FAILS" -eq 0 ]
        config "[Device $DEV]
StableWrites=off
[Device ID_SERIAL=SPTEST_$(cat "/sys/block/$DEV/dm/name")]
Force=yes"
        udevadm trigger --action=change "/sys/block/$DEV" && udevadm settle -t 30
        check "row 4: forced off, the rule turned the flag off" flag_is "$DEV" 0
        raw_row 4 "added with 1, set to 0 afterwards"
        check "row 4: no raw read failed" [ "$READ_FAILS" -eq 0 ]
        integritysetup close sp-int-B
fi
rm -f "$ETC/stablepages.conf"

# swap_state: "CAPTURED ORIGIN HAZARD" of the swap area on zram0, as the daemon says it
swap_state() {
        ctl --json=short status zram0 2> /dev/null |
                jq -r '.[0].consumers[] | select(.kind == "swap") | "\(.captured) \(.origin) \(.hazard)"'
}
# wait_for WHAT EXPECTED COMMAND...: until COMMAND prints EXPECTED (10 s)
wait_for() {
        local what=$1 want=$2 i got
        shift 2
        for ((i = 0; i < 100; i++)); do
                got=$("$@")
                [ "$got" = "$want" ] && break
                sleep 0.1
        done
        check "$what: $got" [ "$got" = "$want" ]
}
say "a swap area on zram, with the daemon:"
modprobe zram num_devices=1 || die "modprobe zram"
{ echo 64M > /sys/block/zram0/disksize && mkswap /dev/zram0 > /dev/null; } || die "zram0: disksize, mkswap"
udevadm settle -t 30
config "[Manager]
RescanSec=0"
bus_start
daemon_start
swapon -p 0 /dev/zram0 || die "swapon /dev/zram0"
wait_for "swap on zram0, flag 1: took it at swapon, seen by the daemon" "on observed false" swap_state
ctl set zram0 off --runtime --force > /dev/null || bad "stablepagesctl set zram0 off --runtime --force"
wait_for "the daemon forced the flag of zram0 off" 0 flag zram0
wait_for "the swap area keeps what it took at swapon, no hazard" "on observed false" swap_state
ctl explain zram0 2>&1 | grep -A1 "consumer: swap" | sed 's/^/  explain: /' | tee -a "$RESULT"
{ swapoff /dev/zram0 && swapon -p 0 /dev/zram0; } || die "swapoff, swapon /dev/zram0"
wait_for "activated again with the flag 0: took it off, a hazard" "off observed true" swap_state
check "the daemon logged the swap area's hazard" grep -q "swap area /dev/zram0 on zram0 runs without stable writes" \
        /run/sp/daemon.log
grep -m1 "swap area /dev/zram0" /run/sp/daemon.log | sed 's/^/  daemon: /' | tee -a "$RESULT"
ctl reset zram0 > /dev/null || bad "stablepagesctl reset zram0"
wait_for "the daemon turned the flag of zram0 on again" 1 flag zram0
wait_for "the swap area keeps what it took at swapon, still a hazard" "off observed true" swap_state
swapoff /dev/zram0
sp_done
