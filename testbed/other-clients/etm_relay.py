"""A TLS 1.2 endpoint in front of the broker's PLAINTEXT listener, for
testbed/scenario tls-python: Python's ssl module (OpenSSL) terminates TLS on
127.0.0.1:PORT and passes the Kafka bytes to and from BROKER_PORT. OpenSSL
negotiates encrypt_then_mac (RFC 7366) with a CBC suite, which the Java
broker does not. The relay stands in for the broker: where a response
advertises the broker's address (Metadata, FindCoordinator), its port is
rewritten to the relay's, so the client keeps coming back through TLS.

    etm_relay.py PORT BROKER_PORT CERT KEY CIPHER

Prints "relay: listening" once it accepts connections; runs until killed.
"""
import select
import socket
import ssl
import struct
import sys
import threading

port, broker_port, cert, key, cipher = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
HOST = b"127.0.0.1"
# The broker's host then port, as a compact string (flexible versions) and as a string.
ADDRESSES = [(bytes([len(HOST) + 1]) + HOST + struct.pack(">i", broker_port),
              bytes([len(HOST) + 1]) + HOST + struct.pack(">i", port)),
             (struct.pack(">h", len(HOST)) + HOST + struct.pack(">i", broker_port),
              struct.pack(">h", len(HOST)) + HOST + struct.pack(">i", port))]

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.maximum_version = ssl.TLSVersion.TLSv1_2
ctx.set_ciphers(cipher)
ctx.load_cert_chain(cert, key)


def serve(raw):
    try:
        client = ctx.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError) as e:
        print(f"relay: handshake failed: {e}", file=sys.stderr)
        raw.close()
        return
    broker = socket.create_connection(("127.0.0.1", broker_port))
    # One thread per connection, one SSL object used by it alone.
    pending = bytearray()  # broker bytes not yet a whole response
    try:
        while True:
            ready = [client] if client.pending() else select.select([client, broker], [], [])[0]
            if client in ready:
                b = client.recv(65536)
                if not b:
                    break
                broker.sendall(b)
            if broker in ready:
                b = broker.recv(65536)
                if not b:
                    break
                pending += b
                while len(pending) >= 4 and len(pending) >= 4 + struct.unpack_from(">i", pending)[0]:
                    n = 4 + struct.unpack_from(">i", pending)[0]
                    body = bytes(pending[4:n])
                    del pending[:n]
                    for old, new in ADDRESSES:
                        body = body.replace(old, new)
                    client.sendall(struct.pack(">i", len(body)) + body)
    except OSError:
        pass
    broker.close()
    try:
        client.unwrap()
    except (OSError, ValueError):
        pass
    client.close()


listener = socket.create_server(("127.0.0.1", port))
print("relay: listening", flush=True)
while True:
    conn, _ = listener.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
