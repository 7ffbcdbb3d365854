#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A real application's writer for tests/bench/run, section 4: SQLite (Debian's libsqlite3,
through Python's sqlite3 module) committing small transactions in WAL mode with
synchronous=NORMAL, as a service logging events to a database does.

Usage: sqlite-commits.py DB SECONDS OUT [INTERVAL_US]
Creates DB in WAL mode, touches DB.ready, waits (at most 10 s) for DB.go, then for SECONDS
commits one transaction (an INSERT of a 100-byte row) every INTERVAL_US (default 1000) and times
each, from the INSERT to the end of the COMMIT. Writes one latency per line, in ns, to OUT and
prints "writes=N seconds=S p50_us=.. p99_us=.. max_us=.. over10ms=K sqlite=VERSION"."""

import math
import os
import sqlite3
import sys
import time


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    db, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    interval = (int(sys.argv[4]) if len(sys.argv) == 5 else 1000) / 1e6
    con = sqlite3.connect(db, isolation_level=None)
    if con.execute("PRAGMA journal_mode=WAL").fetchone()[0] != "wal":
        print("cannot switch to WAL mode", file=sys.stderr)
        return 1
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("CREATE TABLE IF NOT EXISTS log (t INTEGER, line BLOB)")
    # A first commit, so that the WAL file exists for the flusher (reopening a database in WAL
    # mode creates it only at the first transaction).
    con.execute("INSERT INTO log VALUES (0, x'')")
    open(db + ".ready", "w").close()
    deadline = time.monotonic() + 10
    while not os.path.exists(db + ".go") and time.monotonic() < deadline:
        time.sleep(0.01)
    row = b"x" * 100
    lat = []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        t0 = time.perf_counter_ns()
        con.execute("BEGIN")
        con.execute("INSERT INTO log VALUES (?, ?)", (t0, row))
        con.execute("COMMIT")
        lat.append(time.perf_counter_ns() - t0)
        time.sleep(interval)
    elapsed = time.monotonic() - start
    con.close()
    with open(out, "w") as f:
        f.write("".join(f"{x}\n" for x in lat))
    s = sorted(lat)

    def pct(p):
        return s[max(0, math.ceil(p * len(s)) - 1)] / 1000 if s else 0

    print(f"writes={len(s)} seconds={elapsed:.3f} p50_us={pct(0.5):.1f} p99_us={pct(0.99):.1f} "
          f"max_us={(s[-1] / 1000 if s else 0):.1f} over10ms={sum(1 for x in s if x > 10_000_000)} "
          f"sqlite={sqlite3.sqlite_version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
