#!/usr/bin/env python3
"""docs/gallery/png8.py: make a gallery PNG small: gnuplot's pngcairo writes
8-bit RGB(A) with a few thousand colours (anti-aliased edges); this keeps the
256 most frequent colours, maps every other one to the nearest of them, and
writes an 8-bit palette PNG at zlib level 9 (about a third of the size).

usage: png8.py IN.png OUT.png   (standard library only)
"""
import struct
import sys
import zlib


def chunks(data):
    i = 8
    while i < len(data):
        n = struct.unpack(">I", data[i:i + 4])[0]
        yield data[i + 4:i + 8], data[i + 8:i + 8 + n]
        i += 12 + n


def rows_of(data):
    """The image's width, height and unfiltered rows of RGB triples."""
    idat = b"".join(d for t, d in chunks(data) if t == b"IDAT")
    ihdr = next(d for t, d in chunks(data) if t == b"IHDR")
    w, h, depth, kind, _, _, interlace = struct.unpack(">IIBBBBB", ihdr)
    if depth != 8 or kind not in (2, 6) or interlace:
        sys.exit("png8.py: only 8-bit RGB or RGBA, not interlaced")
    bpp = 3 if kind == 2 else 4
    raw, stride, pos = zlib.decompress(idat), w * bpp, 0
    prev, out = bytearray(stride), []
    for _ in range(h):
        f, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        # Composite on white: the figures have an opaque background anyway.
        px = []
        for i in range(0, stride, bpp):
            r, g, bl = line[i], line[i + 1], line[i + 2]
            if bpp == 4 and line[i + 3] != 255:
                al = line[i + 3]
                r, g, bl = ((v * al + 255 * (255 - al)) // 255 for v in (r, g, bl))
            px.append((r, g, bl))
        out.append(px)
    return w, h, out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    w, h, rows = rows_of(open(sys.argv[1], "rb").read())
    count = {}
    for row in rows:
        for p in row:
            count[p] = count.get(p, 0) + 1
    palette = sorted(count, key=count.get, reverse=True)[:256]
    index = {p: i for i, p in enumerate(palette)}
    for p in count:
        if p not in index:
            index[p] = min(range(len(palette)),
                           key=lambda i: sum((x - y) ** 2 for x, y in zip(p, palette[i])))
    raw = b"".join(b"\0" + bytes(index[p] for p in row) for row in rows)

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0))
    png += chunk(b"PLTE", b"".join(bytes(p) for p in palette))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    open(sys.argv[2], "wb").write(png)


if __name__ == "__main__":
    main()
