#!/usr/bin/env python3
"""A Kafka relay that loses one Produce request, as a broker busy with a
transaction does. A connection's fourth Produce request (or a later one) is held
for up to 2 s. If another Produce follows it on the connection (pipelined), the
held one never reaches the broker: it is answered here with
CONCURRENT_TRANSACTIONS (51, retriable) for each of its partitions, and the one
that followed goes on; the broker, which never saw the held batch, answers it
(and any later batch of that producer) with OUT_OF_ORDER_SEQUENCE_NUMBER.
Otherwise the held request goes on as it came, and a later one is tried. This
happens once per run. Everything else is relayed byte for byte.

    produce_fault_proxy.py READY_FILE LOG_FILE BROKER_HOST:PORT

Listens on a free port of 127.0.0.1, picked now, and writes it to READY_FILE
once listening. LOG_FILE gets one line per event (the held request, the
pipelined one that followed). Runs until killed.
"""
import asyncio
import os
import struct
import sys

PRODUCE = 0
CONCURRENT_TRANSACTIONS = 51
HOLD_S = 2.0   # how long a Produce is held for another to follow it
SKIP = 3       # Produce requests of a connection relayed before one is held


def uvarint(b, at):
    v = shift = 0
    while True:
        c = b[at]
        at += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, at
        shift += 7


def put_uvarint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def skip_tags(b, at):
    n, at = uvarint(b, at)
    for _ in range(n):
        _, at = uvarint(b, at)
        size, at = uvarint(b, at)
        at += size
    return at


def produce_partitions(msg):
    """(version, correlation id, [(topic bytes, [partition, ...]), ...]) of a
    Produce request (size prefix excluded); topic bytes are its name (or its
    id from v13) as the response carries them."""
    _, version, corr = struct.unpack_from(">hhi", msg, 0)
    flexible = version >= 9
    at = 8
    n = struct.unpack_from(">h", msg, at)[0]          # client id: a plain nullable string
    at += 2 + max(n, 0)
    if flexible:
        at = skip_tags(msg, at)
        n, at = uvarint(msg, at)                      # transactional id
        at += max(n - 1, 0)
    else:
        n = struct.unpack_from(">h", msg, at)[0]
        at += 2 + max(n, 0)
    at += 2 + 4                                        # acks, timeout
    topics = []
    if flexible:
        count, at = uvarint(msg, at)
        count -= 1
    else:
        count = struct.unpack_from(">i", msg, at)[0]
        at += 4
    for _ in range(count):
        if version >= 13:
            topic = msg[at:at + 16]
            at += 16
        elif flexible:
            n, at = uvarint(msg, at)
            topic = msg[at:at + n - 1]
            at += n - 1
        else:
            n = struct.unpack_from(">h", msg, at)[0]
            topic = msg[at:at + 2 + n][2:]
            at += 2 + n
        parts = []
        if flexible:
            pc, at = uvarint(msg, at)
            pc -= 1
        else:
            pc = struct.unpack_from(">i", msg, at)[0]
            at += 4
        for _ in range(pc):
            parts.append(struct.unpack_from(">i", msg, at)[0])
            at += 4
            if flexible:
                n, at = uvarint(msg, at)
                at += max(n - 1, 0)
                at = skip_tags(msg, at)
            else:
                n = struct.unpack_from(">i", msg, at)[0]
                at += 4 + max(n, 0)
        if flexible:
            at = skip_tags(msg, at)
        topics.append((topic, parts))
    return version, corr, topics


def produce_error_response(version, corr, topics, code):
    """A Produce response (size prefix included) with `code` for every partition."""
    flexible = version >= 9
    body = bytearray()
    body += put_uvarint(len(topics) + 1) if flexible else struct.pack(">i", len(topics))
    for topic, parts in topics:
        if version >= 13:
            body += topic
        elif flexible:
            body += put_uvarint(len(topic) + 1) + topic
        else:
            body += struct.pack(">h", len(topic)) + topic
        body += put_uvarint(len(parts) + 1) if flexible else struct.pack(">i", len(parts))
        for p in parts:
            body += struct.pack(">ihq", p, code, -1)
            if version >= 2:
                body += struct.pack(">q", -1)          # log append time
            if version >= 5:
                body += struct.pack(">q", -1)          # log start offset
            if version >= 8:                           # record errors, error message
                body += put_uvarint(1) + put_uvarint(0) if flexible else struct.pack(">ih", 0, -1)
            if flexible:
                body += b"\x00"
        if flexible:
            body += b"\x00"
    body += struct.pack(">i", 0)                       # throttle time
    if flexible:
        body += b"\x00"
    header = struct.pack(">i", corr) + (b"\x00" if flexible else b"")
    msg = header + bytes(body)
    return struct.pack(">i", len(msg)) + msg


class State:
    done = False  # the fault was made (once per run)


def log(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


async def relay(host, port, logfile, client_reader, client_writer):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        client_writer.close()
        return
    outstanding = 0          # requests relayed to the broker and not yet answered
    answered = asyncio.Event()
    answered.set()
    client_lock = asyncio.Lock()

    def release_held(size, msg):
        # No Produce followed it in time: it goes on as it came.
        nonlocal outstanding, held
        log(logfile, f"relayed the held correlation id {held[1]}: no Produce followed within {HOLD_S} s")
        held = None
        outstanding += 1
        writer.write(struct.pack(">i", size) + msg)

    held = None
    release = None

    async def to_broker():
        nonlocal outstanding, held
        produced = 0
        try:
            while True:
                size = struct.unpack(">i", await client_reader.readexactly(4))[0]
                msg = await client_reader.readexactly(size)
                api = struct.unpack_from(">h", msg, 0)[0]
                if api == PRODUCE:
                    produced += 1
                # Not one of the first batches: a broker takes any first sequence of a
                # producer it has no state for.
                if api == PRODUCE and not State.done and produced > SKIP:
                    if held is None:
                        held = produce_partitions(msg)
                        log(logfile, f"held Produce v{held[0]} correlation id {held[1]}")
                        release = asyncio.get_running_loop().call_later(HOLD_S, release_held, size, msg)
                        continue
                    release.cancel()
                    State.done = True
                    # The held one is answered first, in request order, after every
                    # request relayed before it.
                    while outstanding:
                        answered.clear()
                        await answered.wait()
                    async with client_lock:
                        client_writer.write(produce_error_response(*held, CONCURRENT_TRANSACTIONS))
                        await client_writer.drain()
                    log(logfile, f"answered correlation id {held[1]} with {CONCURRENT_TRANSACTIONS}; "
                                 f"relayed the pipelined Produce correlation id {struct.unpack_from('>i', msg, 4)[0]}")
                outstanding += 1
                writer.write(struct.pack(">i", size) + msg)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def to_client():
        nonlocal outstanding
        try:
            while True:
                head = await reader.readexactly(4)
                msg = await reader.readexactly(struct.unpack(">i", head)[0])
                async with client_lock:
                    client_writer.write(head + msg)
                    await client_writer.drain()
                outstanding -= 1
                answered.set()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            client_writer.close()

    await asyncio.gather(to_broker(), to_client())


async def main():
    ready, logfile, target = sys.argv[1], sys.argv[2], sys.argv[3]
    host, port = target.rsplit(":", 1)
    server = await asyncio.start_server(lambda r, w: relay(host, int(port), logfile, r, w), "127.0.0.1", 0)
    with open(ready + ".tmp", "w") as f:
        f.write(f"127.0.0.1:{server.sockets[0].getsockname()[1]}\n")
    os.rename(ready + ".tmp", ready)
    await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
