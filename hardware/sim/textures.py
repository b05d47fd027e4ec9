"""Images the twin paints on its bodies: the tray with its ArUco markers, and each block's faces.

Pure numpy/OpenCV (no MuJoCo), so the tray layout written to `tray.json` and the texture the
camera sees come from one function and cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from referee.blocks import Block, Color, Kind

# RGB, as printed on the blocks (slightly muted, like painted wood)
BLOCK_RGB: dict[Color, tuple[int, int, int]] = {
    Color.RED: (200, 35, 35),
    Color.YELLOW: (236, 196, 24),
    Color.GREEN: (35, 150, 65),
    Color.BLUE: (30, 85, 200),
}
WILD_BASE_RGB = (25, 25, 25)
FACE_PX = 128  # cube-texture faces are square; the top face is drawn 3:1 and squeezed to fit


@dataclass(frozen=True)
class TrayLayout:
    """Tray geometry in millimetres; tray x/y = world x/y (mm) shifted so the tray's corner is (0, 0)."""

    tray_mm: float = 300.0
    marker_mm: float = 40.0
    marker_inset_mm: float = 12.0  # from the tray edge to the marker's outer edge
    px_per_mm: float = 3.0
    block_mm: tuple[float, float, float] = (75.0, 25.0, 15.0)

    @property
    def tower_center_mm(self) -> tuple[float, float]:
        return (self.tray_mm / 2, self.tray_mm / 2)

    def marker_origins_mm(self) -> dict[int, tuple[float, float]]:
        """Tray (x, y) of each marker's printed top-left corner. Ids 0-3 near the corners:
        0 at (min x, max y), 1 at (max x, max y), 2 at (max x, min y), 3 at (min x, min y); seen from
        the overhead camera (tray +y up in the image) that is top-left, top-right, bottom-right,
        bottom-left."""
        lo = self.marker_inset_mm
        hi = self.tray_mm - self.marker_inset_mm - self.marker_mm
        top = self.tray_mm - self.marker_inset_mm  # a marker's top edge is at its larger y
        return {0: (lo, top), 1: (hi, top), 2: (hi, lo + self.marker_mm), 3: (lo, lo + self.marker_mm)}

    def marker_corners_mm(self) -> dict[int, list[list[float]]]:
        """Corners TL, TR, BR, BL of each printed marker (its own image frame: down = tray -y)."""
        s = self.marker_mm
        out = {}
        for mid, (x, y) in self.marker_origins_mm().items():
            out[mid] = [[x, y], [x + s, y], [x + s, y - s], [x, y - s]]
        return out

    def tray_json(self) -> dict:
        """The CONTRACT section 2 `tray.json` content."""
        return {
            "aruco_dictionary": "DICT_4X4_50",
            "markers": {str(k): [[round(a, 3), round(b, 3)] for a, b in v] for k, v in self.marker_corners_mm().items()},
            "tower_center_mm": [round(c, 3) for c in self.tower_center_mm],
            "block_mm": [round(b, 3) for b in self.block_mm],
        }

    def mm_to_world(self, x_mm: float, y_mm: float) -> tuple[float, float]:
        """Tray millimetres to world metres (tray centre at the world origin)."""
        return ((x_mm - self.tray_mm / 2) / 1000.0, (y_mm - self.tray_mm / 2) / 1000.0)


def tray_texture(layout: TrayLayout) -> np.ndarray:
    """RGB image of the tray top: pale wood, a faint tower outline, and the four markers.

    Image row 0 is the tray's +y edge, column 0 its -x edge (how MuJoCo maps a 2-D texture on a
    box's top face seen from above)."""
    n = int(round(layout.tray_mm * layout.px_per_mm))
    ppm = layout.px_per_mm
    rng = np.random.default_rng(7)  # fixed wood grain: the tray is one physical object
    grain = np.cumsum(rng.normal(0, 1.0, n)) * 0.6
    grain = (grain - grain.mean())[None, :, None]
    base = np.array([214, 190, 150], np.float32)[None, None, :]
    img = np.clip(base + grain + rng.normal(0, 2.0, (n, n, 1)), 0, 255).astype(np.uint8)

    def to_px(x_mm: float, y_mm: float) -> tuple[int, int]:
        return int(round(x_mm * ppm)), int(round((layout.tray_mm - y_mm) * ppm))

    cx, cy = layout.tower_center_mm
    half = layout.block_mm[0] / 2 + 3
    cv2.rectangle(img, to_px(cx - half, cy + half), to_px(cx + half, cy - half), (180, 150, 110), 2)
    dictionary = cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50)
    side_px = int(round(layout.marker_mm * ppm))
    quiet = int(round(4 * ppm))
    for mid, (x, y) in layout.marker_origins_mm().items():
        px, py = to_px(x, y)
        cv2.rectangle(img, (px - quiet, py - quiet), (px + side_px + quiet, py + side_px + quiet), (250, 250, 250), -1)
        marker = cv2.aruco.generateImageMarker(dictionary, mid, side_px)
        img[py : py + side_px, px : px + side_px] = marker[:, :, None]
    return img


def _draw_arrow_pair(canvas: np.ndarray, color: tuple[int, int, int], cx: int, cy: int, r: int) -> None:
    cv2.arrowedLine(canvas, (cx - r, cy - r // 3), (cx + r, cy - r // 3), color, 9, tipLength=0.4)
    cv2.arrowedLine(canvas, (cx + r, cy + r // 3), (cx - r, cy + r // 3), color, 9, tipLength=0.4)


def top_face(block: Block) -> np.ndarray:
    """The printed top of a block, drawn at its true 3:1 shape (RGB, 384x128)."""
    h, w = FACE_PX, 3 * FACE_PX
    cx, cy = w // 2, h // 2
    if block.kind is Kind.WILD:
        canvas = np.empty((h, w, 3), np.uint8)
        canvas[:] = WILD_BASE_RGB
        colors = [BLOCK_RGB[c] for c in (Color.RED, Color.YELLOW, Color.GREEN, Color.BLUE)]
        for i, col in enumerate(colors):  # four colored quadrants of the oval
            mask = np.zeros((h, w), np.uint8)
            cv2.ellipse(mask, (cx, cy), (150, 52), -20, 90 * i, 90 * (i + 1), 255, -1)
            canvas[mask > 0] = col
        cv2.ellipse(canvas, (cx, cy), (150, 52), -20, 0, 360, (245, 245, 245), 5)
        _text(canvas, "W", (245, 245, 245), (20, 20, 20))
        return canvas
    col = BLOCK_RGB[block.color]
    canvas = np.empty((h, w, 3), np.uint8)
    canvas[:] = col
    cv2.ellipse(canvas, (cx, cy), (150, 52), -20, 0, 360, (245, 245, 245), -1)
    if block.kind is Kind.NUMBER:
        _text(canvas, str(block.number), col, (20, 20, 20))
    elif block.kind is Kind.DRAW2:
        _text(canvas, "+2", col, (20, 20, 20))
    elif block.kind is Kind.REVERSE:
        _draw_arrow_pair(canvas, (20, 20, 20), cx, cy, 46)
        _draw_arrow_pair(canvas, col, cx, cy, 42)
    elif block.kind is Kind.SKIP:
        cv2.circle(canvas, (cx, cy), 40, (20, 20, 20), 16)
        cv2.circle(canvas, (cx, cy), 40, col, 10)
        cv2.line(canvas, (cx - 28, cy + 28), (cx + 28, cy - 28), col, 10)
    return canvas


def _text(canvas: np.ndarray, text: str, fill: tuple[int, int, int], outline: tuple[int, int, int]) -> None:
    font, scale = cv2.FONT_HERSHEY_DUPLEX, 3.0
    (tw, th), _ = cv2.getTextSize(text, font, scale, 8)
    org = ((canvas.shape[1] - tw) // 2, (canvas.shape[0] + th) // 2)
    cv2.putText(canvas, text, org, font, scale, outline, 14, cv2.LINE_AA)
    cv2.putText(canvas, text, org, font, scale, fill, 7, cv2.LINE_AA)


def side_face(block: Block, long: bool) -> np.ndarray:
    """A side of a block: its color (the Wild: four stripes), a darker rim like a painted edge."""
    h, w = FACE_PX, FACE_PX
    canvas = np.empty((h, w, 3), np.uint8)
    if block.kind is Kind.WILD:
        cols = [BLOCK_RGB[c] for c in (Color.RED, Color.YELLOW, Color.GREEN, Color.BLUE)]
        for i, c in enumerate(cols):
            canvas[:, i * w // 4 : (i + 1) * w // 4] = c
    else:
        canvas[:] = BLOCK_RGB[block.color]
    rim = (canvas.astype(np.int16) * 0.7).astype(np.uint8)
    canvas[:4], canvas[-4:], canvas[:, :4], canvas[:, -4:] = rim[:4], rim[-4:], rim[:, :4], rim[:, -4:]
    return canvas


def cube_faces(block: Block) -> dict[str, np.ndarray]:
    """The six faces of MuJoCo's cube texture for one block type (keys: fileright ... fileback).

    MuJoCo puts `filefront` on the +Z face; the 3:1 top drawing is squeezed to a square and
    stretched back by the 75x25 mm face, so the glyph reads undistorted."""
    top = cv2.resize(top_face(block), (FACE_PX, FACE_PX), interpolation=cv2.INTER_AREA)
    side = side_face(block, long=True)
    return {
        "fileright": side,
        "fileleft": side,
        "fileup": side,
        "filedown": side,
        "filefront": top,
        "fileback": top,
    }
