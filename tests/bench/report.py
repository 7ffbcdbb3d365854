#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tables, JSON and plots of tests/bench/run from its raw results.

Usage: report.py RAWDIR OUTDIR [SECTION...]
RAWDIR holds machine.txt, s1/ (runs.txt and one file of per-write latencies in ns per run),
s2/ (startup.txt, running.txt, events.txt, udev.txt: key=value lines), s3/ (startup.txt,
overhead.txt: probe-overhead's table) and s4/ (runs.txt and per-commit latencies). Writes
OUTDIR/writer-latency.json and .png (section 1), daemon-cost.json and .png (section 2),
probe-cost.json (section 3), sqlite.json and .png (section 4), and prints one table per section.
The plots need matplotlib (python3-matplotlib); without it they are skipped with a note."""

import json
import math
import os
import re
import statistics
import sys


def kv(text):
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", text)}


def pct(sorted_values, p):
    """Nearest-rank percentile of a sorted list."""
    if not sorted_values:
        return 0.0
    return sorted_values[max(0, math.ceil(p * len(sorted_values)) - 1)]


def fmt_us(us):
    if us < 1000:
        return f"{us:.0f} us" if us >= 10 else f"{us:.1f} us"
    return f"{us / 1000:.1f} ms" if us < 100000 else f"{us / 1000:.0f} ms"


def ratio(a, b):
    return a / b if b > 0 else float("inf")


def fmt_ratio(r):
    if r == float("inf"):
        return "inf"
    return f"{r:.0f}x" if r >= 10 else f"{r:.2f}x"


def machine(raw):
    m = {}
    with open(os.path.join(raw, "machine.txt")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            m[k] = int(v) if v.isdigit() else v
    return m


def machine_line(m):
    return (f"{m['os']}, kernel {m['kernel']}, {m['cpus']} CPUs ({m['cpu_model']}), "
            f"{m['memory_mib']} MiB, {m['date']}, commit {m['commit']}"
            + (" (quick run)" if m.get("quick") else "")
            + (f"; load average {m['load_at_start']} at start, {m.get('load_at_end', '?')} at end"
               if "load_at_start" in m else ""))


def table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = "  ".join(str(h).rjust(w) if i else str(h).ljust(w) for i, (h, w) in enumerate(zip(header, widths)))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


def section1(raw, out, m):
    runs = []
    with open(os.path.join(raw, "s1", "runs.txt")) as f:
        for line in f:
            fs, wl, iops, cond, rnd, flag, rawfile, rest = line.split(" ", 7)
            with open(os.path.join(raw, "s1", rawfile)) as g:
                lat_us = [int(x) / 1000 for x in g if x.strip()]
            runs.append(dict(fs=fs, workload=wl, iops=int(iops), cond=cond, round=int(rnd),
                             flag_at_mount=int(flag), lat_us=lat_us, **{k: v for k, v in kv(rest).items()}))
    cells = []
    for key in sorted({(r["fs"], r["workload"], r["iops"]) for r in runs}, key=lambda k: (k[2], k[0], k[1])):
        cell = dict(fs=key[0], workload=key[1], throttle_write_iops=key[2])
        for cond in "ab":
            rs = [r for r in runs if (r["fs"], r["workload"], r["iops"]) == key and r["cond"] == cond]
            lat = sorted(x for r in rs for x in r["lat_us"])
            secs = sum(r["seconds"] for r in rs)
            cell[cond] = dict(
                flag_at_mount=rs[0]["flag_at_mount"], runs=len(rs), writes=len(lat),
                writes_per_s=round(len(lat) / secs, 1) if secs else 0,
                p50_us=round(pct(lat, 0.50), 1), p99_us=round(pct(lat, 0.99), 1),
                p999_us=round(pct(lat, 0.999), 1), max_us=round(lat[-1], 1) if lat else 0,
                over_10ms=sum(1 for x in lat if x > 10000),
                per_run=[dict(round=r["round"], writes=int(r["writes"]), p99_us=r["p99_us"],
                              max_us=r["max_us"], over_10ms=int(r["over10ms"])) for r in rs])
        cell["ratio_p99"] = round(ratio(cell["a"]["p99_us"], cell["b"]["p99_us"]), 1)
        cell["ratio_max"] = round(ratio(cell["a"]["max_us"], cell["b"]["max_us"]), 1)
        cells.append(cell)

    print()
    print("Section 1: writer tail latency, (a) stable_writes=1 at mount vs (b) after the udev-path applier "
          "(latency mode) set it to 0")
    print(machine_line(m))
    rows = []
    for c in cells:
        a, b = c["a"], c["b"]
        rows.append([f"{c['fs']} {c['workload']}", c["throttle_write_iops"],
                     a["writes"], fmt_us(a["p50_us"]), fmt_us(a["p99_us"]), fmt_us(a["p999_us"]), fmt_us(a["max_us"]),
                     a["over_10ms"],
                     b["writes"], fmt_us(b["p50_us"]), fmt_us(b["p99_us"]), fmt_us(b["p999_us"]), fmt_us(b["max_us"]),
                     b["over_10ms"], fmt_ratio(c["ratio_p99"]), fmt_ratio(c["ratio_max"])])
    table(rows, ["fs workload", "IOPS", "a:n", "a:p50", "a:p99", "a:p99.9", "a:max", "a:>10ms",
                 "b:n", "b:p50", "b:p99", "b:p99.9", "b:max", "b:>10ms", "p99 a/b", "max a/b"])
    print("n = writes done in all runs of the cell (1 per ms when nothing waits); >10ms = writes over 10 ms")
    doc = dict(machine=m, section="writer-latency",
               method=("per-write latency of a 100-byte write() appender and of 100-byte stores into an mmap'ed "
                       "page, one per ms, while a flusher in a blkio v1 throttled cgroup keeps the file under "
                       "writeback with sync_file_range(WAIT_BEFORE|WRITE); (a) queue/stable_writes=1 at mount, "
                       "(b) the one-shot applier of units/60-stablepages.rules (Policy=latency) set it to 0 "
                       "before mount; runs alternate a, b, a, b"),
               cells=cells)
    with open(os.path.join(out, "writer-latency.json"), "w") as f:
        json.dump(doc, f, indent=1)
    plot1(cells, out, m)


def plot1(cells, out, m):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: writer-latency.png not written; scripts/install-deps bench)")
        return
    keys = sorted({(c["fs"], c["workload"]) for c in cells})
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 4), sharey=True, squeeze=False)
    for ax, (fs, wl) in zip(axes[0], keys):
        cs = sorted((c for c in cells if (c["fs"], c["workload"]) == (fs, wl)), key=lambda c: c["throttle_write_iops"])
        x = [c["throttle_write_iops"] for c in cs]
        for cond, color, label in (("a", "tab:red", "(a) stable writes"), ("b", "tab:blue", "(b) stablepages: off")):
            ax.plot(x, [max(c[cond]["p99_us"], 0.1) / 1000 for c in cs], "o-", color=color, label=f"{label} p99")
            ax.plot(x, [max(c[cond]["max_us"], 0.1) / 1000 for c in cs], "s--", color=color, label=f"{label} max")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels([str(v) for v in x])
        ax.set_title(f"{fs}, {'write() appender' if wl == 'append' else 'mmap writer'}")
        ax.set_xlabel("flusher throttle (write IOPS)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("per-write latency (ms)")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(f"Writer stalls under throttled writeback, {m['kernel']}, {m['cpus']} CPUs", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "writer-latency.png"), dpi=100)
    plt.close(fig)


def section2(raw, out, m):
    starts = []
    with open(os.path.join(raw, "s2", "startup.txt")) as f:
        for line in f:
            who, n, total, rest = line.split(" ", 3)
            starts.append(dict(who=who, n=int(n), total=int(total), **kv(rest)))
    events, udev, doc = {}, {}, dict(machine=m, section="daemon-cost")
    with open(os.path.join(raw, "s2", "events.txt")) as f:
        for line in f:
            name, _, rest = line.rstrip("\n").partition(" ")
            events[name] = kv(rest) if "=" in rest else float(rest)
    with open(os.path.join(raw, "s2", "udev.txt")) as f:
        for line in f:
            name, _, rest = line.rstrip("\n").partition(" ")
            udev[name] = kv(rest)

    print()
    print("Section 2: the cost of the daemon (stablepagesd) and, side by side, tuned and a udev rule")
    print(machine_line(m))
    startup = []
    whos = ("stablepagesd", "stablepagesd-noprobe", "stablepagesd-base", "tuned")
    for n in sorted({s["n"] for s in starts}):
        row = dict(bench_devices=n, block_devices=max(s["total"] for s in starts if s["n"] == n))
        for who in whos:
            ss = [s for s in starts if s["n"] == n and s["who"] == who]
            if not ss:
                continue
            med = lambda k: statistics.median(s[k] for s in ss)
            row[who] = dict(starts=len(ss),
                            ready_ms=round(med("notify_us") / 1000, 1) if who != "tuned" else None,
                            ready_min_ms=round(min(s["notify_us"] for s in ss) / 1000, 1) if who != "tuned" else None,
                            bus_name_ms=round(med("bus_us") / 1000, 1),
                            bus_name_min_ms=round(min(s["bus_us"] for s in ss) / 1000, 1),
                            cpu_ms_at_ready=round(med("sched_us") / 1000, 1),
                            cpu_ms_at_ready_stat=int(med("cpu_ms")),
                            rss_kib=int(med("rss_kib")), pss_kib=int(med("pss_kib")),
                            raw=[{k: v for k, v in s.items() if k not in ("who", "n", "total")} for s in ss])
        startup.append(row)
    rows = []
    whos = tuple(w for w in ("stablepagesd", "stablepagesd-noprobe", "stablepagesd-base", "tuned")
                 if any(w in r for r in startup))
    for r in startup:
        base = r.get("stablepagesd")
        for who in whos:
            d = r.get(who)
            if not d:
                continue
            rel = "-"
            if who != "stablepagesd" and base:
                rel = (f"{fmt_ratio(ratio(d['bus_name_min_ms'], base['bus_name_min_ms']))} / "
                       f"{fmt_ratio(ratio(d['cpu_ms_at_ready'], base['cpu_ms_at_ready']))} / "
                       f"{fmt_ratio(ratio(d['rss_kib'], base['rss_kib']))}")
            rows.append([f"{r['bench_devices']} ({r['block_devices']})", who,
                         f"{d['ready_ms']:.0f} ({d['ready_min_ms']:.0f}) ms" if d["ready_ms"] is not None else "-",
                         f"{d['bus_name_ms']:.0f} ({d['bus_name_min_ms']:.0f}) ms", f"{d['cpu_ms_at_ready']:.1f} ms",
                         f"{d['rss_kib'] / 1024:.1f} MiB", f"{d['pss_kib'] / 1024:.1f} MiB", rel])
    table(rows, ["bench (all) devs", "daemon", "READY=1 med (min)", "bus name med (min)", "CPU at ready",
                 "RSS", "PSS", "vs stablepagesd: start min / CPU / RSS"])
    print("starts per cell: %d, rotating order; READY=1 = sd_notify; bus name = owner of its name on the system "
          "bus (tuned takes it after applying its profile); CPU = run time of its threads (schedstat) and RSS/PSS, "
          "0.5 s after; -noprobe = STABLEPAGES_STALLS_FORCE_UNAVAILABLE=1 (no BPF stall probe); -base = the "
          "baseline build (%s)"
          % (max((r[w]["starts"] for r in startup for w in whos if w in r), default=0), m.get("baseline", "none")))
    growth = {}
    if len(startup) >= 2:
        lo, hi = startup[0], startup[-1]
        dn = hi["block_devices"] - lo["block_devices"]
        for who in whos:
            if who in lo and who in hi and dn > 0:
                growth[who] = dict(
                    bus_name_min_ms_per_device=round((hi[who]["bus_name_min_ms"] - lo[who]["bus_name_min_ms"]) / dn, 3),
                    cpu_ms_per_device=round((hi[who]["cpu_ms_at_ready"] - lo[who]["cpu_ms_at_ready"]) / dn, 3),
                    rss_kib_per_device=round((hi[who]["rss_kib"] - lo[who]["rss_kib"]) / dn, 2))
        print("growth from %d to %d block devices, per device: " % (lo["block_devices"], hi["block_devices"])
              + "; ".join(f"{w}: start (min) {g['bus_name_min_ms_per_device']} ms, CPU {g['cpu_ms_per_device']} ms, "
                          f"RSS {g['rss_kib_per_device']} KiB" for w, g in growth.items()))
    doc.update(startup=startup, growth=growth)

    # uevents at each size: "WHO N TOTAL NAME key=value..."
    uevents = []
    path = os.path.join(raw, "s2", "running.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                who, n, total, name, rest = line.split(" ", 4)
                e = kv(rest)
                uevents.append(dict(who=who, bench_devices=int(n), block_devices=int(total), workload=name,
                                    count=int(e["count"]), wall_ms=int(e["wall_ms"]), cpu_ms_stat=int(e["cpu_ms"]),
                                    cpu_us_sched=int(e["sched_us"]),
                                    cpu_us_per_event=round(e["sched_us"] / e["count"], 1)))
    if uevents:
        print()
        print("Daemon CPU per change uevent (schedstat), isolated (120 ms apart) and in a burst, at each size")
        rows = []
        for n in sorted({u["bench_devices"] for u in uevents}):
            get = lambda who, wl: next((u for u in uevents if u["bench_devices"] == n and u["who"] == who
                                        and u["workload"] == wl), None)
            iso, burst = get("stablepagesd", "uevents-isolated"), get("stablepagesd", "uevents-burst")
            biso, bburst = get("stablepagesd-base", "uevents-isolated"), get("stablepagesd-base", "uevents-burst")
            if not iso:
                continue
            rows.append([f"{n} ({iso['block_devices']})", f"{iso['count']}", fmt_us(iso["cpu_us_per_event"]),
                         fmt_us(biso["cpu_us_per_event"]) if biso else "-",
                         fmt_ratio(ratio(biso["cpu_us_per_event"], iso["cpu_us_per_event"])) if biso else "-",
                         f"{burst['count']}" if burst else "-",
                         fmt_us(burst["cpu_us_per_event"]) if burst else "-",
                         fmt_us(bburst["cpu_us_per_event"]) if bburst else "-"])
        table(rows, ["bench (all) devs", "isolated n", "isolated/event", "baseline", "baseline/this",
                     "burst n", "burst/event", "baseline"])
    doc["uevents"] = uevents

    costs = {}
    if events:
        n_dev = startup[-1]["block_devices"]
        print()
        print(f"Running costs with {startup[-1]['bench_devices']} bench devices ({n_dev} block devices); "
              f"daemon RSS {events['running']['rss_kib'] / 1024:.1f} MiB at READY, "
              f"{events.get('rss_after', 0) / 1024:.1f} MiB after all of the below")
        rows = []
        for name, label in (("idle-3s", "idle, 3 s (noise floor: other activity)"),
                            ("uevents-burst", "change uevents, at once"),
                            ("uevents-isolated", "change uevents, 120 ms apart"),
                            ("mount-storm", "tmpfs mount+umount pairs")):
            e = events.get(name)
            if not e:
                continue
            costs[name] = dict(count=int(e["count"]), wall_ms=int(e["wall_ms"]), cpu_ms_stat=int(e["cpu_ms"]),
                               cpu_us_sched=int(e["sched_us"]),
                               cpu_us_per_item=round(e["sched_us"] / e["count"], 1))
            rows.append([label, int(e["count"]), f"{e['wall_ms']:.0f} ms", f"{e['cpu_ms']:.0f} ms",
                         f"{e['sched_us'] / 1000:.1f} ms", fmt_us(e["sched_us"] / e["count"])])
        table(rows, ["daemon workload", "count", "wall", "CPU (stat)", "CPU (schedstat)", "CPU per item"])
        ld = events.get("listdevices")
        if ld:
            costs["listdevices"] = {k: ld[k] for k in ("clients", "calls", "done", "failed", "unanswered",
                                                       "calls_per_s", "p50_us", "p90_us", "p99_us", "max_us")}
            print(f"ListDevices, {int(ld['clients'])} concurrent clients, {int(ld['calls'])} calls, "
                  f"{n_dev} block devices: p50 {fmt_us(ld['p50_us'])}, p99 {fmt_us(ld['p99_us'])}, "
                  f"max {fmt_us(ld['max_us'])}, {ld['calls_per_s']:.0f} calls/s, failed {int(ld['failed'])}")
        for name, label in (("getstalls", "GetStalls(disk)"), ("getall", "Device Properties.GetAll"),
                            ("properties", "GetDeviceProperties(disk)")):
            c = events.get(name)
            if not c:
                continue
            calls = c["clients"] * c["calls"]
            costs[name] = {k: c[k] for k in ("clients", "calls", "done", "failed", "p50_us", "p99_us", "max_us",
                                             "daemon_sched_us")}
            costs[name]["daemon_cpu_us_per_call"] = round(c["daemon_sched_us"] / calls, 1)
            print(f"{label}, live stall counts, 1 client, {int(calls)} calls, {n_dev} block devices: "
                  f"p50 {fmt_us(c['p50_us'])}, p99 {fmt_us(c['p99_us'])}, max {fmt_us(c['max_us'])}; "
                  f"daemon CPU {fmt_us(c['daemon_sched_us'] / calls)} per call")
    if udev:
        last = [u for u in uevents if u["who"] == "stablepagesd" and
                u["bench_devices"] == max(x["bench_devices"] for x in uevents)]
        per_event = next((u["cpu_us_per_event"] for u in last if u["workload"] == "uevents-burst"), None)
        per_iso = next((u["cpu_us_per_event"] for u in last if u["workload"] == "uevents-isolated"), None)
        print()
        rows = []
        items = [("stablepagesd daemon, burst", per_event), ("stablepagesd daemon, isolated events", per_iso)]
        if "udevadm-test" in udev:
            items.append(("udev rule ATTR{queue/stable_writes}=\"0\" (udevadm test)", udev["udevadm-test"]["cpu_us_per_run"]))
        if "attr-write" in udev:
            items.append(("the sysfs write alone (floor of any rule)", udev["attr-write"]["cpu_ns_per_write"] / 1000))
        if "applier" in udev:
            items.append(("project's rule: RUN stablepagesd apply (fork+exec)", udev["applier"]["cpu_us_per_run"]))
        for label, v in items:
            if v is not None:
                rows.append([label, fmt_us(v), fmt_ratio(ratio(v, per_event)) if per_event else "-"])
        table(rows, ["per-event CPU", "CPU/event", "vs daemon burst"])
        print("udevadm test = one process per event with only that rule loaded (a private mount namespace): "
              "an upper bound of what udevd spends; udevd itself was not run (it would process every "
              "device of the machine)")
        costs["udev"] = udev
    doc["running"] = costs
    with open(os.path.join(out, "daemon-cost.json"), "w") as f:
        json.dump(doc, f, indent=1)
    plot2(startup, out, m)


def plot2(startup, out, m):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: daemon-cost.png not written)")
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for who, color in (("stablepagesd", "tab:green"), ("stablepagesd-noprobe", "tab:olive"),
                       ("stablepagesd-base", "tab:purple"), ("tuned", "tab:gray")):
        rs = [r for r in startup if who in r]
        if not rs:
            continue
        x = [r["block_devices"] for r in rs]
        ax1.plot(x, [r[who]["bus_name_min_ms"] for r in rs], "o-", color=color, label=f"{who}: bus name (min)")
        ax1.plot(x, [max(r[who]["cpu_ms_at_ready"], 0.1) for r in rs], "s--", color=color, label=f"{who}: CPU")
        ax2.plot(x, [r[who]["rss_kib"] / 1024 for r in rs], "o-", color=color, label=who)
    ax1.set_yscale("log")
    ax1.set_xlabel("block devices present")
    ax1.set_ylabel("start-up wall (min) and CPU (ms)")
    ax1.legend(fontsize=7)
    ax1.grid(True, which="both", alpha=0.3)
    ax2.set_xlabel("block devices present")
    ax2.set_ylabel("RSS after start-up (MiB)")
    ax2.legend(fontsize=7)
    ax2.grid(True, alpha=0.3)
    fig.suptitle(f"Cost of start-up, {m['kernel']}, {m['cpus']} CPUs", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "daemon-cost.png"), dpi=100)
    plt.close(fig)


def section3(raw, out, m):
    starts = {}
    with open(os.path.join(raw, "s3", "startup.txt")) as f:
        for line in f:
            name, _, rest = line.rstrip("\n").partition(" ")
            starts.setdefault(name, []).append(kv(rest))
    doc = dict(machine=m, section="probe-cost")
    print()
    print("Section 3: the stall probe's cost")
    print(machine_line(m))
    doc["startup"] = {}
    for who in ("this", "base"):
        for run in ("cold", "warm"):
            rs = starts.get(f"inproc-{who}-{run}", [])
            if not rs:
                continue
            cpu = sorted(x["cpu_us"] for x in rs)
            cell = dict(starts=len(cpu), cpu_ms_median=round(statistics.median(cpu) / 1000, 1),
                        cpu_ms_min=round(cpu[0] / 1000, 1), cpu_ms_max=round(cpu[-1] / 1000, 1),
                        wall_ms_median=round(statistics.median(x["wall_us"] for x in rs) / 1000, 1), raw=rs)
            doc["startup"][f"{who}-{run}"] = cell
            print(f"start-up (stall_probe_new(), {len(cpu)} starts), {who}"
                  + (f" ({m.get('baseline', '?')})" if who == "base" else "")
                  + f", {run}: CPU median {cell['cpu_ms_median']:.1f} ms (min {cell['cpu_ms_min']:.1f}, "
                  f"max {cell['cpu_ms_max']:.1f}), wall median {cell['wall_ms_median']:.1f} ms")
    for who in ("process-this", "process-base"):
        if who in starts:
            doc[who] = starts[who][0]
    if "process-this" in starts:
        t = starts["process-this"][0]["cpu_us_per_run"]
        b = starts.get("process-base", [{}])[0].get("cpu_us_per_run")
        print(f"whole process (stall-probe-dump --duration 0, exec to exit, 10 runs): {t / 1000:.1f} ms CPU per run"
              + (f"; baseline ({m.get('baseline', '?')}): {b / 1000:.1f} ms, {fmt_ratio(ratio(b, t))} of this"
                 if b else ""))
    rows, spread = [], {}
    path = os.path.join(raw, "s3", "overhead.txt")
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
        doc["overhead_text"] = text
        # probe-overhead's tables, by workload: under a header "workload  no probe  MODE...", the
        # median rates and their ratios to no probe; then the medians of the per-round ratios
        # ("short/no R" pairs, in the modes' order) and the spread ("none | MODE | ...").
        modes, per_round = [], {}
        for line in text.splitlines():
            if line.startswith("workload ") and "no probe" in line:
                modes = line.split("no probe", 1)[1].split()
                modes = modes[:len(modes) // 2]
                continue
            mm = re.match(r"(.*?\))\s+([0-9. ]+)$", line)
            pm = re.match(r"(.*?\))((?:\s+\S+/no [0-9.]+)+)$", line)
            sm = re.match(r"(.*\))\s+([0-9]+-[0-9]+(?: \| [0-9]+-[0-9]+)+)$", line)
            if mm and modes and len(mm.group(2).split()) == 1 + 2 * len(modes):
                rest = [float(v) for v in mm.group(2).split()]
                rows.append(dict(workload=mm.group(1).strip(), rates=dict(zip(["none"] + modes, rest)),
                                 ratio_of_medians=dict(zip(modes, rest[1 + len(modes):]))))
            elif pm:
                per_round[pm.group(1).strip()] = dict(zip(modes, map(float, pm.group(2).split()[1::2])))
            elif sm:
                spread[sm.group(1).strip()] = dict(zip(["none"] + modes, sm.group(2).split(" | ")))
        for r in rows:
            r["median_of_per_round_ratios"] = per_round.get(r["workload"])
            r["spread"] = spread.get(r["workload"])
        doc["overhead"] = rows
        print(text.rstrip())
    with open(os.path.join(out, "probe-cost.json"), "w") as f:
        json.dump(doc, f, indent=1)


def section4(raw, out, m):
    runs = []
    with open(os.path.join(raw, "s4", "runs.txt")) as f:
        for line in f:
            cond, rnd, flag, rawfile, rest = line.split(" ", 4)
            with open(os.path.join(raw, "s4", rawfile)) as g:
                lat_us = [int(x) / 1000 for x in g if x.strip()]
            version = re.search(r"sqlite=(\S+)", rest)
            runs.append(dict(cond=cond, round=int(rnd), flag_at_mount=int(flag), lat_us=lat_us,
                             sqlite=version.group(1) if version else "?",
                             **kv(re.sub(r"sqlite=\S+", "", rest))))
    cell = dict(sqlite=runs[0]["sqlite"] if runs else "?")
    for cond in "ab":
        rs = [r for r in runs if r["cond"] == cond]
        lat = sorted(x for r in rs for x in r["lat_us"])
        cell[cond] = dict(flag_at_mount=rs[0]["flag_at_mount"] if rs else None, runs=len(rs), commits=len(lat),
                          p50_us=round(pct(lat, 0.5), 1), p99_us=round(pct(lat, 0.99), 1),
                          max_us=round(lat[-1], 1) if lat else 0, over_10ms=sum(1 for x in lat if x > 10000),
                          per_run=[dict(round=r["round"], commits=int(r["writes"]), p50_us=r["p50_us"],
                                        p99_us=r["p99_us"], max_us=r["max_us"]) for r in rs])
    for k in ("p50_us", "p99_us", "max_us"):
        cell["ratio_" + k[:-3]] = round(ratio(cell["a"][k], cell["b"][k]), 1)
    print()
    print(f"Section 4: SQLite {cell['sqlite']} WAL commits (synchronous=NORMAL, one per ms) on ext4, "
          "(a) stable_writes=1 at mount vs (b) after the applier")
    print(machine_line(m))
    rows = []
    for cond, label in (("a", "(a) stable_writes=1"), ("b", "(b) after the applier")):
        c = cell[cond]
        rows.append([label, c["runs"], c["commits"], fmt_us(c["p50_us"]), fmt_us(c["p99_us"]), fmt_us(c["max_us"]),
                     c["over_10ms"]])
    rows.append(["a/b", "", "", fmt_ratio(cell["ratio_p50"]), fmt_ratio(cell["ratio_p99"]),
                 fmt_ratio(cell["ratio_max"]), ""])
    table(rows, ["condition", "runs", "commits", "p50", "p99", "max", ">10ms"])
    doc = dict(machine=m, section="sqlite",
               method=("Python's sqlite3 module (Debian's libsqlite3) committing one INSERT of 100 bytes per ms in "
                       "WAL mode, synchronous=NORMAL, on ext4 on a loop device, while a flusher in a blkio-throttled "
                       "cgroup keeps the WAL file under writeback (sync_file_range); per-commit latency from the "
                       "INSERT to the end of the COMMIT; (a) stable_writes=1 at mount, (b) after the one-shot applier "
                       "of units/60-stablepages.rules (Policy=latency); runs alternate a, b"),
               cell={k: v for k, v in cell.items()})
    with open(os.path.join(out, "sqlite.json"), "w") as f:
        json.dump(doc, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: sqlite.png not written)")
        return
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for cond, color, label in (("a", "tab:red", "(a) stable writes at mount"), ("b", "tab:blue", "(b) stablepages: off")):
        lat = sorted(x for r in runs if r["cond"] == cond for x in r["lat_us"])
        if lat:
            ax.plot([x / 1000 for x in lat], [(i + 1) / len(lat) for i in range(len(lat))], color=color, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("per-commit latency (ms)")
    ax.set_ylabel("fraction of commits")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(f"SQLite WAL commits under throttled writeback, {m['kernel']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sqlite.png"), dpi=100)
    plt.close(fig)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    raw, out, sections = sys.argv[1], sys.argv[2], sys.argv[3:] or ["1", "2", "3", "4"]
    m = machine(raw)
    if "1" in sections:
        section1(raw, out, m)
    if "2" in sections:
        section2(raw, out, m)
    if "3" in sections:
        section3(raw, out, m)
    if "4" in sections:
        section4(raw, out, m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
