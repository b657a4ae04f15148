#!/usr/bin/env python3
"""Offline checks of `helm template` output, run by scripts/chart-check.

Subcommands:
  validate KUBE_VERSION FILE       strict JSON-schema validation of every built-in object
                                   (kubernetes-validate's schemas of that Kubernetes version);
                                   custom resources are left to validate_crs.mjs
  extract-crs FILE OUT.json        the custom resources, as JSON for validate_crs.mjs
  extract-rules FILE OUT.yaml      the PrometheusRule's groups as a Prometheus rule file
  dashboard-rules JSON OUT.yaml    every PromQL query of a Grafana dashboard as a recording rule,
                                   so that promtool checks its syntax
  junit FILE                       one line per test case of a JUnit XML report:
                                   PASS|FAIL|SKIP, a tab, the name, a tab, the end of the
                                   failure text with its newlines as the byte 0x1f
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

import yaml

# API groups whose objects are custom resources: no Kubernetes schema covers them.
CUSTOM_GROUPS = ("monitoring.coreos.com/", "keda.sh/", "cert-manager.io/")


def load(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def is_custom(doc):
    return doc["apiVersion"].startswith(CUSTOM_GROUPS)


def validate(kube_version, path):
    import kubernetes_validate

    docs = [d for d in load(path) if not is_custom(d)]
    if not docs:
        print("no objects rendered")
        return 1
    failures = 0
    for doc in docs:
        name = f"{doc['kind']}/{doc['metadata']['name']}"
        try:
            kubernetes_validate.validate(doc, kube_version, strict=True)
        except kubernetes_validate.ValidationError as e:
            where = ".".join(str(p) for p in e.path)
            print(f"{name}: {where}: {e.message}")
            failures += 1
        except kubernetes_validate.SchemaNotFoundError as e:
            print(f"{name}: {e.message}")
            failures += 1
    print(f"{len(docs) - failures}/{len(docs)} objects valid against Kubernetes {kube_version} (strict)")
    return 1 if failures else 0


def extract_crs(path, out):
    crs = [d for d in load(path) if is_custom(d)]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(crs, f)
    print(len(crs))
    return 0


def extract_rules(path, out):
    rules = [d for d in load(path) if d["kind"] == "PrometheusRule"]
    if len(rules) != 1:
        print(f"expected one PrometheusRule, found {len(rules)}")
        return 1
    with open(out, "w", encoding="utf-8") as f:
        yaml.safe_dump({"groups": rules[0]["spec"]["groups"]}, f, sort_keys=False)
    return 0


# Grafana's template variables, replaced by values that keep the query's PromQL syntax.
GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
    "$namespace": "ns",
    "$service": "svc",
}


def dashboard_rules(path, out):
    with open(path, encoding="utf-8") as f:
        dashboard = json.load(f)
    rules = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for var, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(var, value)
            if "$" in expr:
                print(f"panel {panel['title']!r}: unknown variable in {expr}")
                return 1
            rules.append({"record": f"dashboard:panel{panel['id']}:{target['refId']}", "expr": expr})
    with open(out, "w", encoding="utf-8") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f, sort_keys=False)
    return 0


def junit(path):
    failed = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname').rsplit('.', 1)[-1]}::{case.get('name')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        status = "SKIP" if case.find("skipped") is not None else "FAIL" if problem is not None else "PASS"
        detail = ""
        if problem is not None:
            text = (problem.text or problem.get("message") or "").rstrip().splitlines()
            detail = "\x1f".join(text[-30:]).replace("\t", " ")
        print(f"{status}\t{name}\t{detail}")
        failed += problem is not None
    return 1 if failed else 0


def main(argv):
    commands = {
        "validate": (validate, 2),
        "extract-crs": (extract_crs, 2),
        "extract-rules": (extract_rules, 2),
        "dashboard-rules": (dashboard_rules, 2),
        "junit": (junit, 1),
    }
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    fn, _ = commands[argv[1]]
    return fn(*argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
