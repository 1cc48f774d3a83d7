#!/usr/bin/env python3
"""kwire inside Wireshark, checked against a real tshark.

  kwire_ws_test.py TEST --source DIR --kwire BIN --plugin SO [--lua LUA]

TEST is one of: fields, captures, tls, filters, malformed, coexist, lua, lua_tls, overlay.
"""
import argparse
import glob
import json
import os
import re
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from compare import Comparison  # noqa: E402
from spec_paths import EXPERT_FIELDS, GENERIC_FIELDS, spec_paths  # noqa: E402
from tshark_env import Failure, Tshark, kwire_json, main, need  # noqa: E402
import ws_tree  # noqa: E402

args = None


def decode_json(capture, extra=()):
    import subprocess
    p = subprocess.run([args.kwire, "decode", "-r", capture, "-T", "json"] + list(extra), capture_output=True,
                       text=True)
    need(p.returncode == 0, f"kwire decode -r {capture} exited {p.returncode}: {p.stderr}")
    return [json.loads(line, parse_float=Decimal) for line in p.stdout.splitlines() if line.strip()]


def self_check(kw, pdus):
    """The comparison must notice a changed value, a changed string and a
    missing field: guards against a comparison that compares nothing."""
    for i, k in enumerate(kw):
        body = k.get("body")
        if not isinstance(body, dict):
            continue
        for key, v in body.items():
            mutations = []
            if isinstance(v, int) and not isinstance(v, bool):
                mutations.append(v + 1)
            elif isinstance(v, str):
                mutations.append(v + "x")
            for m in mutations + ["<dropped>"]:
                changed = json.loads(json.dumps(k, default=str), parse_float=Decimal)
                if m == "<dropped>":
                    del changed["body"][key]
                else:
                    changed["body"][key] = m
                c = Comparison()
                c.message("self-check", changed, pdus[i])
                need(c.mismatches, f"the comparison did not notice body.{key} changed to {m!r}")
            return


def compare_capture(ts, capture, cmp, label, kwire_extra=(), tshark_extra=()):
    kw = decode_json(capture, kwire_extra)
    pdus = ws_tree.pdus(ts.json(capture, tshark_extra))
    name = os.path.basename(capture)
    need(len(kw) > 0, f"{name}: kwire decode found no Kafka messages")
    if len(kw) != len(pdus):
        raise Failure(f"{name}: kwire decode has {len(kw)} messages, tshark with the {label} {len(pdus)}")
    # In frame order: where a connection was open before the capture began,
    # kwire decode hunts for the first message start and prints a message
    # once it is sure of it, which can be after later frames of other
    # connections; Wireshark shows each message in its frame.
    kw = sorted(kw, key=lambda m: m["frame"])
    pdus = sorted(pdus, key=lambda t: t["frame"])
    before = len(cmp.mismatches)
    for i, (k, t) in enumerate(zip(kw, pdus)):
        cmp.message(f"{name} message {i + 1} (frame {t['frame']})", k, t)
    self_check(kw, pdus)
    print(f"{name}: {len(kw)} messages, {len(cmp.mismatches) - before} mismatches")
    return len(kw)


def captures_test(label="plugin", **kw):
    def test():
        ts = Tshark(**kw)
        try:
            caps = sorted(glob.glob(os.path.join(args.source, "captures", "*.pcapng")))
            need(caps, "no captures in captures/")
            # And every kind of payload inside a payload, decoded or not.
            nested = os.path.join(ts.dir, "nested.pcap")
            nested_capture(nested)
            caps.append(nested)
            cmp = Comparison()
            n = sum(compare_capture(ts, c, cmp, label) for c in caps)
            print(f"wireshark {label}: captures={len(caps)} messages={n} fields={cmp.fields} "
                  f"nested-payloads={cmp.nested_payloads} mismatches={len(cmp.mismatches)}")
            if cmp.mismatches:
                raise Failure("\n".join(cmp.mismatches[:40]))
        finally:
            ts.cleanup()
    return test


def tls_test(label="plugin", **kw):
    """Kafka inside TLS: the real TLS captures (captures/tls/) with their key
    logs, decrypted by Wireshark's own TLS dissector and handed to kwire on the
    TLS port of the preference kwire.tls.port, through the heuristic on TLS
    with no port given, and from the capture's secrets blocks with no option:
    field for field what `kwire decode --tls-keylog` decodes."""
    def test():
        import subprocess
        ts = Tshark(**kw)
        try:
            capdir = os.path.join(args.source, "captures", "tls")
            names = sorted(f[:-5] for f in os.listdir(capdir) if f.endswith(".keys"))
            need(len(names) >= 3, f"captures/tls holds {len(names)} captures with key logs")
            cmp = Comparison()
            n = 0
            for name in names:
                cap, keys = os.path.join(capdir, name + ".pcapng"), os.path.join(capdir, name + ".keys")
                ports = sorted({int(p) for p in subprocess.run(
                    ["tshark", "-n", "-r", cap, "-Y", "tls.handshake.type == 1", "-T", "fields", "-e", "tcp.dstport"],
                    capture_output=True, text=True).stdout.split()})
                # TLS itself on those ports: tshark's heuristics would take a connection whose
                # client port another protocol registered for that protocol (34980, EtherCAT,
                # in python-tls13.pcapng).
                tls = [a for p in ports for a in ("-d", f"tcp.port=={p},tls")]
                keylog = tls + ["-o", f"tls.keylog_file:{ts.file(keys)}"]
                port = ["-o", "kwire.tls.port:" + ",".join(map(str, ports))]
                n += compare_capture(ts, cap, cmp, label + " on the TLS port", ["--tls-keylog", keys], keylog + port)
                compare_capture(ts, cap, cmp, label + " by its TLS heuristic", ["--tls-keylog", keys], keylog)
                compare_capture(ts, os.path.join(capdir, name + "-secrets.pcapng"), cmp, label + " with secrets blocks",
                                (), tls + port)
            print(f"wireshark {label} over TLS: captures={len(names)} messages={n} fields={cmp.fields} "
                  f"mismatches={len(cmp.mismatches)}")
            if cmp.mismatches:
                raise Failure("\n".join(cmp.mismatches[:40]))
        finally:
            ts.cleanup()
    return test


def fields_test(**kw):
    """tshark -G plugins lists the plugin; tshark -G fields lists one kwire
    field per spec field path, and nothing else but the generic fields."""
    def test():
        ts = Tshark(**kw)
        try:
            if kw.get("plugin"):
                plugins = ts.run(["-G", "plugins"]).stdout.decode()
                need(any(line.split("\t")[0].strip() == "kwire.so" and "dissector" in line
                         for line in plugins.splitlines()), f"tshark -G plugins does not list kwire.so:\n{plugins}")
            out = ts.run(["-G", "fields"]).stdout.decode()
            registered = [line.split("\t")[2] for line in out.splitlines()
                          if line.startswith("F\t") and line.split("\t")[4] == "kwire"]
            need(registered, "tshark -G fields lists no kwire field: the dissector did not load")
            dup = sorted({a for a in registered if registered.count(a) > 1})
            need(not dup, f"fields registered more than once: {dup[:20]}")
            expected = spec_paths(args.source)
            got = set(registered) - GENERIC_FIELDS - EXPERT_FIELDS
            missing, extra = sorted(expected - got), sorted(got - expected)
            need(not missing, f"{len(missing)} spec field paths have no field: {missing[:30]}")
            need(not extra, f"{len(extra)} fields are no spec field path: {extra[:30]}")
            need(GENERIC_FIELDS <= set(registered), f"generic fields missing: {sorted(GENERIC_FIELDS - set(registered))}")
            for probe in ("kwire.streams_group_heartbeat_response.member_epoch",
                          "kwire.streams_group_describe_response.groups.topology_description_status",
                          "kwire.streams_group_topology_description_update_request.topology_description.subtopologies.nodes.node_type"):
                need(probe in registered, f"{probe} is not registered")
            print(f"wireshark fields: {len(registered)} kwire fields, {len(expected)} spec field paths, all present once")
        finally:
            ts.cleanup()
    return test


def usec(t):
    """A timestamp to whole microseconds: kwire prints microseconds. tshark's
    frame.time_epoch may be seconds or an ISO date (ws_tree.epoch_seconds)."""
    return int(ws_tree.epoch_seconds(t) * 1000000)


def error_codes(v):
    """Every error code anywhere in a decoded body: the int16 fields whose spec
    name ends in ErrorCode (Kafka's naming: ErrorCode, TopLevelErrorCode, ...)."""
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            if k.lower().endswith("errorcode") and isinstance(x, int) and not isinstance(x, bool):
                out.append(x)
            else:
                out += error_codes(x)
    elif isinstance(v, list):
        for x in v:
            out += error_codes(x)
    return out


def filtered_packets(ts, capture, dfilter):
    out = ts.run(["-r", ts.file(capture), "-Y", dfilter, "-T", "fields", "-e", "frame.time_epoch"]).stdout.decode()
    return {usec(line) for line in out.split()}


def filters_test(**kw):
    """Display filters select exactly the packets that kwire decode's messages
    say they should (a filter matches a packet, which may carry several
    messages)."""
    def test():
        ts = Tshark(**kw)
        try:
            checked = 0
            for cap in sorted(glob.glob(os.path.join(args.source, "captures", "*.pcapng"))):
                name = os.path.basename(cap)
                msgs = decode_json(cap)
                packets = {}
                for m in msgs:
                    packets.setdefault(usec(m["time"]), []).append(m)
                # kwire.api_key == 88 && kwire.streams_group_heartbeat_response.member_epoch > 0
                want = {t for t, ms in packets.items()
                        if any(m["apiKey"] == 88 for m in ms)
                        and any(m["apiKey"] == 88 and m["direction"] == "response" and isinstance(m.get("body"), dict)
                                and m["body"].get("memberEpoch", 0) > 0 for m in ms)}
                got = filtered_packets(ts, cap, "kwire.api_key == 88 && "
                                                "kwire.streams_group_heartbeat_response.member_epoch > 0")
                need(got == want, f"{name}: member_epoch filter: tshark selects {len(got)} packets, kwire decode "
                                  f"{len(want)}; only tshark: {sorted(got - want)[:5]}, only kwire: {sorted(want - got)[:5]}")
                if name == "demo.pcapng":
                    need(want, "demo.pcapng: no heartbeat response hands out an epoch > 0")
                # kwire.error_code != 0: every error code of a packet is non-zero.
                def codes(m):
                    c = error_codes(m.get("body"))
                    nz = [x for x in c if x != 0]
                    return nz if nz else ([0] if c else [])
                want_err = {t for t, ms in packets.items()
                            if any(codes(m) for m in ms) and all(x != 0 for m in ms for x in codes(m))}
                failed = {t for t, ms in packets.items() if any(x != 0 for m in ms for x in error_codes(m.get("body")))}
                got_err = filtered_packets(ts, cap, "kwire.error_code != 0")
                need(got_err == want_err, f"{name}: kwire.error_code != 0 selects {len(got_err)} packets, expected "
                                          f"{len(want_err)}")
                if name in ("admin.pcapng", "plugin-failures.pcapng", "topology-upgrade.pcapng"):
                    need(failed, f"{name}: a failure scenario without a single error")
                    need(got_err == failed, f"{name}: kwire.error_code != 0 selects {len(got_err)} packets, the "
                                            f"packets with a failed message are {len(failed)}")
                print(f"{name}: member_epoch filter {len(got)} packets, kwire.error_code != 0 {len(got_err)} "
                      f"packets, as kwire decode")
                checked += 1
            print(f"wireshark filters: {checked} captures, all selections equal")
        finally:
            ts.cleanup()
    return test


def malformed_capture(path):
    """One connection with a malformed request of each kind between good
    ones, a second one that loses sync on a bad size prefix."""
    from kafka_pcap import Pcap, api_versions_v0_response, i16, i32, request, response
    pcap = Pcap()
    keys = [(18, 0, 3), (3, 0, 12)]
    pcap.connection(50001, 40001, [
        (True, request(18, 0, 1, b"")),                                   # ApiVersions v0
        (False, api_versions_v0_response(1, keys)),
        (True, request(3, 1, 2, i32(1000))),                              # Metadata v1: 1000 topics, none there
        (False, response(2, b"\x00\x00")),                                  # its response, cut short
        (True, request(10, 0, 3, i16(-5))),                               # FindCoordinator v0: key length -5
        (True, request(18, 3, 4, b"\x80\x80\x80\x80\x80\x01", flexible=True)),  # overlong varint
        (True, request(999, 0, 5, b"")),                                  # unknown api key
        (True, request(18, 0, 6, b"\x01\x02\x03")),                        # trailing bytes
        (True, request(18, 0, 7, b"")),                                   # good again
        (False, api_versions_v0_response(7, keys)),
    ])
    pcap.connection(50002, 40001, [
        (True, request(18, 0, 1, b"")),
        (False, api_versions_v0_response(1, keys)),
        (True, b"\xff\xff\xff\xfe" + b"not kafka at all"),                 # size prefix -2
    ])
    pcap.write(path)


def nested_capture(path):
    """Bytes fields that carry payloads: JoinGroup v0-v9 with protocol type
    "consumer" and another, SyncGroup before v5 whose group's protocol type a
    JoinGroup on another connection told, SyncGroup v5, consumer protocol
    versions newer than known (trailing bytes), Envelope requests and
    responses (an enveloped JoinGroup, an enveloped Envelope, error codes
    inside), and payloads that do not decode, before other errors."""
    from kafka_pcap import Pcap, i16, i32, request, response, string

    def uv(n):
        out = b""
        while n >= 0x80:
            out += bytes([(n & 0x7F) | 0x80])
            n >>= 7
        return out + bytes([n])

    def s(x, flex):
        if flex:
            return uv(0) if x is None else uv(len(x.encode()) + 1) + x.encode()
        return string(x)

    def b(x, flex):
        if flex:
            return uv(0) if x is None else uv(len(x) + 1) + x
        return i32(-1) if x is None else i32(len(x)) + x

    def arr(items, flex):
        return (uv(len(items) + 1) if flex else i32(len(items))) + b"".join(items)

    def tags(flex):
        return b"\x00" if flex else b""

    def partitions(parts):
        return arr([string(t) + arr([i32(p) for p in ps], False) for t, ps in parts], False)

    def subscription(version, topics, owned=(), user=None, extra=b""):
        # Versions past 3 carry the v3 fields, then more.
        out = i16(version) + arr([string(t) for t in topics], False) + b(user, False)
        if version >= 1:
            out += partitions(owned)
        if version >= 2:
            out += i32(7)
        if version >= 3:
            out += string(None if version == 3 else "rack-a")
        return out + extra

    def assignment(version, parts, user=None, extra=b""):
        return i16(version) + partitions(parts) + b(user, False) + extra

    def join_request(v, group, ptype, protocols):
        f = v >= 6
        body = s(group, f) + i32(10000) + (i32(30000) if v >= 1 else b"") + s("", f)
        body += s(None, f) if v >= 5 else b""
        body += s(ptype, f) + arr([s(n, f) + b(m, f) + tags(f) for n, m in protocols], f)
        body += s("rejoin", f) if v >= 8 else b""
        return request(11, v, 100 + v, body + tags(f), flexible=f)

    def join_response(v, corr, ptype, members):
        f = v >= 6
        body = (i32(0) if v >= 2 else b"") + i16(0) + i32(1)
        body += s(ptype, f) if v >= 7 else b""
        body += s("range", f) + s("m-1", f) + (b"\x00" if v >= 9 else b"") + s("m-1", f)
        body += arr([s(m, f) + (s(None, f) if v >= 5 else b"") + b(x, f) + tags(f) for m, x in members], f)
        return response(corr, body + tags(f), flexible=f)

    def sync_request(v, corr, group, assignments, ptype=None):
        f = v >= 4
        body = s(group, f) + i32(1) + s("m-1", f) + (s(None, f) if v >= 3 else b"")
        body += s(ptype, f) + s("range", f) if v >= 5 else b""
        body += arr([s(m, f) + b(a, f) + tags(f) for m, a in assignments], f)
        return request(14, v, corr, body + tags(f), flexible=f)

    def sync_response(v, corr, x, ptype=None):
        f = v >= 4
        body = (i32(0) if v >= 1 else b"") + i16(0)
        body += s(ptype, f) + s("range", f) if v >= 5 else b""
        return response(corr, body + b(x, f) + tags(f), flexible=f)

    def principal(version, extra=b""):
        return i16(version) + s("User", True) + s("alice", True) + b"\x00" + b"\x00" + extra

    def envelope_request(corr, data, who):
        return request(58, 0, corr, b(data, True) + b(who, True) + b(b"\x7f\x00\x00\x01", True) + b"\x00",
                       flexible=True)

    def envelope_response(corr, data, error=0):
        return response(corr, b(data, True) + i16(error) + b"\x00", flexible=True)

    def create_topics_request(corr):
        topic = s("orders", True) + i32(3) + i16(1) + arr([], True) + arr([], True) + b"\x00"
        return request(19, 7, corr, arr([topic], True) + i32(5000) + b"\x00" + b"\x00", flexible=True)[4:]

    def create_topics_response(corr, error):
        topic = (s("orders", True) + bytes(range(16)) + i16(error) + s(None, True) + i32(3) + i16(1) +
                 arr([], True) + b"\x00")
        return response(corr, i32(0) + arr([topic], True) + b"\x00", flexible=True)[4:]

    sub, sub3 = subscription(1, ["orders"], [("orders", [0, 1])]), subscription(3, ["orders", "payments"])
    pcap = Pcap()
    # Every JoinGroup version, consumer groups, then another protocol type.
    ex = [(True, request(18, 0, 1, b""))]
    for v in range(10):
        meta = subscription(min(v, 3), ["t%d" % v], [("t%d" % v, [v])])
        ex.append((True, join_request(v, "g%d" % v, "consumer", [("range", meta), ("sticky", sub3)])))
        ex.append((False, join_response(v, 100 + v, "consumer", [("m-1", meta), ("m-2", sub)])))
    ex.append((True, join_request(5, "connect-g", "connect", [("default", sub)])))
    ex.append((False, join_response(5, 105, None, [("m-1", sub)])))
    ex.append((True, join_request(9, "connect-h", "connect", [("default", sub)])))
    ex.append((False, join_response(9, 109, "consumer", [("m-1", sub)])))    # its own ProtocolType says
    ex.append((True, join_request(7, "g7", "consumer", [("range", sub)])))
    ex.append((False, join_response(7, 107, None, [("m-1", sub)])))          # null: the request's
    pcap.connection(50010, 40010, ex)
    # SyncGroup before v5 on other connections: consumer group g3, connect-g, unknown.
    pcap.connection(50011, 40010, [
        (True, request(18, 0, 1, b"")),
        (True, sync_request(3, 201, "g3", [("m-1", assignment(0, [("t3", [0, 1])])), ("m-2", assignment(1, []))])),
        (False, sync_response(3, 201, assignment(0, [("t3", [0, 1])], user=b"\x01\x02"))),
        (True, sync_request(0, 202, "g0", [("m-1", assignment(2, [("t0", [0])]))])),
        (False, sync_response(0, 202, assignment(2, [("t0", [0])]))),
        (True, sync_request(4, 203, "connect-g", [("m-1", assignment(0, [("t", [0])]))])),
        (False, sync_response(4, 203, assignment(0, [("t", [0])]))),
        (True, sync_request(3, 204, "never-joined", [("m-1", assignment(0, [("t", [0])]))])),
        (False, sync_response(3, 204, assignment(0, [("t", [0])]))),
        # v5 names its protocol type; null: none; the response's null: the request's.
        (True, sync_request(5, 205, "g9", [("m-1", assignment(3, [("t9", [9])]))], "consumer")),
        (False, sync_response(5, 205, assignment(3, [("t9", [9])]), None)),
        (True, sync_request(5, 206, "g9", [("m-1", assignment(0, [("t9", [9])]))], None)),
        (False, sync_response(5, 206, assignment(0, [("t9", [9])]), "consumer")),
        (True, sync_request(5, 207, "g9", [("m-1", assignment(0, []))], "connect")),
        (False, sync_response(5, 207, assignment(0, []), "connect")),
    ])
    # Newer versions than known, trailing bytes, and payloads that do not decode.
    newer = subscription(7, ["orders"], [("orders", [0])], extra=b"\x00\x01future")
    pcap.connection(50012, 40010, [
        (True, request(18, 0, 1, b"")),
        (True, join_request(9, "g-new", "consumer", [("range", newer), ("roundrobin", sub + b"\xff\xfe")])),
        (False, join_response(9, 109, "consumer", [("m-1", newer)])),
        (True, sync_request(5, 301, "g-new", [("m-1", assignment(9, [("orders", [0])], extra=b"\x00\x00"))],
                            "consumer")),
        (False, sync_response(5, 301, assignment(4, [("orders", [0])]), "consumer")),
        (True, join_request(6, "g-bad", "consumer", [("range", i16(-1) + sub[2:]), ("cut", sub[:9]),
                                                     ("empty", b""), ("one", b"\x00"), ("ok", sub)])),
        (False, join_response(6, 106, "consumer", [("m-1", sub[:5]), ("m-2", sub)])),
    ])
    # DescribeGroups: each group's own protocol type; a group that is not
    # Stable has empty metadata and assignments.
    def describe_response(v, corr, groups):
        f = v >= 5
        out = []
        for error, group, state, ptype, members in groups:
            g = i16(error) + s(group, f) + s(state, f) + s(ptype, f) + s("range", f)
            g += arr([s(m, f) + (s(None, f) if v >= 4 else b"") + s("client", f) + s("/10.0.0.2", f) + b(meta, f) +
                      b(a, f) + tags(f) for m, meta, a in members], f)
            out.append(g + (i32(-2147483648) if v >= 3 else b"") + tags(f))
        return response(corr, (i32(0) if v >= 1 else b"") + arr(out, f) + tags(f), flexible=f)

    a0 = assignment(0, [("orders", [0, 1])])
    pcap.connection(50014, 40010, [
        (True, request(18, 0, 1, b"")),
        (True, request(15, 5, 501, arr([s(g, True) for g in ("g1", "c", "e", "bad")], True) + b"\x01\x00",
                       flexible=True)),
        (False, describe_response(5, 501, [
            (0, "g1", "Stable", "consumer", [("m-1", sub, a0), ("m-2", sub3, assignment(1, []))]),
            (0, "c", "Stable", "connect", [("m-1", sub, a0)]),
            (0, "e", "PreparingRebalance", "consumer", [("m-1", b"", b""), ("m-2", sub, b"")]),
            (16, "bad", "Stable", "consumer", [("m-1", i16(-1) + sub[2:], a0[:3])]),
        ])),
        (True, request(15, 0, 502, arr([string("g1")], False))),
        (False, describe_response(0, 502, [(0, "g1", "Stable", "consumer", [("m-1", sub, a0)])])),
    ])
    # A payload that fails, then the message itself: the payload's error comes first.
    bad_then_trailing = join_request(1, "g-bad", "consumer", [("range", i16(-3) + sub[2:])])
    bad_then_trailing = i32(len(bad_then_trailing) - 4 + 2) + bad_then_trailing[4:] + b"\x00\x00"
    # Envelopes: an enveloped request and its response, its principal, an
    # enveloped JoinGroup with its metadata, an enveloped Envelope, failures.
    joined6 = join_request(6, "env-g", "consumer", [("range", sub)])[4:]
    joined7 = join_request(7, "env-g", "consumer", [("range", sub)])[4:]
    inner_env = envelope_request(9, joined7, principal(0))[4:]
    pcap.connection(50013, 40010, [
        (True, request(18, 0, 1, b"")),
        (True, bad_then_trailing),
        (True, envelope_request(401, create_topics_request(11), principal(0))),
        (False, envelope_response(401, create_topics_response(11, 36))),
        (True, envelope_request(402, joined7, principal(0, extra=b"\x09"))),
        (False, envelope_response(402, join_response(7, 106, "consumer", [("m-1", sub)])[4:])),
        (True, envelope_request(403, inner_env, None)),
        (False, envelope_response(403, envelope_response(9, create_topics_response(10, 0))[4:], 0)),
        (True, envelope_request(404, create_topics_request(12)[:-3], principal(1))),
        (False, envelope_response(404, create_topics_response(12, 0)[:-2], 41)),
        (True, envelope_request(405, b"\x00\x13", principal(0)[:3])),
        (False, envelope_response(405, None, 41)),
        (True, envelope_request(406, request(999, 0, 13, b"", flexible=True)[4:], principal(0))),
        (False, envelope_response(406, b"\x00\x00\x00\x0d\x00")),
        (True, envelope_request(407, joined6, principal(0))),
        (False, envelope_response(407, join_response(6, 106, None, [("m-1", sub)])[4:])),
    ])
    pcap.write(path)


def truncated_capture(path):
    """A packet cut by the snap length, then a message the capture ends in."""
    from kafka_pcap import Pcap, api_versions_v0_response, request
    pcap = Pcap()
    keys = [(18, 0, 3)]
    big = request(18, 3, 2, b"\x0bkwire-test\x061.0.0\x00", flexible=True)
    pcap.connection(50003, 40002, [
        (True, request(18, 0, 1, b"")),
        (False, api_versions_v0_response(1, keys)),
        (True, big, 12),                                                  # only 12 bytes captured
        (True, request(18, 0, 3, b"")),
        (True, request(18, 0, 4, b"")[:9]),                               # the capture ends inside it
    ])
    pcap.write(path)


def random_capture(path, seed=9, messages=400):
    """Requests of random api keys and versions with random bodies, and
    responses of random bytes to them, on a few connections: what decodes,
    what does not, and no crash either way."""
    import random
    from kafka_pcap import Pcap, request, response
    rnd = random.Random(seed)
    # Bytes below 0xc0 only: no UTF-8 lead bytes, so every string is plain
    # ASCII or invalid byte by byte. kwire decode's JSON lets some invalid
    # multi-byte sequences (overlong, past U+10FFFF) through unreplaced, which
    # the plugin replaces; that difference is kwire decode's, not compared here.
    def body(n):
        return bytes(rnd.randrange(0xc0) for _ in range(n))
    pcap = Pcap()
    for conn in range(4):
        ex = [(True, request(18, 0, 0, b""))]   # recognisable first request
        for i in range(1, messages // 4):
            req = body(rnd.choice((0, 1, 4, 16, 64, 200)))
            api, version = rnd.randrange(0, 94), rnd.randrange(0, 14)
            ex.append((True, request(api, version, i, req, flexible=rnd.random() < 0.5)))
            ex.append((False, response(i, body(rnd.choice((0, 2, 8, 40))))))
        pcap.connection(51000 + conn, 41000 + conn, ex)
    pcap.write(path)


def malformed_test(**kw):
    """Malformed and truncated messages: expert info, no crash, the next
    message still decodes, and the same fields and errors as kwire decode."""
    def test():
        ts = Tshark(**kw)
        try:
            path = os.path.join(ts.dir, "malformed.pcap")
            malformed_capture(path)
            decoded = decode_json(path)
            # kwire decode reports the bad size prefix's bytes as skipped (it
            # hunts for the next message start and finds none); the plugin
            # shows them as one malformed PDU. Everything else is messages.
            kwm = [m for m in decoded if "skipped" not in m]
            skips = [m["skipped"] for m in decoded if "skipped" in m]
            need(len(skips) == 1 and skips[0]["reason"].startswith("size prefix -2 is not a plausible"),
                 f"malformed.pcap: kwire decode should report the bytes after the bad size prefix as skipped: {skips}")
            all_pdus = ws_tree.pdus(ts.json(path))
            bad_prefix = [t for t in all_pdus
                          if any("size prefix -2 is not a plausible" in m for _, m in t["expert"])]
            need(len(bad_prefix) == 1, f"tshark should mark the bad size prefix once: {[t['expert'] for t in all_pdus]}")
            pdus = [t for t in all_pdus if t is not bad_prefix[0]]
            need(len(kwm) == len(pdus), f"malformed.pcap: kwire decode has {len(kwm)} messages, tshark {len(pdus)}")
            cmp = Comparison()
            for i, (k, t) in enumerate(zip(kwm, pdus)):
                cmp.message(f"malformed.pcap message {i + 1} (frame {t['frame']})", k, t)
            need(not cmp.mismatches, "\n".join(cmp.mismatches[:20]))
            malformed = [t for t in all_pdus if any(k == "kwire.malformed" for k, _ in t["expert"])]
            need(len(malformed) == 7, f"expected 7 malformed messages (6 on the first connection, the bad size "
                                      f"prefix on the second), tshark marks {len(malformed)}")
            last = [t for t in pdus if t["generic"].get("kwire.correlation_id") == "7"]
            need(len(last) == 2 and all(not t["expert"] for t in last),
                 f"the good request and response after the malformed ones do not decode cleanly: {last}")
            need(last[1]["body"]["apikeys"][0]["apikey"] == "18", f"ApiVersions response 7: {last[1]['body']}")
            for t in malformed:
                print(f"  frame {t['frame']}: {[m for k, m in t['expert'] if k == 'kwire.malformed'][0]}")

            # Random requests and responses: the same messages, fields and
            # errors as kwire decode, and tshark (and its -V) survives them.
            path = os.path.join(ts.dir, "random.pcap")
            random_capture(path)
            kwr = decode_json(path)
            pdus = ws_tree.pdus(ts.json(path))
            need(len(kwr) == len(pdus), f"random.pcap: kwire decode has {len(kwr)} messages, tshark {len(pdus)}")
            cmp = Comparison()
            for i, (k, t) in enumerate(zip(kwr, pdus)):
                cmp.message(f"random.pcap message {i + 1} (frame {t['frame']})", k, t)
            need(not cmp.mismatches, "\n".join(cmp.mismatches[:20]))
            bad = sum(1 for k in kwr if "error" in k)
            need(0 < bad < len(kwr), f"random.pcap: expected both clean and malformed messages, {bad} of {len(kwr)}")
            ts.run(["-r", ts.file(path), "-V"])
            print(f"random.pcap: {len(kwr)} messages ({bad} malformed), as kwire decode")

            path = os.path.join(ts.dir, "truncated.pcap")
            truncated_capture(path)
            p = ts.run(["-r", ts.file(path), "-V"], check=False)
            need(p.returncode == 0, f"tshark failed on truncated.pcap: {p.stderr.decode(errors='replace')}")
            pdus = ws_tree.pdus(ts.json(path))
            corrs = [(t["generic"].get("kwire.correlation_id"), bool(t["expert"])) for t in pdus]
            need(("1", False) in corrs, f"truncated.pcap: the first request does not decode: {corrs}")
            cut = [t for t in pdus if any(k == "kwire.malformed" for k, _ in t["expert"])]
            need(len(cut) == 1 and "size prefix 39" in cut[0]["expert"][0][1],
                 f"truncated.pcap: the request cut by the snap length (39 bytes, 8 captured) is not the one "
                 f"malformed message: {[t['expert'] for t in pdus]}")
            need(corrs.index(("3", False)) > pdus.index(cut[0]),
                 f"truncated.pcap: the request after the cut one does not decode: {corrs}")
            print(f"wireshark malformed: {len(malformed)} malformed messages marked, the next ones decode; "
                  f"truncated capture: {corrs}")
        finally:
            ts.cleanup()
    return test


def port_9092_capture(path):
    """Metadata and ApiVersions on Kafka's default port, which the built-in
    kafka dissector registers too."""
    from kafka_pcap import Pcap, api_versions_v0_response, i16, i32, request, response
    pcap = Pcap()
    metadata_v1_response = (i32(1) + i32(1) + i16(9) + b"broker-1" + i32(9092) + i16(-1)  # Brokers: 1, "broker-1":9092, rack null
                            + i32(1)                                                        # ControllerId
                            + i32(0))                                                       # Topics: none
    pcap.connection(50010, 9092, [
        (True, request(18, 0, 1, b"")),
        (False, api_versions_v0_response(1, [(3, 0, 12), (18, 0, 3)])),
        (True, request(3, 1, 2, i32(0))),            # Metadata v1, no topics
        (False, response(2, metadata_v1_response)),
    ])
    pcap.write(path)


def count(ts, capture, dfilter, extra=()):
    out = ts.run(["-r", ts.file(capture), "-Y", dfilter] + list(extra)).stdout.decode()
    return len(out.splitlines())


def coexist_test(**kw):
    """kwire and the built-in kafka dissector: kwire takes Kafka's port 9092
    when it is loaded (plugins register after the built-in dissectors); the
    built-in one stays available through Decode As (-d tcp.port==9092,kafka);
    on other ports only kwire looks (the built-in one needs -d)."""
    def test():
        ts = Tshark(**kw)
        plain = Tshark()
        try:
            path = os.path.join(ts.dir, "port9092.pcap")
            port_9092_capture(path)
            need(count(plain, path, "kafka") == 4, "without kwire, tshark's kafka dissector must decode port 9092")
            need(count(ts, path, "kwire") == 4, "with kwire loaded, kwire must decode port 9092")
            need(count(ts, path, "kafka") == 0, "with kwire loaded, the built-in kafka dissector still decodes 9092")
            # kwire's port registration replaced kafka's: disabling kwire leaves
            # the port to plain TCP until Decode As names kafka.
            need(count(ts, path, "kwire || kafka", ["--disable-protocol", "kwire"]) == 0,
                 "--disable-protocol kwire: no Kafka dissector expected on 9092 without Decode As")
            need(count(ts, path, "kafka", ["--disable-protocol", "kwire", "-d", "tcp.port==9092,kafka"]) == 4,
                 "--disable-protocol kwire -d tcp.port==9092,kafka must give 9092 to the built-in kafka dissector")
            need(count(ts, path, "kafka", ["-d", "tcp.port==9092,kafka"]) == 4,
                 "Decode As kafka must override kwire on 9092")
            # Both read the same fields: api key and correlation id of every message.
            a = ts.run(["-r", ts.file(path), "-T", "fields", "-e", "kwire.api_key", "-e", "kwire.correlation_id",
                        "-Y", "kwire && tcp.dstport == 9092"]).stdout.decode().split()
            b = ts.run(["-r", ts.file(path), "-T", "fields", "-e", "kafka.request_key", "-e", "kafka.correlation_id",
                        "-Y", "kafka && tcp.dstport == 9092", "-d", "tcp.port==9092,kafka"]).stdout.decode().split()
            need(a == b and a == ["18", "1", "3", "2"],
                 f"kwire and kafka disagree on the requests' api keys and correlation ids: {a} vs {b}")
            demo = os.path.join(args.source, "captures", "demo.pcapng")
            need(count(ts, demo, "kafka") == 0 and count(ts, demo, "kwire") > 0,
                 "on a random broker port only kwire (heuristic) should decode")
            need(count(ts, demo, "kwire", ["--disable-heuristic", "kwire_tcp"]) == 0,
                 "--disable-heuristic kwire_tcp must turn the any-port recognition off")
            need(count(ts, demo, "kwire", ["-o", "kwire.heuristic:FALSE"]) == 0,
                 "the kwire.heuristic preference must turn the any-port recognition off")
            print("wireshark coexist: port 9092 is kwire's while it is loaded; Decode As gives it to kafka; "
                  "the heuristic finds random ports and can be turned off")
        finally:
            ts.cleanup()
            plain.cleanup()
    return test


def text_keys(v):
    """Text items: the C plugin's JSON key is their label, Lua's "text"; the
    labels themselves are compared in the -V output."""
    if isinstance(v, list):
        return [("text" if ws_tree.ARRAY.match(k) or ws_tree.NULL_ARRAY.match(k) or k == "_ws.lua.text" else k,
                 text_keys(x)) for k, x in v]
    return v


def kwire_layers(packets):
    out = []
    for pkt in packets:
        layers = dict(dict(pkt)["_source"])["layers"]
        out.append([text_keys(v) for k, v in layers if k == "kwire"])
    return out


def without_time(layer):
    """A packet's kwire layers without kwire.time: Lua has the capture time
    only as a double, so the response time may differ in the last digit."""
    return [[(k, v) for k, v in pdu if k != "kwire.time"] for pdu in layer]


def lua_test():
    """kwire.lua against the C plugin (which the other tests hold to kwire
    decode): the same registered fields, and on every capture the same tree
    (tshark -V text, every line), the same field values (-T json) and the same
    Info column."""
    fields_test(lua=args.lua)()
    c, lua = Tshark(plugin=args.plugin), Tshark(lua=args.lua)
    try:
        def registered(ts):
            out = ts.run(["-G", "fields"]).stdout.decode()
            return sorted((x[2], x[3]) for x in (line.split("\t") for line in out.splitlines())
                          if x[0] == "F" and x[4] == "kwire")
        a, b = registered(c), registered(lua)
        need(a == b, f"C plugin and kwire.lua register different fields or types: {sorted(set(a) ^ set(b))[:20]}")

        def time_free(text):
            # Wireshark's own lines may differ: the response time (Lua has the
            # capture time only as a double) and the protocol stack (Lua's
            # dissect_tcp_pdus adds a layer per PDU).
            return [line for line in text.splitlines()
                    if "Time since request:" not in line and "[Protocols in frame:" not in line]

        # Both at once, as an installed system has them (kwire.so and kwire.lua
        # in Wireshark's folders): kwire.lua finds the plugin's kwire dissector
        # registered and stands aside, so tshark starts without a Lua error and
        # prints exactly what the plugin alone prints.
        both = Tshark(plugin=args.plugin, lua=args.lua)
        try:
            demo = os.path.join(args.source, "captures", "demo.pcapng")
            view = ["-Y", "kwire", "-c", "40", "-T", "fields", "-e", "frame.number", "-e", "kwire.api_key",
                    "-e", "kwire.correlation_id", "-e", "_ws.col.Info"]
            p = both.run(["-r", both.file(demo)] + view, check=False)
            alone = c.run(["-r", c.file(demo)] + view)
            need(p.returncode == 0 and b"Lua" not in p.stderr and b"two protocols" not in p.stderr,
                 f"plugin and kwire.lua together: tshark exited {p.returncode}: {p.stderr[-1500:]}")
            need(alone.stdout.count(b"\n") > 0 and p.stdout == alone.stdout,
                 "plugin and kwire.lua together: not the plugin's output alone:\n"
                 f"{p.stdout[:800]}\nagainst\n{alone.stdout[:800]}")
            plugins = both.run(["-G", "plugins"]).stdout.decode()
            need("kwire.so" in plugins, f"plugin and kwire.lua together: tshark -G plugins has no kwire.so:\n{plugins}")
        finally:
            both.cleanup()
        total = 0
        malformed = os.path.join(c.dir, "malformed.pcap")
        malformed_capture(malformed)
        random_pcap = os.path.join(c.dir, "random.pcap")
        random_capture(random_pcap)
        nested = os.path.join(c.dir, "nested.pcap")
        nested_capture(nested)
        for cap in sorted(glob.glob(os.path.join(args.source, "captures", "*.pcapng"))) + [malformed, random_pcap,
                                                                                         nested]:
            name = os.path.basename(cap)
            # kwire.lua decompresses gzip batches only (tvb:uncompress);
            # it says so in the tree. Packets with a compressed batch are
            # compared apart, below: everything else must be identical.
            plain = "kwire && !(kwire.record_batch.attributes & 6)"
            compressed = "kwire.record_batch.attributes & 6"  # snappy 2, lz4 3, zstd 4
            jc, jl = c.json(cap, ["-Y", plain]), lua.json(cap, ["-Y", plain])
            pc = ws_tree.pdus(jc)
            need(len(pc) == len(ws_tree.pdus(jl)), f"{name}: different message counts")
            for i, (x, y) in enumerate(zip(kwire_layers(jc), kwire_layers(jl))):
                if x != y:
                    need(without_time(x) == without_time(y), f"{name} packet {i + 1}: C plugin and kwire.lua JSON "
                                                             f"differ:\n{str(x)[:1500]}\n{str(y)[:1500]}")
            vc = time_free(c.run(["-r", c.file(cap), "-V", "-Y", plain]).stdout.decode())
            vl = time_free(lua.run(["-r", lua.file(cap), "-V", "-Y", plain]).stdout.decode())
            diff = next(((i, p, q) for i, (p, q) in enumerate(zip(vc, vl)) if p != q), None)
            need(len(vc) == len(vl) and diff is None, f"{name}: tshark -V differs, first at line {diff}")
            frames = ["-T", "fields", "-e", "frame.number", "-Y", compressed]
            zc = c.run(["-r", c.file(cap)] + frames).stdout.decode().split()
            zl = lua.run(["-r", lua.file(cap)] + frames).stdout.decode().split()
            need(zc == zl, f"{name}: the C plugin and kwire.lua see compressed batches in different packets")
            if zl:
                said = lua.run(["-r", lua.file(cap), "-V", "-Y", compressed]).stdout.decode()
                need(said.count("not decoded by kwire.lua") >= len(zl),
                     f"{name}: kwire.lua does not say that it leaves compressed records undecoded")
                print(f"{name}: {len(zl)} packets with compressed batches, which kwire.lua leaves undecoded")
            info = ["-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info", "-Y", "kwire"]
            ic = c.run(["-r", c.file(cap)] + info).stdout.decode()
            il = lua.run(["-r", lua.file(cap)] + info).stdout.decode()
            need(ic == il, f"{name}: Info columns differ, first: "
                           f"{next(((p, q) for p, q in zip(ic.splitlines(), il.splitlines()) if p != q), None)}")
            print(f"{name}: {len(pc)} messages, kwire.lua identical to the C plugin ({len(vc)} lines of -V)")
            total += len(pc)
        print(f"wireshark lua: {total} messages identical to the C plugin (fields, -V tree, Info column)")
    finally:
        c.cleanup()
        lua.cleanup()


def tls_ports(cap):
    """The server ports of a capture's TLS connections: where its ClientHellos go."""
    import subprocess
    return sorted({int(p) for p in subprocess.run(
        ["tshark", "-n", "-r", cap, "-Y", "tls.handshake.type == 1", "-T", "fields", "-e", "tcp.dstport"],
        capture_output=True, text=True).stdout.split()})


def reused_ports_capture(path):
    """Two connections on the same addresses and ports, one after the other:
    the first turns to raw SASL tokens after a SaslHandshake v0, the second
    is plain Kafka again."""
    from kafka_pcap import Pcap, api_versions_v0_response, i16, i32, request, response, string
    pcap = Pcap()
    pcap.connection(50100, 40100, [
        (True, request(17, 0, 1, string("PLAIN"))),                   # SaslHandshake v0
        (False, response(1, i16(0) + i32(1) + string("PLAIN"))),      # NONE, mechanisms: PLAIN
        (True, i32(10) + b"\x00user\x00pass"),                        # a raw SASL/PLAIN token
    ])
    pcap.connection(50100, 40100, [
        (True, request(18, 0, 7, b"")),                               # ApiVersions v0
        (False, api_versions_v0_response(7, [(17, 0, 1), (18, 0, 3)])),
    ], isn=(700000, 900000))
    pcap.write(path)


def kwire_ids(m):
    """A message of kwire decode -T json by its frame, direction, api key,
    version and correlation id, as tshark's fields write them (a PDU that is
    not Kafka, a raw SASL token, has none of the last three)."""
    api = m.get("apiKey")
    return (m["frame"], "0" if m["direction"] == "request" else "1", None if api is None else str(api),
            None if api is None else str(m["apiVersion"]), None if m.get("notKafka") else str(m["correlationId"]))


def message_ids(t):
    """The same of a ws_tree PDU."""
    g = t["generic"]
    return (t["frame"], g.get("kwire.direction"), g.get("kwire.api_key"), g.get("kwire.api_version"),
            g.get("kwire.correlation_id"))


def lua_tls_test():
    """kwire.lua inside TLS, in tshark's single pass and with -2 (whose first
    pass dissects without a tree): on every capture of captures/tls/, decrypted
    with its key log (kwire.lua found by its TLS heuristic, and on the TLS port
    with -d tls.port==P,kwire) and with its secrets blocks, every message that
    `kwire decode --tls-keylog` finds, field for field, none malformed, no Lua
    error, and the same tree (-T json) as the C plugin's in the same mode. Then
    the plaintext captures with -2, against the C plugin with -2 (one pass is
    the lua test's)."""
    c, lua = Tshark(plugin=args.plugin), Tshark(lua=args.lua)
    try:
        def run_json(ts, cap, extra):
            p = ts.run(["-r", ts.file(cap), "-T", "json"] + list(extra))
            need(b"Lua Error" not in p.stdout and b"Lua Error" not in p.stderr,
                 f"{os.path.basename(cap)} {' '.join(extra)}: a Lua error: "
                 f"{(p.stderr or p.stdout).decode(errors='replace')[-1500:]}")
            return json.loads(p.stdout, object_pairs_hook=lambda pairs: pairs)

        def compressed(v):
            # A snappy, lz4 or zstd batch, which kwire.lua leaves undecoded (see lua_test).
            if not isinstance(v, (list, tuple)):
                return False
            if len(v) == 2 and v[0] == "kwire.record_batch.attributes":
                return int(v[1]) & 6 != 0
            return any(compressed(x) for x in v)

        def same_tree(name, what, jc, jl):
            lc, ll = kwire_layers(jc), kwire_layers(jl)
            need(len(lc) == len(ll), f"{name} ({what}): {len(lc)} packets from the C plugin, {len(ll)} from kwire.lua")
            for i, (x, y) in enumerate(zip(lc, ll)):
                if compressed(x):
                    continue
                need(x == y or without_time(x) == without_time(y),
                     f"{name} ({what}) packet {i + 1}: C plugin and kwire.lua JSON differ:\n{str(x)[:1500]}\n"
                     f"{str(y)[:1500]}")

        capdir = os.path.join(args.source, "captures", "tls")
        names = sorted(f[:-5] for f in os.listdir(capdir) if f.endswith(".keys"))
        need(len(names) >= 6, f"captures/tls holds {len(names)} captures with key logs")
        cmp = Comparison()
        runs = total = 0
        for name in names:
            cap, keys = os.path.join(capdir, name + ".pcapng"), os.path.join(capdir, name + ".keys")
            secrets = os.path.join(capdir, name + "-secrets.pcapng")
            ports = tls_ports(cap)
            need(ports, f"{name}: no TLS ClientHello")
            # TLS itself on those ports (see tls_test).
            tls = [a for p in ports for a in ("-d", f"tcp.port=={p},tls")]
            on_port = [a for p in ports for a in ("-d", f"tls.port=={p},kwire")]
            # In frame order, as compare_capture: on a connection open before the
            # capture began kwire decode prints a message once it is sure of it.
            kw = sorted(decode_json(cap, ["--tls-keylog", keys]), key=lambda m: m["frame"])
            need(kw, f"{name}: kwire decode --tls-keylog found no Kafka messages")
            for passes in ([], ["-2"]):
                mode = "two passes" if passes else "one pass"
                # The C plugin in the same mode, field for field as kwire decode.
                jc = c.json(cap, tls + ["-o", f"tls.keylog_file:{c.file(keys)}"] + passes)
                reference = sorted(ws_tree.pdus(jc), key=lambda t: t["frame"])
                need(len(reference) == len(kw), f"{name} ({mode}): the C plugin shows {len(reference)} messages, "
                                                f"kwire decode {len(kw)}")
                before = len(cmp.mismatches)
                for i, (k, t) in enumerate(zip(kw, reference)):
                    cmp.message(f"{name} ({mode}) message {i + 1} (frame {t['frame']})", k, t)
                need(len(cmp.mismatches) == before, f"{name} ({mode}): the C plugin differs from kwire decode:\n"
                                                    + "\n".join(cmp.mismatches[before:][:20]))
                self_check(kw, reference)
                for how, extra, source in (
                        ("heuristic", ["-o", f"tls.keylog_file:{lua.file(keys)}"], cap),
                        ("tls.port", ["-o", f"tls.keylog_file:{lua.file(keys)}"] + on_port, cap),
                        ("secrets blocks", [], secrets)):
                    what = f"{mode}, {how}"
                    jl = run_json(lua, source, tls + extra + passes)
                    pdus = sorted(ws_tree.pdus(jl), key=lambda t: t["frame"])
                    need(len(pdus) == len(kw), f"{name} ({what}): kwire.lua shows {len(pdus)} messages, "
                                               f"kwire decode --tls-keylog {len(kw)}")
                    got, want = [message_ids(t) for t in pdus], [kwire_ids(k) for k in kw]
                    diff = next(((i + 1, x, y) for i, (x, y) in enumerate(zip(want, got)) if x != y), None)
                    need(diff is None, f"{name} ({what}): message {diff and diff[0]}: kwire decode "
                                       f"{diff and diff[1]}, kwire.lua {diff and diff[2]} (frame, direction, api "
                                       "key, version, correlation id)")
                    bad = [(t["frame"], m) for t in pdus for k, m in t["expert"] if k == "kwire.malformed"]
                    need(not bad, f"{name} ({what}): kwire.lua marks {len(bad)} messages malformed: {bad[:5]}")
                    same_tree(name, what, jc, jl)
                    runs += 1
            print(f"{name}: {len(kw)} messages, kwire.lua as kwire decode and the C plugin in one pass and two, "
                  f"by heuristic, on the TLS port and from secrets blocks")
            total += len(kw)
        plain = 0
        for cap in sorted(glob.glob(os.path.join(args.source, "captures", "*.pcapng"))):
            name = os.path.basename(cap)
            kw = decode_json(cap)
            jl = run_json(lua, cap, ["-2"])
            n = len(ws_tree.pdus(jl))
            need(n == len(kw), f"{name} (two passes): kwire.lua shows {n} messages, kwire decode {len(kw)}")
            same_tree(name, "two passes", c.json(cap, ["-2"]), jl)
            plain += n
        # A connection reusing the endpoints of an earlier one is a new one
        # where tcp.stream says so (one pass; -2 has no tree in its first).
        reused = os.path.join(lua.dir, "reused.pcap")
        reused_ports_capture(reused)
        kw = decode_json(reused)
        pdus = ws_tree.pdus(run_json(lua, reused, []))
        need([message_ids(t) for t in pdus] == [kwire_ids(k) for k in kw] and len(kw) == 5,
             f"reused ports: kwire.lua shows {[message_ids(t) for t in pdus]}, kwire decode "
             f"{[kwire_ids(k) for k in kw]}")
        same_tree("reused ports", "one pass", c.json(reused), run_json(lua, reused, []))
        print(f"wireshark lua_tls: {len(names)} TLS captures, {total} messages in {runs} tshark runs, "
              f"{cmp.fields} fields of the C plugin as kwire decode; {plain} plaintext messages with -2 as the C "
              "plugin")
    finally:
        c.cleanup()
        lua.cleanup()


def claimed_tcp_ports():
    """The TCP ports that Wireshark's own dissectors hold in tcp.port: a
    connection from such a client port goes to that dissector before any
    heuristic (34980, EtherCAT, in python-tls13.pcapng), unless TLS is named
    for the server port or the heuristics go first."""
    import subprocess
    out = subprocess.run(["tshark", "-G", "decodes"], capture_output=True, text=True).stdout
    return {int(f[1]) for f in (line.split("\t") for line in out.splitlines())
            if len(f) >= 3 and f[0] == "tcp.port" and f[1].isdigit()}


def tls_connections_test(label, **kw):
    """Every Kafka connection inside TLS decodes, with no hint that the
    server port is TLS: kwire never takes a TCP conversation that carries
    TLS, and a broker port learnt from decrypted Kafka does not take the next
    TLS connections to that port from TLS. On every capture of captures/tls/
    (python-mixed: 20 connections to one port, TLS 1.3 and 1.2 interleaved),
    by key log with kwire's TLS heuristic (one pass and -2, and with TCP's
    heuristics first, where kwire's TCP heuristic sees every ClientHello
    first), with -d tls.port==P,kwire, with -d tcp.port==P,kwire (TLS on a
    port given to kwire goes to TLS), with the plugin's kwire.tls.port
    preference, and from the secrets blocks: every message that `kwire
    decode --tls-keylog` finds, with the same frame, direction, api key,
    version and correlation id, and no PDU marked not Kafka."""
    def test():
        ts = Tshark(**kw)
        try:
            claimed = claimed_tcp_ports()
            capdir = os.path.join(args.source, "captures", "tls")
            names = sorted(f[:-5] for f in os.listdir(capdir) if f.endswith(".keys"))
            need("python-mixed" in names, "captures/tls/python-mixed.pcapng (testbed/scenario tls-mixed) is missing")
            runs = total = 0
            for name in names:
                cap, keys = os.path.join(capdir, name + ".pcapng"), os.path.join(capdir, name + ".keys")
                ports = tls_ports(cap)
                # In frame order (see lua_tls_test).
                kw_msgs = sorted(decode_json(cap, ["--tls-keylog", keys]), key=lambda m: m["frame"])
                need(kw_msgs, f"{name}: kwire decode --tls-keylog found no Kafka messages")
                keylog = ["-o", f"tls.keylog_file:{ts.file(keys)}"]
                # A connection from a client port another dissector holds is that
                # dissector's unless TCP's heuristics go first.
                held = {k["frame"] for k in kw_msgs
                        if int((k["src"] if k["direction"] == "request" else k["dst"]).rsplit(":", 1)[1]) in claimed}
                modes = [("heuristic", keylog, cap, []), ("heuristic", keylog, cap, ["-2"]),
                         ("heuristics first", keylog + ["-o", "tcp.try_heuristic_first:TRUE"], cap, []),
                         ("-d tls.port", keylog + [a for p in ports for a in ("-d", f"tls.port=={p},kwire")], cap, []),
                         ("-d tcp.port", keylog + [a for p in ports for a in ("-d", f"tcp.port=={p},kwire")], cap, []),
                         ("secrets blocks", [], os.path.join(capdir, name + "-secrets.pcapng"), []),
                         ("secrets blocks", [], os.path.join(capdir, name + "-secrets.pcapng"), ["-2"])]
                if "plugin" in kw:
                    modes.append(("kwire.tls.port", keylog + ["-o", "kwire.tls.port:" + ",".join(map(str, ports))],
                                  cap, []))
                for how, extra, source, passes in modes:
                    what = f"{how}, {'two passes' if passes else 'one pass'}"
                    p = ts.run(["-r", ts.file(source), "-T", "json"] + extra + passes)
                    need(b"Lua Error" not in p.stdout and b"Lua Error" not in p.stderr,
                         f"{name} ({what}): a Lua error: {(p.stderr or p.stdout).decode(errors='replace')[-1500:]}")
                    pdus = sorted(ws_tree.pdus(json.loads(p.stdout, object_pairs_hook=lambda pairs: pairs)),
                                  key=lambda t: t["frame"])
                    want = [kwire_ids(k) for k in kw_msgs if how == "heuristics first" or k["frame"] not in held]
                    got = [message_ids(t) for t in pdus if how == "heuristics first" or t["frame"] not in held]
                    diff = next(((i + 1, x, y) for i, (x, y) in enumerate(zip(want, got)) if x != y), None)
                    need(len(got) == len(want) and diff is None,
                         f"{name} ({what}): tshark with the {label} shows {len(got)} messages, kwire decode "
                         f"--tls-keylog {len(want)}; first difference (message, kwire decode, tshark): {diff}")
                    bad = [t["frame"] for t in pdus if t["generic"].get("kwire.not_kafka")]
                    need(not bad, f"{name} ({what}): {len(bad)} PDUs marked not Kafka, frames {bad[:10]}")
                    runs += 1
                conns = len({(k["src"], k["dst"]) for k in kw_msgs if k["direction"] == "request"})
                print(f"{name}: {len(kw_msgs)} messages in {conns} TLS connections, all in tshark with the {label} "
                      f"in {len(modes)} ways" + (f" ({len(held)} on a client port Wireshark holds: "
                                                 "those by heuristics first)" if held else ""))
                total += len(kw_msgs)
            print(f"wireshark {label} inside TLS: {len(names)} captures, {total} messages, {runs} tshark runs")
        finally:
            ts.cleanup()
    return test


def json_error_codes(body):
    """The error codes of a decoded body by where they sit, as kwire's
    statistics count them: ("top", code) for the body's own, ("partition",
    code) inside an array whose name has "partition", ("entry", code)
    anywhere else. Error codes are the int fields whose name ends in
    ErrorCode (Kafka's naming); record batches hold none, and a whole
    message nested in a bytes field (an Envelope's: header and body) is
    another message's."""
    out = []

    def walk(v, top, in_partition):
        if isinstance(v, dict):
            for k, x in v.items():
                if k.lower().endswith("errorcode") and isinstance(x, int) and not isinstance(x, bool):
                    out.append(("top" if top else "partition" if in_partition else "entry", x))
                elif k != "records" and not (isinstance(x, dict) and "header" in x and "body" in x):
                    walk(x, False, in_partition or (isinstance(x, list) and "partition" in k.lower()))
        elif isinstance(v, list):
            for x in v:
                walk(x, False, in_partition)
    if isinstance(body, dict):
        walk(body, True, False)
    return out


ERROR_LEVELS = {"top": "Error codes (top level), by API", "partition": "Error codes (per partition), by API",
                "entry": "Error codes (per topic, group or other entry), by API"}


def expected_stats(kw, rel, error_names):
    """What kwire's SRT table and stats tree must show for a capture, worked
    out from `kwire decode -T json` alone (rel: frame number -> tshark's
    frame.time_relative): per API and per API and version the exchanges and
    their min, max and sum of response time (from tshark's frame times and,
    as a cross-check, from kwire decode's own), and the tree's counts by path."""
    from collections import Counter
    tree = Counter()
    srt = {}
    pending = {}
    for m in kw:
        api = m.get("apiName") or (f"api {m['apiKey']}" if m.get("apiKey") is not None else None)
        if m.get("notKafka"):
            tree[("Not Kafka segments, by reason",)] += 1
            continue
        if m.get("unmatched"):
            tree[("Responses whose request is not in the capture",)] += 1
            continue
        if api is None:
            tree[("Malformed messages by API",)] += 1
            tree[("Malformed messages by API", "(no api key)")] += 1
            continue
        v = f"v{m['apiVersion']}"
        request = m["direction"] == "request"
        top = "Requests by API and version" if request else "Responses by API and version"
        for path in ((top,), (top, api), (top, api, v)):
            tree[path] += 1
        if request:
            cid = (m.get("header") or {}).get("clientId")
            cid = "(null)" if cid is None else cid or "(empty)"
            for path in (("Requests by client id and API",), ("Requests by client id and API", cid),
                         ("Requests by client id and API", cid, api)):
                tree[path] += 1
            pending[(m["src"], m["dst"], m["correlationId"])] = m
        else:
            req = pending.pop((m["dst"], m["src"], m["correlationId"]), None)
            need(req is not None, f"frame {m['frame']}: a response kwire decode matched has no request before it")
            t = rel[m["frame"]] - rel[req["frame"]]
            own = Decimal(str(m["time"])) - Decimal(str(req["time"]))
            need(abs(t - own) <= Decimal("0.000001"), f"frame {m['frame']}: tshark's frame times give {t} s, "
                                                      f"kwire decode's {own} s")
            for key in (api, f"{api} {v}"):
                s = srt.setdefault(key, [0, None, None, Decimal(0)])
                s[0] += 1
                s[1] = t if s[1] is None else min(s[1], t)
                s[2] = t if s[2] is None else max(s[2], t)
                s[3] += t
        for level, code in json_error_codes(m.get("body")):
            name = error_names.get(code, f"unknown error {code}")
            for path in ((ERROR_LEVELS[level],), (ERROR_LEVELS[level], name), (ERROR_LEVELS[level], name, api)):
                tree[path] += 1
        if m.get("error"):
            tree[("Malformed messages by API",)] += 1
            tree[("Malformed messages by API", api)] += 1
    return srt, tree


SRT_ROW = re.compile(r"^\s*(\d+)\s+(\S+(?: v\d+)?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")


def parse_srt(text):
    """tshark -z kwire,srt: API (or "API vN") -> [calls, min, max, sum]."""
    rows = {}
    for line in text.splitlines():
        m = SRT_ROW.match(line)
        if m:
            need(m.group(2) not in rows, f"SRT row {m.group(2)} twice")
            rows[m.group(2)] = [int(m.group(3)), Decimal(m.group(4)), Decimal(m.group(5)), Decimal(m.group(7))]
    return rows


def parse_tree(text):
    """tshark -z kwire,tree: path of node names -> count (one space of
    indentation per level, the count in the Count column)."""
    lines = text.splitlines()
    head = next((i for i, line in enumerate(lines) if line.startswith("Topic / Item")), None)
    need(head is not None, f"no stats tree in the output:\n{text[-2000:]}")
    col = lines[head].index("Count")
    out, stack = {}, []
    for line in lines[head + 2:]:
        if line.startswith("=") or not line.strip():
            break
        name, count = line[:col].rstrip(), line[col:].split()[0]
        depth = len(name) - len(name.lstrip(" "))
        stack = stack[:depth] + [name.strip()]
        need(tuple(stack) not in out, f"stats tree node {stack} twice")
        out[tuple(stack)] = int(count)
    return out


def stats_test(label, **kw):
    """Statistics > Service Response Time (tshark -z kwire,srt) and
    Statistics > Kafka (tshark -z kwire,tree) on real captures, in one pass
    and with -2, against figures worked out from `kwire decode -T json` and
    tshark's own frame.time_relative (expected_stats)."""
    def test():
        import subprocess
        ts = Tshark(**kw)
        try:
            from spec_paths import error_names
            names = error_names(args.source)
            caps = [(os.path.join(args.source, "captures", c), []) for c in ("demo.pcapng", "other-clients.pcapng")]
            tls = os.path.join(args.source, "captures", "tls")
            for c in ("python-mixed", "scram"):
                if os.path.exists(os.path.join(tls, c + ".keys")):
                    caps.append((os.path.join(tls, c + ".pcapng"), [os.path.join(tls, c + ".keys")]))
            need(len(caps) >= 3, "captures for the statistics test are missing")
            for cap, keys in caps:
                name = os.path.basename(cap)
                kw_extra = ["--tls-keylog", keys[0]] if keys else []
                ts_extra = []
                if keys:
                    ts_extra = [a for p in tls_ports(cap) for a in ("-d", f"tcp.port=={p},tls")]
                    ts_extra += ["-o", f"tls.keylog_file:{ts.file(keys[0])}"]
                kw_msgs = decode_json(cap, kw_extra)
                out = subprocess.run(["tshark", "-n", "-r", cap, "-T", "fields", "-e", "frame.number", "-e",
                                      "frame.time_relative"], capture_output=True, text=True).stdout
                rel = {int(a): Decimal(b) for a, b in (line.split() for line in out.splitlines() if line.strip())}
                srt, tree = expected_stats(kw_msgs, rel, names)
                need(srt and sum(v[0] for v in srt.values()) > 50, f"{name}: fewer than 50 exchanges")
                for passes in ([], ["-2"]):
                    mode = "two passes" if passes else "one pass"
                    p = ts.run(["-r", ts.file(cap), "-q", "-z", "kwire,srt", "-z", "kwire,tree"] + ts_extra + passes)
                    text = p.stdout.decode(errors="replace")
                    need("Lua Error" not in text and b"Lua Error" not in p.stderr, f"{name}: a Lua error: {text[-1500:]}")
                    got = parse_srt(text)
                    need(set(got) == set(srt), f"{name} ({mode}): SRT rows {sorted(got)}, expected {sorted(srt)}")
                    for key, (n, lo, hi, total) in srt.items():
                        g = got[key]
                        # tshark prints 6 decimals: each value within rounding.
                        ok = g[0] == n and abs(g[1] - lo) <= Decimal("0.0000006") and \
                            abs(g[2] - hi) <= Decimal("0.0000006") and abs(g[3] - total) <= Decimal("0.0000006")
                        need(ok, f"{name} ({mode}) SRT {key}: calls/min/max/sum {g}, expected "
                                 f"{[n, lo, hi, total]}")
                    got_tree = parse_tree(text)
                    want = {k: v for k, v in tree.items()}
                    for top in ("Requests by API and version", "Responses by API and version",
                                "Responses whose request is not in the capture", *ERROR_LEVELS.values(),
                                "Requests by client id and API", "Malformed messages by API",
                                "Not Kafka segments, by reason"):
                        want.setdefault((top,), 0)
                    # Not Kafka segments by reason: the total is compared (the reasons are the
                    # dissector's words).
                    got_cmp = {k: v for k, v in got_tree.items() if not (k[0].startswith("Not Kafka") and len(k) > 1)}
                    diff = sorted(set(got_cmp.items()) ^ set(want.items()))
                    need(not diff, f"{name} ({mode}): stats tree differs from kwire decode's figures "
                                   f"(path, count) in one but not the other: {diff[:20]}")
                print(f"{name}: {label}: SRT {len(srt)} rows, {sum(v[0] for v in srt.values()) // 2} exchanges; "
                      f"stats tree {len(want)} nodes; as kwire decode and tshark's frame times, one pass and -2")
        finally:
            ts.cleanup()
    return test


def overlay_test(**kw):
    """The plugin's spec overlay preferences, as kwire decode's --spec-dir and
    --overlay: an overlay directory that redefines ApiVersionsResponse v0."""
    def test():
        from kafka_pcap import Pcap, i16, i32, request, response
        ts = Tshark(**kw)
        try:
            spec_dir = os.path.join(ts.dir, "overlay")
            os.makedirs(spec_dir)
            with open(os.path.join(spec_dir, "ApiVersionsResponse.json"), "w") as f:
                json.dump({"apiKey": 18, "type": "response", "name": "ApiVersionsResponse", "validVersions": "0",
                           "flexibleVersions": "none",
                           "fields": [{"name": "ErrorCode", "type": "int16", "versions": "0+"},
                                      {"name": "Extra", "type": "int32", "versions": "0+"}]}, f)
            os.chmod(spec_dir, 0o755)
            os.chmod(os.path.join(spec_dir, "ApiVersionsResponse.json"), 0o644)
            path = os.path.join(ts.dir, "overlay.pcap")
            pcap = Pcap()
            pcap.connection(50020, 40020, [(True, request(18, 0, 1, b"")), (False, response(1, i16(0) + i32(77)))])
            pcap.write(path)
            # Without the overlay the response is a malformed ApiVersionsResponse v0, for both.
            plain = ws_tree.pdus(ts.json(path))
            released = decode_json(path)
            need("error" in released[1] and any(k == "kwire.malformed" for k, _ in plain[1]["expert"]),
                 "without an overlay, the response should be malformed for kwire decode and tshark")
            with_dir = decode_json(path, ["--spec-dir", spec_dir])
            need(with_dir[1]["body"] == {"errorCode": 0, "extra": 77}, f"kwire decode --spec-dir: {with_dir[1]}")
            out = ts.run(["-r", ts.file(path), "-o", f"kwire.spec_dir:{spec_dir}", "-T", "fields", "-Y",
                          "kwire.direction == 1", "-e", "kwire.api_versions_response.error_code", "-e",
                          "kwire.overlay_field", "-e", "kwire.overlay", "-e", "_ws.expert.severity"]).stdout.decode()
            fields = out.strip().split("\t")
            need(fields[:3] == [str(with_dir[1]["body"]["errorCode"]), str(with_dir[1]["body"]["extra"]),
                                with_dir[1]["overlay"]] and "error" not in with_dir[1],
                 f"tshark -o kwire.spec_dir: {fields}, kwire decode --spec-dir: {with_dir[1]}")
            p = ts.run(["-r", ts.file(path), "-o", "kwire.overlay:kip-1331-draft"])
            need(b"kwire" not in p.stderr, f"the shipped overlay preference failed: {p.stderr}")
            p = ts.run(["-r", ts.file(path), "-o", "kwire.overlay:no-such-overlay"], check=False)
            need(b"no shipped spec overlay is named" in p.stderr, f"an unknown overlay name is not reported: {p.stderr}")
            print(f"wireshark overlay: kwire.spec_dir decodes as kwire decode --spec-dir ({fields[:3]}); "
                  "kwire.overlay loads kip-1331-draft and reports unknown names")
        finally:
            ts.cleanup()
    return test


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("test")
    ap.add_argument("--source", required=True)
    ap.add_argument("--kwire", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--lua")
    args = ap.parse_args()
    tests = {
        "captures": [lambda: captures_test(plugin=args.plugin)()],
        "tls": [lambda: tls_test(plugin=args.plugin)()],
        "fields": [lambda: fields_test(plugin=args.plugin)()],
        "filters": [lambda: filters_test(plugin=args.plugin)()],
        "malformed": [lambda: malformed_test(plugin=args.plugin)()],
        "coexist": [lambda: coexist_test(plugin=args.plugin)()],
        "lua": [lua_test],
        "lua_tls": [lua_tls_test],
        "overlay": [lambda: overlay_test(plugin=args.plugin)()],
        "stats": [lambda: stats_test("C plugin", plugin=args.plugin)()],
        "tls_connections": [lambda: tls_connections_test("C plugin", plugin=args.plugin)()],
        "lua_tls_connections": [lambda: tls_connections_test("kwire.lua", lua=args.lua)()],
        "lua_stats": [lambda: stats_test("kwire.lua", lua=args.lua)()],
    }
    need_test = tests.get(args.test)
    if not need_test:
        print(f"unknown test {args.test}", file=sys.stderr)
        sys.exit(2)
    main(need_test)
