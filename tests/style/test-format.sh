#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every C source and header of the project follows the checked-in .clang-format: prints the
# files that do not (fix them with `clang-format -i FILE`) and fails.
# Usage: test-format.sh SRCDIR   (any user; exit 77 when clang-format is missing)
set -u
src=${1:?usage: test-format.sh SRCDIR}
command -v clang-format >/dev/null || { echo "SKIP: clang-format is not installed"; exit 77; }
cd "$src" || exit 1
bad=0 n=0
for f in $(find daemon ctl tests -name '*.[ch]' -not -path 'tests/fuzz/corpus/*' | sort); do
        n=$((n + 1))
        if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
                echo "not formatted: $f"
                bad=$((bad + 1))
        fi
done
echo "$n files checked, $bad not formatted"
[ "$bad" -eq 0 ]
