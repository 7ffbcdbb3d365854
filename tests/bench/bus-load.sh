#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The full-size load benchmark of issue 9: 32 concurrent D-Bus clients x 10,000 calls each
# (status reads, and a runtime set/reset of the test's own loop device for one call in
# five) against stablepagesd on a private system bus. It is test-robust-load.sh at full
# size (that CI test runs 32 x 500): it prints the figures, checks that every call was
# answered and that the daemon's RSS did not grow after warm-up, and takes about ten
# minutes on 2 cores (the daemon serves one call at a time; a set rescans every disk).
#
# Usage: sudo tests/bench/bus-load.sh [BUILD_DIR]   (default build)
# Environment: SP_LOAD_CLIENTS (32), SP_LOAD_CALLS (10000), SP_LOAD_RSS_SLACK_KIB (1024).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
export SP_BUS_LOAD=$build/tests/bus-load SP_HELPER=$build/tests/sp-helper SRC=$top
export SP_LOAD_CLIENTS=${SP_LOAD_CLIENTS:-32} SP_LOAD_CALLS=${SP_LOAD_CALLS:-10000}
export SP_LOAD_RSS_SLACK_KIB=${SP_LOAD_RSS_SLACK_KIB:-1024}
exec "$top/tests/integration/test-robust-load.sh" "$build/daemon/stablepagesd" "$build/ctl/stablepagesctl"
