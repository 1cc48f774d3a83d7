#!/usr/bin/env python3
"""kwire's TLS decryption against tshark's, on the real TLS captures in
captures/tls/ (testbed/scenario tls; MANIFEST.md says how they were made).

For every capture NAME.pcapng with its client key log NAME.keys:
- tshark with the key log (-o tls.keylog_file, -d tls.port==P,kafka) lists the
  Kafka PDUs: frame, api key, correlation id (and the version of requests).
  kwire decode --tls-keylog must list exactly those, and so must kwire decode
  of NAME-secrets.pcapng (the key log in Decryption Secrets Blocks) with no
  option.
- The same streams rebuilt as plaintext: tshark's decrypted bytes of each
  connection (-z follow,tls,raw) in a plain TCP capture. kwire's decode of it
  must equal its decode of the TLS capture, message for message, field for field.
- Without keys, every TLS connection is reported, with the client random
  whose key is missing (tshark's ClientHello randoms), and nothing decodes.
- A wrong key, a capture cut inside a record, a capture that starts after
  the handshakes: errors and verdicts that say so; what decrypted before stays.
- The captures between them hold TLS 1.2 and 1.3 connections with AES-GCM,
  ChaCha20-Poly1305 and AES-CBC (HMAC) suites (by tshark's ServerHello), all
  decrypted, and TLS 1.3 KeyUpdate messages (handshake type 24, as tshark
  decrypts them with the key log) that kwire decodes past.
- A capture of a whole cluster (production.pcapng: testbed/scenario
  production) also holds plaintext Kafka: the brokers' PLAINTEXT listener and
  the controllers' listener, some of their connections open before the
  recording began. Its plaintext server ports are the other ports that
  connections open to (tshark's SYNs); tshark decodes Kafka on them too
  (-d tcp.port==Q,kafka), with the key log and without, and kwire must list
  the same PDUs. The rebuilt-plaintext comparison is of the TLS connections.
"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wireshark"))
import kafka_pcap  # noqa: E402

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def run(cmd, ok=(0,)):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return p


# -d tcp.port==P,tls for the TLS ports of the capture at hand. Without it tshark
# finds TLS by its heuristics, and a connection whose client port another
# protocol has registered is that protocol to it (port 34980 is EtherCAT's: stream 2
# of python-tls13.pcapng).
DECODE = []


def tshark(*args):
    return run(["tshark", "-n", *DECODE, *args]).stdout


def tls_ports(cap):
    DECODE.clear()
    out = tshark("-r", cap, "-Y", "tls.handshake.type == 1", "-T", "fields", "-e", "tcp.dstport")
    ports = sorted({int(x) for x in out.split()})
    for p in ports:
        DECODE.extend(["-d", f"tcp.port=={p},tls"])
    return ports


def plain_ports(cap, tls):
    """The server ports of the capture's plaintext connections: where its other
    connections open to (the destination of a SYN without ACK), as tshark lists
    them. Fails when a connection (one open before the recording too) has
    neither such a port nor a TLS one."""
    syn = tshark("-r", cap, "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields", "-e", "tcp.dstport")
    ports = sorted({int(x) for x in syn.split()} - set(tls))
    streams = {}
    for line in tshark("-r", cap, "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.dstport").splitlines():
        i, a, b = line.split("\t")
        streams[int(i)] = (int(a), int(b))
    known = set(tls) | set(ports)
    lost = sorted(i for i, (a, b) in streams.items() if a not in known and b not in known)
    check(not lost, f"{os.path.basename(cap)}: connections {lost[:10]} have no server port that a connection opens to")
    return ports


def decode_as(ports, plain=()):
    args = []
    for p in ports:
        args += ["-d", f"tls.port=={p},kafka"]
    for p in plain:
        args += ["-d", f"tcp.port=={p},kafka"]
    return args


def tshark_pdus(cap, keys, ports, plain=()):
    """(frame, api key, correlation id, request version or '') per Kafka PDU."""
    out = tshark("-r", cap, *([] if keys is None else ["-o", f"tls.keylog_file:{keys}"]), *decode_as(ports, plain),
                 "-Y", "kafka", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
                 "-e", "frame.number", "-e", "kafka.api_key", "-e", "kafka.correlation_id",
                 "-e", "kafka.request_key", "-e", "kafka.api_version")
    pdus = collections.Counter()
    for line in out.splitlines():
        frame, api, corr, req, ver = (line.split("\t") + [""] * 5)[:5]
        apis, corrs = api.split("|"), corr.split("|")
        reqs, vers = [x for x in req.split("|") if x], [x for x in ver.split("|") if x]
        # Requests carry request_key and api_version, in order; responses neither.
        vi = 0
        for a, c in zip(apis, corrs):
            v = ""
            if vi < len(reqs) and reqs[vi] == a:
                v = vers[vi] if vi < len(vers) else ""
                vi += 1
            # A response tshark could not match with its request has no api key.
            pdus[(int(frame), int(a) if a else -1, int(c), v)] += 1
    return pdus


def kwire_json(kwire, cap, *extra):
    p = run([kwire, "decode", "-r", cap, "-T", "json", "--stats", *extra])
    msgs, stats = [], None
    for line in p.stdout.splitlines():
        o = json.loads(line)
        if "stats" in o:
            stats = o["stats"]
        else:
            msgs.append(o)
    return msgs, stats, p.stderr


def kwire_pdus(msgs, oracle=()):
    """As tshark_pdus; a response that `oracle` (tshark's) lists without its api key is compared without it."""
    pdus = collections.Counter()
    for m in msgs:
        if "notKafka" in m:
            continue
        v = str(m["apiVersion"]) if m["direction"] == "request" else ""
        key = (m["frame"], m["apiKey"], m["correlationId"], v)
        if not v and (m["frame"], -1, m["correlationId"], v) in oracle:
            key = (m["frame"], -1, m["correlationId"], v)
        pdus[key] += 1
    return pdus


def followed_streams(cap, keys, ports):
    """tshark's decrypted bytes of each TLS connection: {client port: (server port, [(from_client, bytes)])}."""
    hellos = tshark("-r", cap, "-Y", "tls.handshake.type == 1", "-T", "fields", "-e", "tcp.stream",
                    "-e", "tcp.srcport", "-e", "tcp.dstport")
    ends = {}
    for line in hellos.splitlines():
        i, c, s = map(int, line.split("\t"))
        ends[i] = (c, s)
    args = ["-r", cap, "-o", f"tls.keylog_file:{keys}", "-q"]
    for i in sorted(ends):
        args += ["-z", f"follow,tls,raw,{i}"]
    out = tshark(*args)
    result = {}
    for block in out.split("===================================================================\n"):
        m = re.search(r"^Filter: tcp.stream eq (\d+)$", block, re.M)
        if not m:
            continue
        cport, sport = ends[int(m.group(1))]
        # Node 0's bytes are not indented; Node 0 may be either side.
        node0 = re.search(r"^Node 0: \S*:(\d+)$", block, re.M)
        node0_client = not node0 or int(node0.group(1)) != sport
        chunks = []
        for line in block.splitlines():
            if re.fullmatch(r"\t?[0-9a-f]+", line):
                chunks.append(((not line.startswith("\t")) == node0_client, bytes.fromhex(line.strip())))
        result[cport] = (sport, chunks)
    return result


def plaintext_capture(streams, path):
    pcap = kafka_pcap.Pcap()
    for cport, (sport, chunks) in sorted(streams.items()):
        segments = []
        for from_client, data in chunks:
            for i in range(0, len(data), 32000):
                segments.append((from_client, data[i:i + 32000]))
        pcap.connection(cport, sport, segments)
    pcap.write(path)


def by_connection(msgs, servers=None):
    """Each connection's messages (by client port) without what a capture's framing sets;
    with servers, only the connections to those server ports."""
    conns = collections.defaultdict(list)
    for m in msgs:
        if "notKafka" in m:
            continue
        client = m["src"] if m["direction"] == "request" else m["dst"]
        server = m["dst"] if m["direction"] == "request" else m["src"]
        if servers is not None and int(server.rsplit(":", 1)[1]) not in servers:
            continue
        port = int(client.rsplit(":", 1)[1])
        conns[port].append({k: v for k, v in m.items() if k not in ("frame", "message", "time", "src", "dst")})
    return conns


def ciphersuites(cap):
    out = tshark("-r", cap, "-Y", "tls.handshake.type == 2", "-T", "fields", "-e", "tls.handshake.ciphersuite",
                 "-e", "tls.handshake.extensions.supported_version")
    return {tuple(line.split("\t")) for line in out.splitlines()}


# TLS 1.2 AES-CBC suites with HMAC (IANA TLS cipher suite registry).
CBC_SUITES = {"0x002f", "0x0035", "0x003c", "0x003d", "0x0033", "0x0039", "0x0067", "0x006b", "0xc009", "0xc00a",
              "0xc013", "0xc014", "0xc023", "0xc024", "0xc027", "0xc028"}


def key_updates(cap, keys):
    """Frames holding a TLS 1.3 KeyUpdate (handshake type 24), as tshark decrypts them with the key log."""
    out = tshark("-r", cap, "-o", f"tls.keylog_file:{keys}", "-Y", "tls.handshake.type == 24", "-T", "fields",
                 "-e", "frame.number")
    return len(out.split())


def main():
    kwire, source = sys.argv[1], sys.argv[2]
    capdir = os.path.join(source, "captures", "tls")
    names = sorted(f[:-5] for f in os.listdir(capdir) if f.endswith(".keys"))
    check(len(names) >= 3, f"captures/tls holds {len(names)} captures with key logs, expected at least 3")
    work = tempfile.mkdtemp(prefix="kwire-tls-")
    suites = set()
    updates = 0
    cluster = []   # (name, plaintext ports with Kafka, TLS versions) of captures that hold both
    try:
        for name in names:
            cap, keys = os.path.join(capdir, name + ".pcapng"), os.path.join(capdir, name + ".keys")
            secrets = os.path.join(capdir, name + "-secrets.pcapng")
            ports = tls_ports(cap)
            plain = plain_ports(cap, ports)
            suites |= ciphersuites(cap)
            updates += key_updates(cap, keys)
            expected = tshark_pdus(cap, keys, ports, plain)
            check(sum(expected.values()) > 0, f"{name}: tshark finds no Kafka PDU with the key log")
            # Without keys tshark decodes the plaintext connections alone.
            plain_expected = tshark_pdus(cap, None, ports, plain)
            if plain:
                per_port = tshark("-r", cap, *decode_as(ports, plain), "-Y", "kafka", "-T", "fields", "-e", "tcp.srcport",
                                  "-e", "tcp.dstport")
                counts = collections.Counter(int(p) for line in per_port.splitlines() for p in line.split("\t")
                                             if int(p) in plain)
                print(f"{name}: plaintext Kafka on ports {plain} beside TLS on {ports}: frames per port "
                      f"{dict(sorted(counts.items()))}, {sum(plain_expected.values())} PDUs (tshark)")
                cluster.append((name, [p for p in plain if counts[p]], {v for _, v in ciphersuites(cap)}))
            msgs, stats, _ = kwire_json(kwire, cap, "--tls-keylog", keys)
            got = kwire_pdus(msgs, expected)
            unmatched = sum(n for k, n in expected.items() if k[1] == -1)
            check(got == expected, f"{name}: kwire's PDUs differ from tshark's: missing {sorted((expected - got).elements())[:5]}, "
                                   f"extra {sorted((got - expected).elements())[:5]}")
            hellos = len(tshark("-r", cap, "-Y", "tls.handshake.type == 1", "-T", "fields", "-e", "frame.number").split())
            check(stats["tls_connections"] == hellos and stats["tls_undecrypted"] == 0 and stats["tls_errors"] == 0,
                  f"{name}: stats {stats}, expected {hellos} TLS connections, all decrypted")
            print(f"{name}: {sum(got.values())} Kafka PDUs in {hellos} TLS connections, as tshark finds them "
                  f"({unmatched} responses that tshark does not match with their requests compared without api key)")

            check(os.path.exists(secrets), f"{name}-secrets.pcapng is missing")
            smsgs, sstats, _ = kwire_json(kwire, secrets)
            soracle = tshark_pdus(secrets, None, ports, plain)
            check(kwire_pdus(smsgs, soracle) == soracle,
                  f"{name}-secrets: kwire's PDUs (keys from the secrets blocks) differ from tshark's")
            check(sum(kwire_pdus(smsgs).values()) == sum(expected.values()), f"{name}-secrets: PDU count differs")

            # The same streams as plaintext, rebuilt from tshark's decryption: the TLS
            # connections, compared without the capture's plaintext ones.
            rebuilt = os.path.join(work, name + "-plain.pcap")
            plaintext_capture(followed_streams(cap, keys, ports), rebuilt)
            pmsgs, _, _ = kwire_json(kwire, rebuilt, "-p", ",".join(map(str, ports)))
            a, b = by_connection(msgs, set(ports)), by_connection(pmsgs)
            check(sorted(a) == sorted(b), f"{name}: connections differ between TLS and rebuilt plaintext")
            for port in sorted(set(a) & set(b)):
                if a[port] != b[port]:
                    diff = next(i for i, (x, y) in enumerate(zip(a[port] + [None], b[port] + [None])) if x != y)
                    check(False, f"{name}: connection from port {port} differs from its plaintext at message {diff}")
            print(f"{name}: {len(pmsgs)} messages equal those of tshark's decrypted streams rebuilt as plaintext")

            # No key: reported, with the client randoms tshark sees.
            nmsgs, nstats, _ = kwire_json(kwire, cap)
            randoms = set(tshark("-r", cap, "-Y", "tls.handshake.type == 1", "-T", "fields", "-e",
                                 "tls.handshake.random").replace(":", "").split())
            notes = [m["notKafka"] for m in nmsgs if "notKafka" in m]
            named = {r for r in randoms if any(r in n for n in notes)}
            check(named == randoms and len(notes) == len(randoms),
                  f"{name}: without keys {len(notes)} notes name {len(named)} of {len(randoms)} client randoms")
            check(nstats["tls_undecrypted"] == hellos and nstats["frames"] == sum(plain_expected.values())
                  and sum(tshark_pdus(cap, None, ports).values()) == 0,
                  f"{name}: without keys: {nstats}, tshark finds {sum(plain_expected.values())} plaintext PDUs")
            check(kwire_pdus(nmsgs, plain_expected) == plain_expected,
                  f"{name}: without keys kwire's PDUs differ from tshark's plaintext ones: "
                  f"missing {sorted((plain_expected - kwire_pdus(nmsgs, plain_expected)).elements())[:5]}, "
                  f"extra {sorted((kwire_pdus(nmsgs, plain_expected) - plain_expected).elements())[:5]}")

            # A wrong key: every SERVER_TRAFFIC_SECRET_0 changed in one byte.
            bad = os.path.join(work, name + "-bad.keys")
            with open(keys) as f, open(bad, "w") as g:
                for line in f:
                    w = line.split()
                    if len(w) == 3 and w[0] == "SERVER_TRAFFIC_SECRET_0":
                        w[2] = ("0" if w[2][0] != "0" else "1") + w[2][1:]
                        line = " ".join(w) + "\n"
                    if w and w[0] == "RSA":
                        line = re.sub(r"Master-Key:(.)", lambda m: "Master-Key:" + ("1" if m.group(1) == "0" else "0"), line)
                    if w and w[0] == "CLIENT_RANDOM":
                        w[2] = ("0" if w[2][0] != "0" else "1") + w[2][1:]
                        line = " ".join(w) + "\n"
                    g.write(line)
            bmsgs, bstats, berr = kwire_json(kwire, cap, "--tls-keylog", bad)
            check(bstats["tls_errors"] > 0 and "does not decrypt" in berr and "stream offset" in berr,
                  f"{name}: a wrong key gives {bstats}, stderr {berr[:300]!r}")
            secrets_hex = [x.split(":")[-1] for x in open(keys).read().split() if len(x.split(":")[-1]) >= 64]
            check(not any(x.lower() in berr.lower() for x in secrets_hex), f"{name}: kwire prints a secret of the key log")
            if "tls13" in name:
                # TLS 1.3: the client's requests still decrypt; the server's answers stop.
                check(sum(1 for m in bmsgs if m.get("direction") == "request") == sum(1 for m in msgs if m["direction"] == "request"),
                      f"{name}: with the servers' keys wrong, the clients' requests are not all decoded")
        # Cut inside a record, and started after the handshakes: of the scram capture
        # (else the first).
        first = "scram" if "scram" in names else names[0]
        cap = os.path.join(capdir, first + ".pcapng")
        keys = os.path.join(capdir, first + ".keys")
        tls_ports(cap)
        frames = int(tshark("-r", cap, "-T", "fields", "-e", "frame.number").split()[-1])
        big = tshark("-r", cap, "-Y", "tls.record.length > 1000", "-T", "fields", "-e", "frame.number").split()
        cut = os.path.join(work, "cut.pcapng")
        run(["editcap", "-s", "200", "-r", cap, cut, f"1-{big[-1]}"])
        cmsgs, cstats, cerr = kwire_json(kwire, cut, "--tls-keylog", keys)
        check(cstats["tls_errors"] >= 1 and "missing from the capture" in cerr,
              f"a capture whose last packet is cut inside a record: {cstats}, {cerr[:300]!r}")
        check(len(cmsgs) > 0, "a capture whose last packet is cut: nothing before the cut decoded")
        late = os.path.join(work, "late.pcapng")
        run(["editcap", cap, late, f"1-{frames // 3}"])
        lmsgs, lstats, _ = kwire_json(kwire, late, "--tls-keylog", keys)
        check(any("handshake is not in the capture" in m.get("notKafka", "") for m in lmsgs),
              f"a capture that starts after the handshakes: no connection says so ({lstats})")
        check(lstats["tls_undecrypted"] > 0, f"a capture that starts after the handshakes: {lstats}")
        versions = {v for _, v in suites}
        ids = {s for s, _ in suites}
        print("negotiated (suite, supported_version):", sorted(suites))
        check("0x0304" in versions and "" in versions, f"the captures lack TLS 1.2 or 1.3: {sorted(suites)}")
        check("0x1303" in ids and "0xcca8" in ids and ids & {"0x1301", "0x1302"} and ids & {"0xc02f", "0xc030"},
              f"the captures lack ChaCha20-Poly1305 or AES-GCM in 1.2 or 1.3: {sorted(ids)}")
        check(ids & CBC_SUITES, f"the captures lack a TLS 1.2 AES-CBC suite: {sorted(ids)}")
        # A cluster's capture: Kafka over TLS 1.3 and 1.2 and on two plaintext ports
        # (inter-broker and controller listeners) in one file.
        print("captures with plaintext Kafka beside TLS:", [(n, p, sorted(v)) for n, p, v in cluster])
        check(any(len(p) >= 2 and {"0x0304", ""} <= v for _, p, v in cluster),
              "no capture holds Kafka on two plaintext ports beside TLS 1.3 and TLS 1.2 connections")
        print(f"TLS 1.3 KeyUpdate messages in the captures (tshark, with the key logs): {updates}")
        check(updates > 0, "the captures hold no TLS 1.3 KeyUpdate")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all TLS checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
