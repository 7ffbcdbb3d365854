#!/bin/bash
# Scenario 9 (issue 13): NVMe over TCP with data digest. The kernel's own target (nvmet,
# nvmet-tcp) serves a loop device on 127.0.0.1; the host connects by writing the options
# string to /dev/nvme-fabrics, once with data_digest and once without, while the host's
# systemd-udevd runs the project's rule. With native multipath (Debian's default) the
# namespace is a hidden path disk nvmeXcYnZ (no device number) under the multipath head
# nvmeXnZ, which is what gets mounted: both must be "required" with the digest as the reason
# (the head through its path), and keep stable writes on; without the digest both are "none".
. "$VM_REPO/tests/vm/scenarios/lib.sh"
# shellcheck source=tests/vm/devices.sh
. "$VM_REPO/tests/vm/devices.sh"

udevd_start
nvmet_tcp_target "$(newloop 64)" || die "the nvmet-tcp target"

# path HEAD: the path disk of multipath head HEAD (nvmeXnZ -> nvmeXcYnZ)
path_of() {
        local d
        for d in /sys/block/"${1%n*}"c*n"${1##*n}"; do
                [ -e "$d" ] && { echo "${d##*/}"; return 0; }
        done
        return 1
}
# json DISK FILTER: a field of the engine's view of DISK
json() { spd dump --json "$1" | jq -r ".[0]$2"; }

for digest in 1 0; do
        say "connected with data_digest=$digest:"
        udev_mark
        head=$(nvme_tcp_connect "$digest") || die "nvme connect"
        udevadm settle -t 30 || bad "udevadm settle"
        path=$(path_of "$head") || die "no path disk of $head (is native multipath off?)"
        show "$path"
        show "$head"
        check "$path is a hidden disk (no device number)" [ "$(json "$path" .facts.hidden)" = true ]
        check "$head lists its path $path" [ "$(json "$head" '.facts.nvme_paths[0]')" = "$path" ]
        check "the rule ran the applier on the add of $head" udev_ran "$head" > /dev/null
        if [ "$digest" = 1 ]; then
                check "digest: the kernel set the flag of the path $path" flag_is "$path" 1
                check "digest: the kernel set the flag of the head $head" flag_is "$head" 1
                check "digest: path $path is required" need_is "$path" required
                check "digest: head $head is required" need_is "$head" required
                say "  $path: $(reasons "$path" | head -n 1)"
                say "  $head: $(reasons "$head" | head -n 1)"
                check "digest: the path's reason is the data digest" grep -q "NVMe/TCP with data digest" <<< "$(reasons "$path" | head -n 1)"
                check "digest: the head's reason is its path's digest" \
                        grep -q "served by path $path, which is required: NVMe/TCP with data digest" <<< "$(reasons "$head" | head -n 1)"
                check "digest: the head's flag is explained by the kernel stacking it from $path" \
                        grep -q "stacks it from $path" <<< "$(json "$head" .flag_cause)"
        else
                check "no digest: the flag of $path reads 0" flag_is "$path" 0
                check "no digest: the flag of $head reads 0" flag_is "$head" 0
                check "no digest: path $path is none" need_is "$path" none
                check "no digest: head $head is none" need_is "$head" none
        fi
        ctrl=$(basename "$(readlink -f "/sys/block/$path/device")")
        echo 1 > "/sys/class/nvme/$ctrl/delete_controller" || die "delete_controller $ctrl"
        udevadm settle -t 30
done
sp_done
