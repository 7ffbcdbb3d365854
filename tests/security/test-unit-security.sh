#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The sandboxing of stablepagesd.service (issue 9): `systemd-analyze security --offline=true`
# on the unit as configured by meson (the source has @SBINDIR@ in ExecStart=, which
# systemd-analyze rejects). Prints the exposure score and every remaining exposure; fails
# when the score is above MAX (2.5, issue 15), or when an exposure is not justified in a comment of
# the unit: each ✗ setting (e.g. "PrivateNetwork=", or "AF_NETLINK" for
# "RestrictAddressFamilies=~AF_NETLINK") must be named in a comment line.
#
# Usage: test-unit-security.sh UNIT   (any user; exit 77 when systemd-analyze is missing or
# has no --offline)
set -uo pipefail
unit=${1:?usage: test-unit-security.sh UNIT}
MAX=${SP_SECURITY_MAX:-2.5}

command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze is not installed"; exit 77; }
[ -f "$unit" ] || { echo "FAIL: no unit file $unit"; exit 1; }
out=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1)
rc=$?
if grep -q "unrecognized option\|Unknown option" <<<"$out"; then
        echo "SKIP: this systemd-analyze has no --offline ($out)"
        exit 77
fi
score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$out")
[ -n "$score" ] || { echo "FAIL: no exposure score (exit $rc):"; echo "$out"; exit 1; }
exposures=$(grep '✗' <<<"$out")
echo "exposure score of $(basename "$unit"): $score (at most $MAX)"
echo "remaining exposures:"
sed 's/^/  /' <<<"$exposures"

fails=0
if awk -v s="$score" -v m="$MAX" 'BEGIN { exit !(s > m) }'; then
        echo "FAIL: exposure $score is above $MAX"
        fails=$((fails + 1))
fi
comments=$(grep '^[[:space:]]*#' "$unit")
while read -r mark setting _; do
        [ "$mark" = "✗" ] || continue
        case $setting in
        *=~*) key=${setting#*=~} ;;  # RestrictAddressFamilies=~AF_NETLINK -> AF_NETLINK
        *) key=${setting%%=*}= ;;    # User=/DynamicUser= -> User=
        esac
        key=${key%…}
        if ! grep -qF -- "$key" <<<"$comments"; then
                echo "FAIL: exposure $setting is not justified: no comment in $(basename "$unit") names $key"
                fails=$((fails + 1))
        fi
done <<<"$exposures"
[ "$fails" -eq 0 ] || exit 1
echo "every remaining exposure is justified in a comment"
