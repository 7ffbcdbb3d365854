#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The pager runs in secure mode when stablepagesctl is privileged (issue 15, the class of
# CVE-2023-26604): `stablepagesctl status` on a terminal (script(1) gives it one; without the
# daemon it reads sysfs and pages that), with $PAGER pointing at a program that leaves a mark
# and a "less" first in $PATH that records its environment:
#
# - root under sudo ($SUDO_UID), and effective uid 0 with another real uid: $PAGER does not
#   run, less does, with LESSSECURE=1;
# - an unprivileged user: $PAGER runs (the user's own choice), without LESSSECURE;
# - $SYSTEMD_PAGERSECURE set: the explicit choice wins, $PAGER runs (=1: with LESSSECURE=1), as
#   systemd's pager does;
# - --no-pager and a pipe: no pager at all.
#
# Usage: test-ctl-pager.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
set -uo pipefail
CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (to run stablepagesctl as root and as another user)"; exit 77; }
for t in script setpriv; do
        command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done

tmp=$(mktemp -d /tmp/stablepages-pager.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
mkdir "$tmp/bin"
# The "less" found first: records that it ran and with which LESSSECURE, then drains its input.
cat >"$tmp/bin/less" <<EOF
#!/bin/sh
echo "less LESSSECURE=\${LESSSECURE:-unset}" >>"$tmp/ran"
cat >/dev/null
EOF
# The \$PAGER of the environment: it must not run when privileged.
cat >"$tmp/bin/evil-pager" <<EOF
#!/bin/sh
echo "evil-pager uid=\$(id -u) LESSSECURE=\${LESSSECURE:-unset}" >>"$tmp/ran"
cat >/dev/null
EOF
chmod 755 "$tmp/bin/less" "$tmp/bin/evil-pager"
chmod 666 "$tmp/ran" 2>/dev/null || { touch "$tmp/ran" && chmod 666 "$tmp/ran"; }

fails=0
# run WHAT EXPECTED COMMAND...: runs COMMAND on a terminal; the pager that ran must be EXPECTED.
run() {
        local what=$1 want=$2 got
        shift 2
        : >"$tmp/ran"
        script -qec "$(printf '%q ' "$@")" /dev/null >/dev/null 2>&1 </dev/null
        got=$(tr '\n' ' ' <"$tmp/ran")
        got=${got% }
        if [ "$got" = "$want" ]; then
                echo "# $what: $got"
        else
                echo "FAIL: $what: the pager that ran: '${got:-none}', want '${want:-none}'"
                fails=$((fails + 1))
        fi
}
env_common=(env PATH="$tmp/bin:$PATH" PAGER="$tmp/bin/evil-pager" DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent)

run "root under sudo" "less LESSSECURE=1" "${env_common[@]}" SUDO_UID=1000 "$CTL" status
run "euid 0, real uid 65534" "less LESSSECURE=1" \
        setpriv --ruid=65534 -- "${env_common[@]}" "$CTL" status
run "unprivileged user" "evil-pager uid=65534 LESSSECURE=unset" \
        setpriv --reuid=65534 --regid=65534 --clear-groups -- "${env_common[@]}" "$CTL" status
run "SYSTEMD_PAGERSECURE=0 under sudo" "evil-pager uid=0 LESSSECURE=unset" \
        "${env_common[@]}" SUDO_UID=1000 SYSTEMD_PAGERSECURE=0 "$CTL" status
run "SYSTEMD_PAGERSECURE=1, unprivileged" "evil-pager uid=65534 LESSSECURE=1" \
        setpriv --reuid=65534 --regid=65534 --clear-groups -- "${env_common[@]}" SYSTEMD_PAGERSECURE=1 "$CTL" status
run "--no-pager under sudo" "" "${env_common[@]}" SUDO_UID=1000 "$CTL" --no-pager status
: >"$tmp/ran"
"${env_common[@]}" SUDO_UID=1000 "$CTL" status >/dev/null 2>&1
[ ! -s "$tmp/ran" ] || { echo "FAIL: a pager ran with stdout a pipe: $(cat "$tmp/ran")"; fails=$((fails + 1)); }

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
