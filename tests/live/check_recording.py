#!/usr/bin/env python3
"""Checks a capture made by `kwire record` against what kwire-loopgen says it sent.

usage: check_recording.py --kwire KWIRE --port KAFKA_PORT --manifest M.jsonl [--manifest ...]
                          [--absent-port PORT] [--exact-connections] CAPTURE [CAPTURE ...]

The manifests (written by kwire-loopgen, the independent side) list every request
and response by client port, direction, api key, api version and correlation id.
Several captures (rotated files) are checked one by one and then together, in the
order given (mergecap -a). Checks:
  - each file opens on its own in capinfos (packets > 0) and tshark (same count);
  - tshark's own Kafka dissector finds every manifest message exactly once, by
    ports and correlation id (a source that shares no code with kwire);
  - `kwire decode -T json` shows every manifest message exactly once, with its api
    key and version, and nothing else on the Kafka port;
  - `kwire decode --stats`: requests and responses as in the manifest (Produce
    with acks=0 has no response), unmatched=0, malformed=0;
  - --absent-port: no packet of that TCP port is in the capture;
  - --exact-connections: the capture holds the manifest's connections and no other.
Exits 1 with a list of what failed.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def run(cmd, allow_fail=False):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 and not allow_fail:
        sys.exit(f"check_recording: FAIL: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p


def load_manifest(paths):
    msgs = collections.Counter()
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.strip():
                    m = json.loads(line)
                    msgs[(m["client_port"], m["direction"], m["apiKey"], m["apiVersion"], m["correlationId"])] += 1
    return msgs


def capinfos_packets(path):
    p = run(["capinfos", "-c", "-M", path], allow_fail=True)
    m = re.search(r"Number of packets:\s*(\d+)", p.stdout)
    check(p.returncode == 0 and m is not None,
          f"{os.path.basename(path)}: capinfos reads it (exit {p.returncode}{', ' + p.stderr.strip() if p.stderr.strip() else ''})")
    return int(m.group(1)) if m else 0


def tshark_frames(path):
    p = run(["tshark", "-r", path, "-T", "fields", "-e", "frame.number"], allow_fail=True)
    check(p.returncode == 0, f"{os.path.basename(path)}: tshark reads it (exit {p.returncode})")
    return len(p.stdout.split())


def check_file(path):
    n = capinfos_packets(path)
    check(n > 0, f"{os.path.basename(path)}: {n} packets > 0")
    t = tshark_frames(path)
    check(t == n, f"{os.path.basename(path)}: tshark reads {t} frames, capinfos counts {n}")
    return n


def show(counter, limit=8):
    return ", ".join(f"{k}x{v}" if v != 1 else str(k) for k, v in list(counter.items())[:limit])


def compare(what, expected, seen):
    missing = expected - seen
    extra = seen - expected
    check(not missing, f"{what}: every manifest message present ({sum(expected.values())})"
          + (f"; missing {sum(missing.values())}: {show(missing)}" if missing else ""))
    check(not extra, f"{what}: no message twice or beyond the manifest"
          + (f"; extra {sum(extra.values())}: {show(extra)}" if extra else ""))


def tshark_kafka(path, port):
    """(client_port, direction, correlation id) of each Kafka PDU tshark finds."""
    p = run(["tshark", "-r", path, "-d", f"tcp.port=={port},kafka", "-T", "fields", "-E", "occurrence=a",
             "-E", "aggregator=,", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "kafka.correlation_id",
             "-Y", f"kafka && tcp.port=={port}"], allow_fail=True)
    check(p.returncode == 0, f"tshark dissects the Kafka port (exit {p.returncode})")
    seen = collections.Counter()
    for line in p.stdout.splitlines():
        src, dst, corrs = (line.split("\t") + ["", "", ""])[:3]
        if not corrs:
            continue
        direction, client = ("request", int(src)) if int(dst) == port else ("response", int(dst))
        for c in corrs.split(","):
            seen[(client, direction, int(c))] += 1
    return seen


def connections(path):
    p = run(["tshark", "-r", path, "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.dstport", "-Y", "tcp"])
    return {tuple(sorted(map(int, line.split("\t")))) for line in p.stdout.splitlines() if line.strip()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kwire", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--manifest", action="append", required=True)
    ap.add_argument("--absent-port", type=int)
    ap.add_argument("--exact-connections", action="store_true")
    ap.add_argument("captures", nargs="+")
    a = ap.parse_args()

    expected = load_manifest(a.manifest)
    check(len(expected) > 0, f"the manifests list {sum(expected.values())} messages")
    for path in a.captures:
        check_file(path)

    with tempfile.TemporaryDirectory() as tmp:
        cap = a.captures[0]
        if len(a.captures) > 1:
            cap = os.path.join(tmp, "merged.pcapng")
            run(["mergecap", "-a", "-w", cap, *a.captures])
            print(f"     {len(a.captures)} files concatenated with mergecap -a")

        by_corr = collections.Counter({(k[0], k[1], k[4]): v for k, v in expected.items()})
        compare("tshark's Kafka dissector", by_corr, tshark_kafka(cap, a.port))

        out = run([a.kwire, "decode", "-r", cap, "-p", str(a.port), "-T", "json"]).stdout
        seen = collections.Counter()
        for line in out.split("\n"):
            if not line:
                continue
            f = json.loads(line)
            if "direction" not in f:
                continue  # not a frame (a {"stats": ...} line)
            ends = (f["src"].rsplit(":", 1)[1], f["dst"].rsplit(":", 1)[1])
            client = int(ends[0] if f["direction"] == "request" else ends[1])
            seen[(client, f["direction"], f["apiKey"], f["apiVersion"], f["correlationId"])] += 1
        compare("kwire decode -T json", expected, seen)

        stats = run([a.kwire, "decode", "-r", cap, "-p", str(a.port), "--stats", "-c", "0"]).stdout
        m = re.search(r"^stats: frames=(\d+) requests=(\d+) responses=(\d+) unmatched=(\d+) malformed=(\d+)", stats, re.M)
        if check(m is not None, "kwire decode --stats prints a stats line"):
            frames, req, resp, unmatched, malformed = map(int, m.groups())
            want_req = sum(v for k, v in expected.items() if k[1] == "request")
            want_resp = sum(v for k, v in expected.items() if k[1] == "response")  # acks=0 produce: none
            check(req == want_req and resp == want_resp,
                  f"stats: requests={req} responses={resp}, manifest {want_req} and {want_resp}")
            check(unmatched == 0 and malformed == 0, f"stats: unmatched={unmatched} malformed={malformed} are 0")

        if a.absent_port:
            p = run(["tshark", "-r", cap, "-Y", f"tcp.port=={a.absent_port}"])
            n = len(p.stdout.splitlines())
            check(n == 0, f"no packet of tcp port {a.absent_port} in the capture (found {n})")
        if a.exact_connections:
            want = {tuple(sorted((k[0], a.port))) for k in expected}
            have = connections(cap)
            check(have == want, f"the capture holds exactly the {len(want)} Kafka connections"
                  + (f"; also {sorted(have - want)}" if have - want else "")
                  + (f"; missing {sorted(want - have)}" if want - have else ""))

    if failures:
        print(f"check_recording: {len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
