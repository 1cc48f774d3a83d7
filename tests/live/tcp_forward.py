#!/usr/bin/env python3
"""Port-forwards, as a NAT or `kubectl port-forward` gives them: each LISTEN port
on 127.0.0.1 relays every connection to its TARGET, byte for byte.

    tcp_forward.py READY_FILE TARGET_HOST:PORT...

Each target gets a free port on 127.0.0.1, picked now. Once all listen, READY_FILE
is written, one line per target: "TARGET_HOST:PORT 127.0.0.1:LISTEN_PORT". Runs until
killed.
"""
import asyncio
import os
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


def handler(host, port):
    async def handle(client_reader, client_writer):
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, writer), pipe(reader, client_writer))
    return handle


async def main():
    ready, targets = sys.argv[1], sys.argv[2:]
    lines = []
    servers = []
    for t in targets:
        host, port = t.rsplit(":", 1)
        server = await asyncio.start_server(handler(host, int(port)), "127.0.0.1", 0)
        servers.append(server)
        lines.append(f"{t} 127.0.0.1:{server.sockets[0].getsockname()[1]}")
    tmp = ready + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(tmp, ready)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
