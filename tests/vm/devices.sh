# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=sh
# Device makers shared by the guest scenarios (tests/vm/scenarios/lib.sh, bash) and the
# fixture captures (tests/fixtures/scenarios/vm.sh, sh). POSIX sh; each returns non-zero
# with a message on stderr when it fails, and the caller decides what that means.

# integrity_bare NAME DEV MODE [UUID]: a dm-integrity target made with a bare dmsetup table
# (no integritysetup; no uuid unless given), internal hash crc32c, over the whole DEV. The
# target formats a device whose superblock is zero; the table's length is what the formatted
# device provides (the second field of its status). Its data is not initialized: sectors never
# written fail their checksum until written (integrity_wipe).
integrity_bare() {
        dmsetup create "$1" --table "0 8 integrity $2 0 4 $3 1 internal_hash:crc32c" ||
                { echo "dmsetup create $1 (integrity, format) failed" >&2; return 1; }
        _provided=$(dmsetup status "$1" | cut -d' ' -f5)
        # udev's probe of the new device reads sectors that fail their checksum, with retries,
        # and holds it open meanwhile: the remove waits for that.
        ! command -v udevadm >/dev/null || udevadm settle --timeout=30 || true
        dmsetup remove --retry "$1" || return 1
        dmsetup create "$1" ${4:+--uuid "$4"} --table "0 $_provided integrity $2 0 4 $3 1 internal_hash:crc32c" ||
                { echo "dmsetup create $1 (integrity) failed" >&2; return 1; }
}

# integrity_wipe DEV: writes zeros over the whole of DEV (a dm-integrity device), so that every
# sector has a valid tag, as integritysetup format does.
integrity_wipe() {
        # Without a count, dd ends with ENOSPC at the end of the device: that is success.
        _err=$(dd if=/dev/zero of="$1" bs=1M oflag=direct 2>&1 >/dev/null)
        case "$_err" in
        *"No space left on device"*) return 0 ;;
        esac
        echo "wiping $1: $_err" >&2
        return 1
}

# nvmet_tcp_target DEV: the kernel's NVMe target (nvmet, nvmet-tcp) on 127.0.0.1:4420 exporting
# DEV as namespace 1 of subsystem sp-nvme; brings the loopback interface up.
nvmet_tcp_target() {
        ip link set lo up || return 1
        for _m in nvmet nvmet-tcp nvme-tcp; do
                modprobe "$_m" || { echo "modprobe $_m failed" >&2; return 1; }
        done
        _c=/sys/kernel/config/nvmet
        [ -d $_c ] || mount -t configfs none /sys/kernel/config || return 1
        mkdir $_c/subsystems/sp-nvme $_c/subsystems/sp-nvme/namespaces/1 $_c/ports/1 || return 1
        echo 1 > $_c/subsystems/sp-nvme/attr_allow_any_host
        printf %s "$1" > $_c/subsystems/sp-nvme/namespaces/1/device_path
        echo 1 > $_c/subsystems/sp-nvme/namespaces/1/enable || return 1
        echo tcp > $_c/ports/1/addr_trtype
        echo ipv4 > $_c/ports/1/addr_adrfam
        echo 127.0.0.1 > $_c/ports/1/addr_traddr
        echo 4420 > $_c/ports/1/addr_trsvcid
        ln -s $_c/subsystems/sp-nvme $_c/ports/1/subsystems/sp-nvme
}

# nvme_tcp_connect DIGEST: connects the host to that target by writing the options string to
# /dev/nvme-fabrics, with data_digest when DIGEST is 1; prints the name of the new namespace
# disk (the multipath head nvmeXnY) once it appears.
nvme_tcp_connect() {
        _before=" "
        for _d in /sys/block/*; do _before="$_before${_d##*/} "; done
        _opts="transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=sp-nvme"
        [ "$1" = 1 ] && _opts="$_opts,data_digest"
        echo "$_opts" > /dev/nvme-fabrics || { echo "connecting with $_opts failed" >&2; return 1; }
        _i=0
        while [ $_i -lt 100 ]; do
                for _d in /sys/block/nvme*n*; do
                        _n=${_d##*/}
                        case "$_n" in *c*) continue ;; esac
                        [ -e "$_d/dev" ] || continue
                        case "$_before" in *" $_n "*) continue ;; esac
                        echo "$_n"
                        return 0
                done
                _i=$((_i + 1))
                sleep 0.1
        done
        echo "no new nvme namespace after connecting with $_opts" >&2
        return 1
}
