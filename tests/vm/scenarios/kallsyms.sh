#!/bin/sh
# The kernel's text symbols, for tests/vm/where-stuck (boot with VM_APPEND=nokaslr so that they
# are where a hung guest of the same kernel had them): tests/vm/vm-run --out DIR kallsyms.sh
set -eu
grep ' [tTwW] ' /proc/kallsyms >"$VM_OUT/kallsyms"
echo "$(wc -l <"$VM_OUT/kallsyms") text symbols"
