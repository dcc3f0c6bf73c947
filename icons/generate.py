#!/usr/bin/env python3
"""Draws Lifeline's app icon (a white pulse line on a teal rounded square) as RGBA PNGs.

Run once from anywhere: `python3 icons/generate.py`; the PNGs are committed. Only the standard
library (zlib + struct), so it needs nothing installed. Tauri wants RGBA (an RGB PNG fails the
build with "icon ... is not RGBA"). Edges are anti-aliased from signed distances, no
supersampling.
"""

import math
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# The pulse, in units of the icon's side (0..1, y down): flat, a small bump, the spike, flat.
PULSE = [
    (0.14, 0.55), (0.34, 0.55), (0.40, 0.47), (0.46, 0.55), (0.52, 0.55),
    (0.58, 0.25), (0.65, 0.76), (0.71, 0.55), (0.86, 0.55),
]
TOP = (20, 184, 166)     # teal-500
BOTTOM = (15, 94, 89)    # darker teal
LINE = (255, 255, 255)


def rounded_square_distance(x, y, size, radius):
    """Signed distance (pixels) from (x, y) to a rounded square filling the canvas; < 0 inside."""
    half = size / 2
    qx = abs(x - half) - (half - radius)
    qy = abs(y - half) - (half - radius)
    outside = math.hypot(max(qx, 0.0), max(qy, 0.0))
    return outside + min(max(qx, qy), 0.0) - radius


def segment_distance(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)
    t = min(max(t, 0.0), 1.0)
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def coverage(distance):
    """Anti-aliased coverage of a pixel whose centre is `distance` inside (< 0) an edge."""
    return min(max(0.5 - distance, 0.0), 1.0)


def draw(size):
    margin = size * 0.04
    inner = size - 2 * margin
    radius = inner * 0.22
    half_width = max(size * 0.032, 1.0)
    points = [(margin + x * inner, margin + y * inner) for x, y in PULSE]
    rows = []
    for j in range(size):
        row = bytearray([0])  # filter: none
        y = j + 0.5
        t = j / max(size - 1, 1)
        bg = [round(TOP[k] + (BOTTOM[k] - TOP[k]) * t) for k in range(3)]
        for i in range(size):
            x = i + 0.5
            shape = coverage(rounded_square_distance(x - margin, y - margin, inner, radius))
            if shape == 0.0:
                row += b"\0\0\0\0"
                continue
            d = min(
                segment_distance(x, y, *points[k], *points[k + 1]) for k in range(len(points) - 1)
            )
            line = coverage(d - half_width)
            rgb = [round(bg[k] + (LINE[k] - bg[k]) * line) for k in range(3)]
            row += bytes(rgb + [round(255 * shape)])
        rows.append(bytes(row))
    return b"".join(rows)


def png(size, pixels):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(pixels, 9))
        + chunk(b"IEND", b"")
    )


def ico(sizes):
    """A Windows .ico holding a PNG per size (Vista and later read PNG entries); 256 is
    written as 0 in the directory, as the format wants."""
    images = [png(size, draw(size)) for size in sizes]
    header = struct.pack("<HHH", 0, 1, len(images))
    offset = len(header) + 16 * len(images)
    entries = b""
    for size, data in zip(sizes, images):
        side = 0 if size >= 256 else size
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(data), offset)
        offset += len(data)
    return header + entries + b"".join(images)


def main():
    for name, size in [
        ("32x32.png", 32),
        ("128x128.png", 128),
        ("128x128@2x.png", 256),
        ("icon.png", 512),
    ]:
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(png(size, draw(size)))
        print(f"icons/{name}: {size}x{size} RGBA")
    # The Windows resource and installer icon: tauri-build embeds the first .ico of
    # bundle.icon, listed for Windows only in src-tauri/tauri.windows.conf.json.
    sizes = [16, 32, 48, 256]
    with open(os.path.join(HERE, "icon.ico"), "wb") as f:
        f.write(ico(sizes))
    print(f"icons/icon.ico: {sizes}")


if __name__ == "__main__":
    main()
