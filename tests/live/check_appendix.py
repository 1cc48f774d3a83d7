#!/usr/bin/env python3
"""Checks a fresh capture of the appendix scenario, decoded by the kwire under test.

usage: check_appendix.py KWIRE CAPTURE

Asserts: the --stats line has unmatched=0 malformed=0; StreamsGroupHeartbeat and
StreamsGroupTopologyDescriptionUpdate requests and responses are present; every
heartbeat is for group orders-app; the member's epoch rises (0 to join, then at least
two positive epochs in increasing order, -1 to leave); the pushed topology description
and the live StreamsGroupDescribe carry the appendix topology's node names and
successors (orders -> SOURCE -> FILTER -> SINK -> valid-orders).
"""
import json
import re
import subprocess
import sys

GROUP = "orders-app"
SOURCE, FILTER, SINK = "KSTREAM-SOURCE-0000000000", "KSTREAM-FILTER-0000000001", "KSTREAM-SINK-0000000002"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
    return cond


def run(kwire, *args):
    p = subprocess.run([kwire, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"check_appendix: {kwire} {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def check_appendix_nodes(nodes, where):
    by_name = {n["name"]: n for n in nodes}
    check(set(by_name) == {SOURCE, FILTER, SINK}, f"{where}: nodes are {sorted(by_name)}")
    if set(by_name) != {SOURCE, FILTER, SINK}:
        return
    check(by_name[SOURCE]["sourceTopics"] == ["orders"] and by_name[SOURCE]["successors"] == [FILTER],
          f"{where}: {SOURCE} reads orders, successor {FILTER}")
    check(by_name[FILTER]["successors"] == [SINK], f"{where}: {FILTER} successor {SINK}")
    check(by_name[SINK]["sinkTopic"] == "valid-orders" and by_name[SINK]["successors"] == [],
          f"{where}: {SINK} writes valid-orders, no successors")


def main():
    kwire, capture = sys.argv[1], sys.argv[2]
    table = run(kwire, "decode", "-r", capture, "--stats", "--api-table", "-c", "0")
    print(table, end="")
    m = re.search(r"^stats: frames=(\d+) requests=(\d+) responses=(\d+) unmatched=(\d+) malformed=(\d+)\b", table, re.M)
    if not check(m is not None, "a --stats line"):
        return
    frames, requests, responses, unmatched, malformed = map(int, m.groups())
    check(requests > 0 and requests == responses, f"requests={requests} == responses={responses} > 0")
    check(unmatched == 0, f"unmatched={unmatched} is 0")
    check(malformed == 0, f"malformed={malformed} is 0")

    msgs = [json.loads(line) for line in run(kwire, "decode", "-r", capture, "-T", "json").splitlines() if line]
    def of(key, direction):
        return [x for x in msgs if x["apiKey"] == key and x["direction"] == direction]

    hb_req, hb_resp = of(88, "request"), of(88, "response")
    check(len(hb_req) >= 3 and len(hb_resp) >= 3, f"StreamsGroupHeartbeat: {len(hb_req)} requests, {len(hb_resp)} responses")
    check(all(x["apiVersion"] == 1 for x in hb_req + hb_resp), "StreamsGroupHeartbeat at v1")
    check(all(x["body"]["groupId"] == GROUP for x in hb_req), f"every heartbeat is for group {GROUP}")

    req_epochs = [x["body"]["memberEpoch"] for x in hb_req]
    check(req_epochs[:1] == [0], f"first heartbeat joins with epoch 0 (requests: {req_epochs})")
    check(req_epochs[-1:] == [-1], "last heartbeat leaves with epoch -1")
    granted = [x["body"]["memberEpoch"] for x in hb_resp if x["body"]["errorCode"] == 0 and x["body"]["memberEpoch"] > 0]
    check(granted == sorted(granted) and len(set(granted)) >= 2,
          f"member epochs granted by the broker rise: {granted}")
    check(any(x["body"].get("topologyDescriptionRequired") for x in hb_resp),
          "a heartbeat response asks for the topology description")

    up_req, up_resp = of(93, "request"), of(93, "response")
    check(len(up_req) >= 1 and len(up_resp) >= 1, f"StreamsGroupTopologyDescriptionUpdate: {len(up_req)} requests, {len(up_resp)} responses")
    if up_req:
        body = up_req[0]["body"]
        check(body["groupId"] == GROUP and body["topologyEpoch"] == 0, "the push is for orders-app, topology epoch 0")
        subs = body["topologyDescription"]["subtopologies"]
        check(len(subs) == 1 and subs[0]["subtopologyId"] == "0", "one sub-topology, id 0")
        if subs:
            check_appendix_nodes(subs[0]["nodes"], "pushed description")
    if up_resp:
        check(up_resp[0]["body"]["errorCode"] == 0, "the push is accepted (error NONE)")

    described = [g for x in of(89, "response") for g in x["body"]["groups"]
                 if g["groupId"] == GROUP and g.get("topologyDescription")]
    if check(described, "a StreamsGroupDescribe response carries the stored topology description"):
        g = described[0]
        check(g["topologyDescriptionStatus"] == 3, "its TopologyDescriptionStatus is AVAILABLE (3)")
        check(g["assignorName"] == "sticky", "its AssignorName is sticky")
        check_appendix_nodes(g["topologyDescription"]["subtopologies"][0]["nodes"], "described topology")

    if failures:
        sys.exit(f"check_appendix: {len(failures)} check(s) failed")
    print("check_appendix: PASS")


if __name__ == "__main__":
    main()
