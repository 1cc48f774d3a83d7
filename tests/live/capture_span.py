#!/usr/bin/env python3
"""Prints how long a pcapng capture lasts, in whole seconds rounded up: the time
between its first and last packet, read from the enhanced packet blocks' timestamps
(the interface's if_tsresol, microseconds by default), independently of kwire.

usage: capture_span.py FILE.pcapng
"""
import math
import struct
import sys

SHB, IDB, EPB = 0x0A0D0D0A, 0x00000001, 0x00000006


def main():
    data = open(sys.argv[1], "rb").read()
    endian = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
    pos, resolutions, first, last = 0, [], None, None
    while len(data) - pos >= 12:
        btype, blen = struct.unpack_from(endian + "II", data, pos)
        if blen < 12 or pos + blen > len(data):
            break
        if btype == SHB:
            resolutions = []
        elif btype == IDB:
            res = 1e-6
            opt = pos + 16
            while opt + 4 <= pos + blen - 4:
                code, olen = struct.unpack_from(endian + "HH", data, opt)
                if code == 0:
                    break
                if code == 9:  # if_tsresol
                    v = data[opt + 4]
                    res = 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0 ** -v
                opt += 4 + (olen + 3) // 4 * 4
            resolutions.append(res)
        elif btype == EPB:
            iface, hi, lo = struct.unpack_from(endian + "III", data, pos + 8)
            t = ((hi << 32) | lo) * resolutions[iface]
            first = t if first is None else min(first, t)
            last = t if last is None else max(last, t)
        pos += blen
    if first is None:
        sys.exit("capture_span.py: no packet in " + sys.argv[1])
    print(math.ceil(last - first))


if __name__ == "__main__":
    main()
