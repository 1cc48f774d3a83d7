#!/usr/bin/env python3
"""Walks a pcapng file block by block, independently of libpcap and Wireshark.

usage: pcapng_blocks.py FILE

Prints "blocks=N packets=N interfaces=N trailing=N" (trailing: bytes after the
last whole block, which can only be the start of a block the writer could not
finish). Exits 1 unless the file starts with a section header block, every whole
block has matching leading and trailing lengths, an interface block comes before
the first packet, and at least one packet block is present.
"""
import struct
import sys

SHB, IDB, EPB, SPB = 0x0A0D0D0A, 0x00000001, 0x00000006, 0x00000003


def main():
    data = open(sys.argv[1], "rb").read()
    problems = []
    if len(data) < 28 or struct.unpack_from("<I", data, 0)[0] != SHB:
        print(f"blocks=0 packets=0 interfaces=0 trailing={len(data)}: no section header block at the start")
        return 1
    magic = data[8:12]
    endian = "<" if magic == b"\x4d\x3c\x2b\x1a" else ">"
    pos = blocks = packets = interfaces = 0
    while len(data) - pos >= 12:
        btype, blen = struct.unpack_from(endian + "II", data, pos)
        if blen < 12 or blen % 4:
            problems.append(f"block at offset {pos}: impossible length {blen}")
            break
        if pos + blen > len(data):
            break  # the unfinished last block
        (tail,) = struct.unpack_from(endian + "I", data, pos + blen - 4)
        if tail != blen:
            problems.append(f"block at offset {pos}: length {blen} at the start, {tail} at the end")
            break
        if btype in (EPB, SPB):
            if interfaces == 0:
                problems.append(f"packet block at offset {pos} before any interface block")
            packets += 1
        elif btype == IDB:
            interfaces += 1
        blocks += 1
        pos += blen
    trailing = len(data) - pos
    if packets == 0:
        problems.append("no packet block")
    print(f"blocks={blocks} packets={packets} interfaces={interfaces} trailing={trailing}"
          + ("" if not problems else ": " + "; ".join(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
