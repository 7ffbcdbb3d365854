#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes a `promtool test rules` file for the alert StablepagesMirrorDiverged of
conf/stablepages.rules.yml from a real MetricsFile= of stablepagesd.

Usage: rules-test-mirror.py RULES METRICS DEVICE > test.yml

METRICS is the file the daemon wrote after an md check of the mirror DEVICE found its legs
diverged (tests/vm/scenarios/md-raid1.sh). Its stablepages_ series of DEVICE (and those with no
device label) are held constant for an hour, with the labels Prometheus adds (job "node",
instance "guest"). Two groups: the scrape as it is, where the alert fires at once with the
labels and annotations the rule renders; the same with stablepages_mirror_diverged set to 0,
where it never does.
"""
import json
import re
import sys

import yaml
from prometheus_client.parser import text_string_to_metric_families

rules_path, metrics_path, device = sys.argv[1:4]
rule = next(r for g in yaml.safe_load(open(rules_path))["groups"] for r in g["rules"]
            if r.get("alert") == "StablepagesMirrorDiverged")
samples = [(s.name, dict(s.labels, job="node", instance="guest"), s.value)
           for f in text_string_to_metric_families(open(metrics_path).read()) for s in f.samples
           if s.name.startswith("stablepages_") and s.labels.get("device", device) == device]
diverged = [l for n, l, v in samples if n == "stablepages_mirror_diverged"]
assert len(diverged) == 1, f"{metrics_path}: no stablepages_mirror_diverged of {device}"


def selector(name, labels):
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def series(healed):
    return [{"series": selector(n, l), "values": f"{0 if healed and n == 'stablepages_mirror_diverged' else v:.17g}+0x60"}
            for n, l, v in samples]


labels = dict(diverged[0], **rule.get("labels", {}))
render = lambda t: re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), t)
fired = {"exp_labels": labels, "exp_annotations": {k: render(v) for k, v in rule["annotations"].items()}}
tests = [
    {"interval": "1m", "input_series": series(False),
     "alert_rule_test": [{"alertname": "StablepagesMirrorDiverged", "eval_time": "1m", "exp_alerts": [fired]},
                         {"alertname": "StablepagesMirrorDiverged", "eval_time": "59m", "exp_alerts": [fired]}]},
    {"interval": "1m", "input_series": series(True),
     "alert_rule_test": [{"alertname": "StablepagesMirrorDiverged", "eval_time": "59m", "exp_alerts": []}]},
]
json.dump({"rule_files": [rules_path], "evaluation_interval": "1m", "tests": tests}, sys.stdout, indent=1)
print()
