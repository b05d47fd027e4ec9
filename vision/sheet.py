"""The printable tray sheet (`stacko calibrate markers`): true-scale PNG and PDF plus tray.json."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from vision.synthkit import default_tray, tray_sheet


def write_sheet(out: str | Path, size_mm: float = 280.0, marker_mm: float = 34.0, dpi: int = 300) -> list[Path]:
    if not 100 <= size_mm <= 600:
        raise ValueError("the tray side must be between 100 and 600 mm")
    if not 15 <= marker_mm <= size_mm / 4:
        raise ValueError("the markers must be at least 15 mm and at most a quarter of the tray side")
    if not 72 <= dpi <= 1200:
        raise ValueError("the print resolution must be between 72 and 1200 dpi")
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    tray = default_tray(size_mm, marker_mm)
    ppm = dpi / 25.4
    img, _, _ = tray_sheet(tray, ppm, (255, 255, 255), bounds=(0.0, 0.0, size_mm, size_mm))
    # a 10 mm cross at the tower centre and a 100 mm scale bar to check the print scale
    c = (int(round(tray.tower_center[0] * ppm)), int(round((size_mm - tray.tower_center[1]) * ppm)))
    k = int(5 * ppm)
    cv2.line(img, (c[0] - k, c[1]), (c[0] + k, c[1]), (160, 160, 160), max(1, int(0.3 * ppm)))
    cv2.line(img, (c[0], c[1] - k), (c[0], c[1] + k), (160, 160, 160), max(1, int(0.3 * ppm)))
    y = int((size_mm - 4) * ppm)
    x0 = int((size_mm / 2 - 50) * ppm)
    cv2.line(img, (x0, y), (x0 + int(100 * ppm), y), (0, 0, 0), max(1, int(0.4 * ppm)))
    cv2.putText(img, "100 mm", (x0 + int(40 * ppm), y - int(1.5 * ppm)), cv2.FONT_HERSHEY_SIMPLEX, ppm / 12, (0, 0, 0),
                max(1, int(0.2 * ppm)), cv2.LINE_AA)
    png = d / "tray-sheet.png"
    bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".png", bgr)
    png.write_bytes(_with_dpi(buf.tobytes(), dpi))
    pdf = d / "tray-sheet.pdf"
    _write_pdf(pdf, cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY), size_mm)
    tj = d / "tray.json"
    tj.write_text(json.dumps(tray.to_json(), indent=1) + "\n", encoding="utf-8")
    return [png, pdf, tj]


def _with_dpi(png: bytes, dpi: int) -> bytes:
    """Insert a pHYs chunk so printers use the true scale."""
    import struct
    import zlib

    ppm = int(round(dpi / 0.0254))
    data = struct.pack(">IIB", ppm, ppm, 1)
    chunk = struct.pack(">I", len(data)) + b"pHYs" + data + struct.pack(">I", zlib.crc32(b"pHYs" + data) & 0xFFFFFFFF)
    return png[:33] + chunk + png[33:]  # after the signature (8) and IHDR (25)


def _write_pdf(path: Path, gray: np.ndarray, size_mm: float) -> None:
    """A one-page PDF with the sheet as a grey image placed at its true size (no extra library)."""
    import zlib

    h, w = gray.shape
    pts = size_mm / 25.4 * 72
    page_w, page_h = max(pts + 36, 595.0), max(pts + 36, 842.0)
    x0, y0 = (page_w - pts) / 2, (page_h - pts) / 2
    content = f"q {pts:.3f} 0 0 {pts:.3f} {x0:.3f} {y0:.3f} cm /Im0 Do Q".encode()
    img = zlib.compress(gray.tobytes())
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {page_w:.2f} {page_h:.2f}] /Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>".encode(),
        f"<< /Type /XObject /Subtype /Image /Width {w} /Height {h} /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length {len(img)} >>\nstream\n".encode() + img + b"\nendstream",
        f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + o + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
