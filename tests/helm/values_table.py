#!/usr/bin/env python3
"""The chart README's table of values, generated from values.yaml (defaults) and
values.schema.json (descriptions), between the README's values-table markers.

  values_table.py CHART_DIR --check   exit 1 when the README's table is out of date
  values_table.py CHART_DIR --write   rewrite it
"""
import json
import os
import sys

import yaml

START = "<!-- values-table:start -->"
END = "<!-- values-table:end -->"


def resolve(schema, node):
    ref = node.get("$ref")
    if ref:
        target = schema
        for part in ref.lstrip("#/").split("/"):
            target = target[part]
        merged = dict(target)
        merged.update({k: v for k, v in node.items() if k != "$ref"})
        return merged
    return node


def default_text(value):
    if value is None:
        return "—"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{json.dumps(value, separators=(', ', ': '))}`"


def rows(schema, node, values, prefix, problems, shared=False):
    shared = shared or "$ref" in node
    node = resolve(schema, node)
    props = node.get("properties", {})
    keys = list(values) if isinstance(values, dict) else []
    # Chart-specific objects also list the keys they leave unset; shared definitions (probes,
    # resources, alert rules) list only what values.yaml sets.
    if not shared:
        keys += [k for k in props if k not in keys]
    for key in keys:
        path = f"{prefix}{key}"
        child = resolve(schema, props.get(key, {}))
        value = values.get(key) if isinstance(values, dict) else None
        if key not in props:
            problems.append(f"{path}: not in values.schema.json")
            continue
        if isinstance(value, dict) and value and child.get("properties"):
            yield from rows(schema, props[key], value, path + ".", problems, shared)
            continue
        desc = child.get("description")
        if not desc:
            problems.append(f"{path}: no description in values.schema.json")
            desc = ""
        desc = desc.replace("|", "\\|")
        yield f"| `{path}` | {default_text(value)} | {desc} |"


def table(chart):
    with open(os.path.join(chart, "values.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    with open(os.path.join(chart, "values.yaml"), encoding="utf-8") as f:
        values = yaml.safe_load(f)
    problems = []
    lines = ["| Key | Default | Description |", "|---|---|---|"]
    lines += list(rows(schema, schema, values, "", problems))
    return "\n".join(lines), problems


def main(argv):
    if len(argv) != 3 or argv[2] not in ("--check", "--write"):
        print(__doc__, file=sys.stderr)
        return 2
    chart, mode = argv[1], argv[2]
    generated, problems = table(chart)
    for p in problems:
        print(p)
    readme_path = os.path.join(chart, "README.md")
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()
    if START not in readme or END not in readme:
        print(f"{readme_path}: no {START} ... {END} markers")
        return 1
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    updated = f"{head}{START}\n{generated}\n{END}{tail}"
    if mode == "--write":
        with open(readme_path, "w", encoding="utf-8") as f:
            f.write(updated)
        return 1 if problems else 0
    if updated != readme:
        print(f"{readme_path}: the values table is out of date; run: python3 tests/helm/values_table.py {chart} --write")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
