#!/usr/bin/env python3
"""Normalize Kafka message spec files: facts only, stable layout.

Usage: normalize_spec.py OUTDIR SPEC.json...

Kafka's spec files are JSON with // comments. The snapshot keeps the keys the
decoder uses and drops prose ("about"), comments and license headers, so that a
diff between two releases shows only wire-relevant changes.
"""
import json
import os
import sys

MESSAGE_KEYS = ["apiKey", "type", "listeners", "name", "validVersions",
                "deprecatedVersions", "flexibleVersions", "latestVersionUnstable",
                "fields", "commonStructs"]
FIELD_KEYS = ["name", "type", "versions", "nullableVersions", "flexibleVersions",
              "taggedVersions", "tag", "default", "ignorable", "entityType",
              "mapKey", "zeroCopy", "fields"]
STRUCT_KEYS = ["name", "versions", "fields"]


def strip_comments(text):
    """Remove // line comments that are outside JSON strings."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def pick(obj, keys, where):
    unknown = set(obj) - set(keys) - {"about"}
    if unknown:
        raise SystemExit(f"{where}: unknown keys {sorted(unknown)}")
    return {k: obj[k] for k in keys if k in obj}


def norm_fields(fields, where):
    result = []
    for f in fields:
        g = pick(f, FIELD_KEYS, f"{where}.{f.get('name', '?')}")
        if "fields" in g:
            g["fields"] = norm_fields(g["fields"], f"{where}.{g['name']}")
        result.append(g)
    return result


def normalize(path):
    with open(path, encoding="utf-8") as fh:
        spec = json.loads(strip_comments(fh.read()))
    where = os.path.basename(path)
    msg = pick(spec, MESSAGE_KEYS, where)
    msg["fields"] = norm_fields(msg.get("fields", []), where)
    if "commonStructs" in msg:
        msg["commonStructs"] = [
            dict(pick(s, STRUCT_KEYS, f"{where}.{s['name']}"),
                 fields=norm_fields(s["fields"], f"{where}.{s['name']}"))
            for s in msg["commonStructs"]]
    return msg


def main():
    outdir, paths = sys.argv[1], sys.argv[2:]
    for path in sorted(paths):
        msg = normalize(path)
        with open(os.path.join(outdir, os.path.basename(path)), "w", encoding="utf-8") as fh:
            json.dump(msg, fh, indent=1, ensure_ascii=False)
            fh.write("\n")


if __name__ == "__main__":
    main()
