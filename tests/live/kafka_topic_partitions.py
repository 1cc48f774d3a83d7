#!/usr/bin/env python3
"""Prints the partition count of a topic as a Kafka broker reports it, asked with
a Metadata v1 request written byte by byte here (independent of kwire's codec).

    kafka_topic_partitions.py HOST:PORT TOPIC

A topic the broker does not know yet, or whose leader it does not know yet, is asked
for again for up to 60 s: a broker's metadata can lag a moment behind the CreateTopics
answer its controller gave.
"""
import socket
import struct
import sys
import time

RETRIABLE = {3: "UNKNOWN_TOPIC_OR_PARTITION", 5: "LEADER_NOT_AVAILABLE"}
WAIT_SECONDS = 60  # a failure bound, not a speed check


def string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    topic = sys.argv[2]
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        err, nparts = ask(host, int(port), topic)
        if err == 0:
            print(nparts)
            return
        if err not in RETRIABLE or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    if err is None:
        sys.exit(f"topic {topic} not in the response")
    sys.exit(f"topic {topic}: error {err}" + (f" {RETRIABLE[err]} for {WAIT_SECONDS} s" if err in RETRIABLE else ""))


def ask(host, port, topic):
    """(error code, partition count) of the topic in a Metadata v1 answer; (None, 0) if absent."""
    # Request header v1: api key 3 (Metadata), version 1, correlation id 7, client id.
    body = struct.pack(">hhi", 3, 1, 7) + string("kwire-test") + struct.pack(">i", 1) + string(topic)
    with socket.create_connection((host, port), timeout=60) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                sys.exit("connection closed")
            data += chunk
    p = 4
    corr, = struct.unpack_from(">i", data, p); p += 4
    assert corr == 7, corr
    nbrokers, = struct.unpack_from(">i", data, p); p += 4
    for _ in range(nbrokers):
        p += 4                                   # node id
        n, = struct.unpack_from(">h", data, p); p += 2 + n   # host
        p += 4                                   # port
        n, = struct.unpack_from(">h", data, p); p += 2 + max(n, 0)  # rack (nullable)
    p += 4                                       # controller id
    ntopics, = struct.unpack_from(">i", data, p); p += 4
    for _ in range(ntopics):
        err, = struct.unpack_from(">h", data, p); p += 2
        n, = struct.unpack_from(">h", data, p); name = data[p + 2:p + 2 + n].decode(); p += 2 + n
        p += 1                                   # is internal
        nparts, = struct.unpack_from(">i", data, p); p += 4
        if name == topic:
            return err, nparts
        for _ in range(nparts):
            p += 2 + 4 + 4                       # error, index, leader
            for _ in range(2):                   # replicas, isr
                k, = struct.unpack_from(">i", data, p); p += 4 + 4 * k
    return None, 0


if __name__ == "__main__":
    main()
