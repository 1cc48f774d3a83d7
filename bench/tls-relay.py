#!/usr/bin/env python3
"""Sends the traffic of a plaintext capture again, connection by connection,
over real loopback sockets: with --tls through TLS 1.3 (Python's ssl module,
OpenSSL underneath), the client writing a key log; without, in the clear. Run
it under tcpdump and both captures carry the same Kafka bytes, cut into
segments by the same kernel.

  tls-relay.py CAPTURE.pcap PORT [--tls KEYLOG CERT KEY]

CAPTURE is a pcap of Ethernet/IPv4/TCP in order (what kwire-gencap writes);
each connection's payload is replayed in its recorded order of chunks.
"""
import socket
import ssl
import struct
import sys
import threading


def connections(path):
    data = open(path, "rb").read()
    magic = struct.unpack_from("<I", data, 0)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    pos, conns, order = 24, {}, []
    while pos + 16 <= len(data):
        _, _, caplen, _ = struct.unpack_from(endian + "IIII", data, pos)
        frame = data[pos + 16:pos + 16 + caplen]
        pos += 16 + caplen
        if len(frame) < 54 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        ihl = (frame[14] & 15) * 4
        tcp = 14 + ihl
        sport, dport = struct.unpack_from(">HH", frame, tcp)
        off = (frame[tcp + 12] >> 4) * 4
        payload = frame[tcp + off:]
        src, dst = frame[26:30] + bytes([sport >> 8, sport & 255]), frame[30:34] + bytes([dport >> 8, dport & 255])
        key = tuple(sorted((src, dst)))
        if key not in conns:
            conns[key] = {"client": src, "chunks": []}
            order.append(key)
        if payload:
            c = conns[key]
            from_client = src == c["client"]
            if c["chunks"] and c["chunks"][-1][0] == from_client:
                c["chunks"][-1][1].extend(payload)
            else:
                c["chunks"].append((from_client, bytearray(payload)))
    return [conns[k]["chunks"] for k in order if conns[k]["chunks"]]


def recv_exactly(s, n):
    while n > 0:
        b = s.recv(min(n, 1 << 20))
        if not b:
            raise SystemExit("tls-relay: connection closed early")
        n -= len(b)


def side(sock, chunks, mine):
    for from_client, data in chunks:
        if from_client == mine:
            sock.sendall(data)
        else:
            recv_exactly(sock, len(data))


def main():
    cap, port = sys.argv[1], int(sys.argv[2])
    tls = len(sys.argv) > 3 and sys.argv[3] == "--tls"
    if tls:
        keylog, cert, key = sys.argv[4:7]
        sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        sctx.load_cert_chain(cert, key)
        cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        cctx.check_hostname = False
        cctx.verify_mode = ssl.CERT_NONE
        cctx.keylog_filename = keylog
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(1)
    total = 0
    conns = connections(cap)
    for chunks in conns:
        client = socket.create_connection(("127.0.0.1", port))
        server, _ = listener.accept()
        if tls:
            done = {}
            t = threading.Thread(target=lambda: done.setdefault("s", sctx.wrap_socket(server, server_side=True)))
            t.start()
            client = cctx.wrap_socket(client)
            t.join()
            server = done["s"]
        t = threading.Thread(target=side, args=(server, chunks, False))
        t.start()
        side(client, chunks, True)
        t.join()
        client.close()
        server.close()
        total += sum(len(d) for _, d in chunks)
    print(f"tls-relay: {len(conns)} connections, {total} bytes{' over TLS' if tls else ''}")


if __name__ == "__main__":
    main()
