#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The journal catalog conf/stablepages.catalog: journalctl builds its database from it (into a
# temporary root, --root) and lists one entry per MESSAGE_ID of daemon/shared/message-id.h,
# each with a subject, a Defined-By, a Documentation and a text that uses only the fields the
# daemon sends with it; each MESSAGE_ID is logged somewhere in the daemon.
# Usage: test-catalog.sh SRCDIR   (any user; exit 77 without journalctl)
set -u
src=${1:?usage: test-catalog.sh SRCDIR}
command -v journalctl >/dev/null || { echo "SKIP: journalctl is not installed"; exit 77; }
catalog=$src/conf/stablepages.catalog
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

root=$(mktemp -d /tmp/stablepages-catalog.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/lib/systemd/catalog" "$root/var/lib/systemd/catalog"
cp "$catalog" "$root/usr/lib/systemd/catalog/"
out=$(journalctl --root="$root" --update-catalog 2>&1) || fail "journalctl --update-catalog: $out"
[ -z "$out" ] || fail "journalctl --update-catalog said: $out"
listed=$(journalctl --root="$root" --list-catalog 2>&1)

declare -A names
while read -r _ name id; do
        names[${id//\"/}]=$name
done < <(grep '^#define SP_MESSAGE_' "$src/daemon/shared/message-id.h")
[ "${#names[@]}" -ge 5 ] || fail "message-id.h defines ${#names[@]} MESSAGE_IDs"
for id in "${!names[@]}"; do
        name=${names[$id]}
        grep -q "^$id stablepages: ." <<<"$listed" || fail "$name ($id) is not in the catalog: $listed"
        entry=$(journalctl --root="$root" --dump-catalog "$id" 2>&1)
        for field in Subject Defined-By Documentation; do
                grep -q "^$field: ." <<<"$entry" || fail "$name: no $field: line"
        done
        [ "$(sed '1,/^$/d' <<<"$entry" | grep -c .)" -ge 3 ] || fail "$name: its text is shorter than 3 lines"
        for f in $(grep -o '@[A-Z_]*@' <<<"$entry" | sort -u); do
                case $f in
                @STABLEPAGES_DEVICE@ | @STABLEPAGES_MOUNT@) ;;
                *) fail "$name: the text uses $f, which the daemon does not send" ;;
                esac
        done
        grep -rqw "$name" "$src/daemon" --include=*.c || fail "$name is logged nowhere in daemon/"
done
n=$(grep -c . <<<"$listed")
[ "$n" -eq "${#names[@]}" ] || fail "the catalog has $n entries, message-id.h ${#names[@]} MESSAGE_IDs: $listed"
echo "$n catalog entries, one per MESSAGE_ID; $fails problem(s)"
[ "$fails" -eq 0 ]
