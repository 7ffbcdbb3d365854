#!/bin/bash
# stablepagesd --bus-introspect (generated from the vtables) and the man page
# org.stablepages1(5) name the same methods, signals and properties with the same
# signatures, for both interfaces. Needs no root and no bus.
set -uo pipefail
SPD=${1:-${STABLEPAGESD:-stablepagesd}}
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

xml=$("$SPD" --bus-introspect) || { echo "FAIL: --bus-introspect exited $?"; exit 1; }
python3 - "$SRC/man/org.stablepages1.5.scd" <<PY
import re, sys, xml.etree.ElementTree as ET
root = ET.fromstring("""$xml""".split("\n", 2)[2])
got = {}
for iface in root.iter("interface"):
    for el in iface:
        args = "".join(a.get("type") for a in el.findall("arg"))
        if el.tag == "property":
            args = el.get("type")
        got[(iface.get("name"), el.tag, el.get("name"))] = args

man = open(sys.argv[1]).read()
want = {}
for block in re.findall(r"interface (\S+) \{(.*?)\n  \};", man, re.S):
    name, body = block
    section = None
    for m in re.finditer(r"^\s*(methods|signals|properties):|^\s*readonly (\S+) (\w+);|^\s*(\w+)\((.*?)\);", body, re.S | re.M):
        if m.group(1):
            section = {"methods": "method", "signals": "signal", "properties": "property"}[m.group(1)]
        elif m.group(2):
            want[(name, "property", m.group(3))] = m.group(2)
        else:
            types = "".join(t for t in re.findall(r"(?:in|out)?\s*(\S+)\s+\w+\s*(?:,|$)", m.group(5)))
            want[(name, section, m.group(4))] = types
missing = sorted(set(want) - set(got)); extra = sorted(set(got) - set(want))
wrong = sorted(k for k in set(got) & set(want) if got[k] != want[k])
for k in missing: print("documented but not served:", k)
for k in extra: print("served but not documented:", k)
for k in wrong: print("signature differs:", k, "served", got[k], "documented", want[k])
assert len(want) > 20, "parsed too little of the man page: %d" % len(want)
sys.exit(1 if missing or extra or wrong else 0)
PY
rc=$?
[ $rc -eq 0 ] && echo "introspection matches org.stablepages1(5)"
exit $rc
