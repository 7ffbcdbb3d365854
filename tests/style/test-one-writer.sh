#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One writer of queue/stable_writes: daemon/core/flag.c (flag.h). Fails when any other C file
# of the daemon or stablepagesctl names the flag's sysfs path and could open it for writing:
#   - a string literal that is the path ("queue/stable_writes", ".../queue/stable_writes") may
#     appear only in flag.c and in the readers listed below;
#   - those readers may hold no write primitive (O_WRONLY, O_RDWR, pwrite, fopen for writing);
#   - no file but flag.c may call write(2) or pwrite(2) on a descriptor from openat() of a
#     path built at run time that ends in stable_writes (caught by the first rule: the path
#     must be spelled somewhere).
# Then the check is run on a copy of the tree with a second writer planted, which it must
# refuse (a check that cannot fail is no check).
# Usage: test-one-writer.sh SRCDIR   (any user)
set -u
src=${1:?usage: test-one-writer.sh SRCDIR}

# The files that may spell the path, and why.
readers="daemon/core/device.c daemon/core/consumers.c" # read the flag (facts; what a consumer starting now takes)
writer=daemon/core/flag.c

check() {
        local top=$1 bad=0 f
        cd "$top" || return 2
        while IFS= read -r f; do
                [ "$f" = "$writer" ] && continue
                if ! grep -qw -- "$f" <<<"$readers"; then
                        echo "$f names queue/stable_writes as a path, but only $writer writes it:"
                        grep -n 'queue/stable_writes"' "$f" | sed 's/^/    /'
                        bad=$((bad + 1))
                        continue
                fi
                if grep -nE 'O_WRONLY|O_RDWR|pwrite|fopen\([^,]*, *"[wa+]|"r\+' "$f" | sed "s|^|    $f:|" | grep .; then
                        echo "$f reads queue/stable_writes and holds a write primitive (above)"
                        bad=$((bad + 1))
                fi
        done < <(grep -rl --include='*.c' --include='*.h' 'queue/stable_writes"' daemon ctl | grep -v '^daemon/stalls/' | sort)
        echo "one writer of queue/stable_writes: $bad problem(s)"
        [ "$bad" -eq 0 ]
}

check "$src" || exit 1

# The check must refuse a planted second writer.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/daemon" "$tmp/ctl"
cp -r "$src/daemon/." "$tmp/daemon/"
cat >"$tmp/daemon/planted.c" <<'C'
#include <fcntl.h>
int planted(void) { return open("/sys/block/sda/queue/stable_writes", O_WRONLY); }
C
if (check "$tmp" >/dev/null); then
        echo "FAIL: the check accepted a second writer (daemon/planted.c)"
        exit 1
fi
echo "a planted second writer is refused"
