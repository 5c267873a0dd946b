"""Zero the GPU code a CUDA library carries for other chips, so that it compresses to what one chip needs.

    python benchmarks/fatbin_keep.py LIB.so ARCH     # e.g. libonnxruntime_providers_cuda.so 90, in place

onnxruntime-gpu 1.31.1's CUDA provider is 284 MB, 219 MB of it device code (``.nv_fatbin``) for sm 7.5, 8.0,
8.6, 8.9, 9.0 and 12.0, already compressed: its wheel is 256 MB, five of the device tool's 60 MiB calls. Only
the sm 9.0 cubins run on an H200, so the other cubins' payloads are overwritten with zeros in place; every
header stays (offsets and sizes unchanged), and the driver, which picks the cubin for the chip it runs on,
never opens the others. The file then compresses to about half. A fatbin with no cubin for ARCH is left as
it is. For carrying a library to a lent machine of one known chip, never for a user's install.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

MAGIC = 0xBA55ED50


def fatbin_section(path: str) -> tuple[int, int]:
    for line in subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        if ".nv_fatbin" in line:
            fields = line.split("]", 1)[1].split()
            return int(fields[3], 16), int(fields[4], 16)
    raise SystemExit(f"{path}: no .nv_fatbin section")


def entries(data: bytearray, start: int, end: int):
    """(fatbin start, [(kind, arch, payload offset, payload size)]) for each fatbin in the section."""
    pos = start
    while pos < end:
        magic, _version, header, size = struct.unpack_from("<IHHQ", data, pos)
        if magic != MAGIC:
            pos += 8
            continue
        out, e = [], pos + header
        while e < pos + header + size:
            kind, _v, eh, payload = struct.unpack_from("<HHIQ", data, e)
            arch = struct.unpack_from("<I", data, e + 28)[0]
            out.append((kind, arch, e + eh, payload))
            e += eh + payload
        yield pos, out
        pos += header + size


def main() -> None:
    path, keep = sys.argv[1], int(sys.argv[2])
    data = bytearray(Path(path).read_bytes())
    start, size = fatbin_section(path)
    zeroed, kept, whole = Counter(), Counter(), 0
    for _, found in entries(data, start, start + size):
        if not any(kind == 2 and arch == keep for kind, arch, _, _ in found):
            whole += 1
            continue
        for kind, arch, offset, payload in found:
            if kind == 2 and arch != keep:
                data[offset:offset + payload] = bytes(payload)
                zeroed[arch] += payload
            else:
                kept[(kind, arch)] += payload
    Path(path).write_bytes(bytes(data))
    print(f"zeroed {sum(zeroed.values()) / 1e6:.1f} MB ({dict(zeroed)}), kept {sum(kept.values()) / 1e6:.1f} MB "
          f"({dict(kept)}), fatbins without sm {keep} left whole: {whole}")


if __name__ == "__main__":
    main()
