"""Small pcap files of hand-built Kafka messages, for the malformed-input and
coexistence tests. The messages are built here from the wire format (see
PROTOCOL-NOTES.md), not with kwire's encoder."""
import struct

ETH_IP = b"\x00" * 12 + b"\x08\x00"


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def string(s): return i16(-1) if s is None else i16(len(s)) + s.encode()


def request(api_key, version, corr, body, client_id="kwire-test", flexible=False):
    """A request with header v1 (v2 with its empty tagged-field section when
    the api version is flexible)."""
    header = i16(api_key) + i16(version) + i32(corr) + string(client_id) + (b"\x00" if flexible else b"")
    payload = header + body
    return i32(len(payload)) + payload


def response(corr, body, flexible=False):
    payload = i32(corr) + (b"\x00" if flexible else b"") + body
    return i32(len(payload)) + payload


def api_versions_v0_response(corr, keys):
    """ApiVersionsResponse v0: ErrorCode, ApiKeys [ApiKey, MinVersion, MaxVersion]."""
    body = i16(0) + i32(len(keys)) + b"".join(i16(k) + i16(lo) + i16(hi) for k, lo, hi in keys)
    return response(corr, body)


def _checksum(b):
    if len(b) % 2:
        b += b"\x00"
    s = sum(struct.unpack(f">{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


class Pcap:
    """Ethernet/IPv4/TCP packets, one connection at a time, with handshakes."""

    def __init__(self):
        self.packets = []
        self.t = 1_700_000_000.0

    def _packet(self, src, dst, sport, dport, seq, ack, flags, data):
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
        total = 20 + len(tcp) + len(data)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0, bytes(src), bytes(dst))
        ip = ip[:10] + struct.pack(">H", _checksum(ip)) + ip[12:]
        pseudo = bytes(src) + bytes(dst) + struct.pack(">BBH", 0, 6, len(tcp) + len(data))
        csum = _checksum(pseudo + tcp + data)
        tcp = tcp[:16] + struct.pack(">H", csum) + tcp[18:]
        self.t += 0.001
        frame = ETH_IP + ip + tcp + data
        cut = getattr(self, "caplen", None)
        self.packets.append((self.t, frame, len(frame) - len(data) + cut if cut is not None else len(frame)))

    def connection(self, client_port, broker_port, exchanges, client=(10, 0, 0, 2), broker=(10, 0, 0, 1),
                   isn=(1000, 5000)):
        """exchanges: list of (from_client: bool, bytes); each is one segment.
        isn: the initial sequence numbers of client and broker (another pair
        makes a second connection on the same ports a new one for TCP)."""
        cseq, bseq = isn
        self._packet(client, broker, client_port, broker_port, cseq, 0, 0x02, b"")
        self._packet(broker, client, broker_port, client_port, bseq, cseq + 1, 0x12, b"")
        cseq += 1
        bseq += 1
        self._packet(client, broker, client_port, broker_port, cseq, bseq, 0x10, b"")
        for ex in exchanges:
            from_client, data = ex[0], ex[1]
            self.caplen = ex[2] if len(ex) > 2 else None
            if from_client:
                self._packet(client, broker, client_port, broker_port, cseq, bseq, 0x18, data)
                cseq += len(data)
            else:
                self._packet(broker, client, broker_port, client_port, bseq, cseq, 0x18, data)
                bseq += len(data)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for t, data, caplen in self.packets:
                sec = int(t)
                usec = int(round((t - sec) * 1e6))
                f.write(struct.pack("<IIII", sec, usec, caplen, len(data)) + data[:caplen])
