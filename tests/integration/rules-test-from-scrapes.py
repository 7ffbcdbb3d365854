#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes a `promtool test rules` file for conf/stablepages.rules.yml from real scrapes.

Usage: rules-test-from-scrapes.py RULES INSTANCE DEVICES HEALTHY BREACH HAZARD > test.yml

Each scrape is node_exporter's /metrics (textfile collector) taken by
test-metrics-scrape.sh in one state of a real daemon: HEALTHY (nothing wrong), BREACH (a
required zram device whose writers waited over the stall budget), HAZARD (the same device
with stable writes cleared by hand, the daemon observing only, its probe unavailable). The
stablepages_ and node_textfile_ series of a scrape (of the test's DEVICES, comma-separated,
and those with no device label: other disks of a shared machine are left out) are held
constant for two hours, with the
labels Prometheus adds (job "node", instance INSTANCE); node_textfile_mtime_seconds follows
the clock (the file is rewritten) except in the stale case. Two series are derived, not
scraped: the lost-events counter growing once, the mtime that stops, and the need of the
zram device relabelled "unknown".

Each group expects exactly the alerts the state implies, at times before and after each
rule's `for:`, with the labels and annotations the rules render (alertname is implicit).
"""
import json
import re
import sys

import yaml
from prometheus_client.parser import text_string_to_metric_families

HOURS = 2
STEPS = HOURS * 60  # one sample a minute
ALERTS = ["StablepagesRequiredNotInForce", "StablepagesStallBudgetExceeded", "StablepagesStallProbeDown",
          "StablepagesStallProbeLosingEvents", "StablepagesMetricsStale", "StablepagesMirrorDiverged"]

rules_path, instance, devices, healthy_path, breach_path, hazard_path = sys.argv[1:7]
devices = devices.split(",")
rules = {r["alert"]: r for g in yaml.safe_load(open(rules_path))["groups"] for r in g["rules"]}
missing = set(ALERTS) ^ set(rules)
assert not missing, f"the rules and this test disagree on the alerts: {sorted(missing)}"


def scrape(path):
    """[(name, labels, value)] of the scrape's stablepages_ and node_textfile_ samples."""
    out = []
    for fam in text_string_to_metric_families(open(path).read()):
        for s in fam.samples:
            if s.name.startswith(("stablepages_", "node_textfile_")) and s.labels.get("device", devices[0]) in devices:
                out.append((s.name, dict(s.labels, job="node", instance=instance), s.value))
    assert any(n.startswith("stablepages_") for n, _, _ in out), f"{path}: no stablepages_ series"
    return out


def selector(name, labels):
    def esc(v):
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return name + "{" + ",".join(f'{k}="{esc(v)}"' for k, v in sorted(labels.items())) + "}"


def num(v):
    return format(v, ".17g")


def constant(v, steps=STEPS):
    return f"{num(v)}+0x{steps}"


def input_series(samples, stale=False, lost_growth=None, relabel=None):
    series = []
    for name, labels, value in samples:
        if relabel and labels.get("device") == relabel[0] and labels.get(relabel[1]) == relabel[2]:
            labels = dict(labels, **{relabel[1]: relabel[3]})
        if name == "node_textfile_mtime_seconds":
            values = constant(0) if stale else f"0+60x{STEPS}"  # rewritten every minute, or never
        elif name == "stablepages_stall_probe_lost_events_total" and lost_growth:
            at, by = lost_growth
            values = f"{num(value)}+0x{at} {num(value + by)}+0x{STEPS - at - 1}"
        else:
            values = constant(value)
        series.append({"series": selector(name, labels), "values": values})
    return series


def find(samples, name, **want):
    found = [l for n, l, _ in samples if n == name and all(l.get(k) == v for k, v in want.items())]
    assert found, f"no {name} {want} in the scrape"
    return found[0]


def expect(alert, labels):
    """The alert as promtool reports it: the series' labels, the rule's, rendered annotations."""
    rule = rules[alert]
    out = {k: v for k, v in labels.items() if k != "__name__"}
    out.update(rule.get("labels", {}))

    def render(text):
        return re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: out.get(m.group(1), ""), text)
    return {"exp_labels": out, "exp_annotations": {k: render(v) for k, v in rule.get("annotations", {}).items()}}


def case(alert, minutes, alerts=()):
    return {"alertname": alert, "eval_time": f"{minutes}m", "exp_alerts": list(alerts)}


def group(series, cases):
    return {"interval": "1m", "input_series": series, "alert_rule_test": cases}


healthy, breach, hazard = scrape(healthy_path), scrape(breach_path), scrape(hazard_path)
over = [l for n, l, v in breach if n == "stablepages_stall_over_budget" and v == 1]
assert len(over) == 1, f"the breach scrape should have one disk over the budget, not {len(over)}"
zram = over[0]["device"]
lost = find(breach, "stablepages_stall_probe_lost_events_total")
mtime = [l for n, l, _ in healthy if n == "node_textfile_mtime_seconds" and "stablepages" in l.get("file", "")]
assert len(mtime) == 1, f"the healthy scrape should have the mtime of one stablepages file, not {mtime}"
in_force = find(hazard, "stablepages_in_force", device=zram)
probe = find(hazard, "stablepages_stall_probe_info", mode="unavailable")

tests = [
    # Nothing is wrong: no alert, even two hours later.
    group(input_series(healthy), [case(a, 60 * HOURS - 1) for a in ALERTS]),
    # Writers on a required disk wait over the budget: pending until 30 minutes have passed.
    group(input_series(breach), [
        case("StablepagesStallBudgetExceeded", 29),
        case("StablepagesStallBudgetExceeded", 31, [expect("StablepagesStallBudgetExceeded",
                                                           find(breach, "stablepages_stall_over_budget",
                                                                device=zram))]),
        case("StablepagesRequiredNotInForce", 31),
        case("StablepagesStallProbeDown", 31),
        case("StablepagesStallProbeLosingEvents", 31),
        case("StablepagesMetricsStale", 31),
    ]),
    # The required disk runs without stable writes; the probe is unavailable.
    group(input_series(hazard), [
        case("StablepagesRequiredNotInForce", 4),
        case("StablepagesRequiredNotInForce", 6, [expect("StablepagesRequiredNotInForce", in_force)]),
        case("StablepagesStallProbeDown", 14),
        case("StablepagesStallProbeDown", 16, [expect("StablepagesStallProbeDown", probe)]),
        case("StablepagesStallBudgetExceeded", 60),
        case("StablepagesMetricsStale", 60),
    ]),
    # The probe loses 3 events at minute 31: alerted while they are in the last 15 minutes.
    group(input_series(breach, lost_growth=(30, 3)), [
        case("StablepagesStallProbeLosingEvents", 29),
        case("StablepagesStallProbeLosingEvents", 32, [expect("StablepagesStallProbeLosingEvents", lost)]),
        case("StablepagesStallProbeLosingEvents", 44, [expect("StablepagesStallProbeLosingEvents", lost)]),
        case("StablepagesStallProbeLosingEvents", 48),
    ]),
    # A need the daemon cannot explain ("unknown") counts as required.
    group(input_series(hazard, relabel=(zram, "need", "required", "unknown")), [
        case("StablepagesRequiredNotInForce", 6, [expect("StablepagesRequiredNotInForce", in_force)]),
    ]),
    # The file stops being rewritten at time 0: stale after 5 minutes, alerted 5 minutes later.
    group(input_series(healthy, stale=True), [
        case("StablepagesMetricsStale", 4),
        case("StablepagesMetricsStale", 12, [expect("StablepagesMetricsStale", mtime[0])]),
    ]),
]
# JSON is YAML: promtool reads it as is.
json.dump({"rule_files": [rules_path], "evaluation_interval": "1m", "tests": tests}, sys.stdout, indent=1)
print()
