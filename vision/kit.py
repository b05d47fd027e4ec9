"""Vision kits (CONTRACT.md section 2): tray.json, images/, labels.json; loading with clear errors."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Mapping

import numpy as np

from referee.blocks import Block, BlockError

ORIENTATIONS = ("x", "y")


class KitError(ValueError):
    """A kit or tray file that cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Tray:
    """The loading tray: marker corners (mm), tower centre and block size."""

    dictionary: str
    markers: Mapping[int, np.ndarray]  # id -> (4,2) corners in mm, ArUco corner order
    tower_center: tuple[float, float]
    block_mm: tuple[float, float, float]  # length, width, height

    @property
    def footprint_half(self) -> float:
        """Half the tower's side: three block widths make one block length."""
        return max(self.block_mm[0], 3 * self.block_mm[1]) / 2.0

    def to_json(self) -> dict:
        return {
            "aruco_dictionary": self.dictionary,
            "markers": {str(k): np.asarray(v).round(3).tolist() for k, v in sorted(self.markers.items())},
            "tower_center_mm": [float(self.tower_center[0]), float(self.tower_center[1])],
            "block_mm": [float(v) for v in self.block_mm],
        }

    def extent(self) -> tuple[float, float, float, float]:
        """min x, min y, max x, max y over all marker corners."""
        return self._extent

    @cached_property
    def _extent(self) -> tuple[float, float, float, float]:
        """(extent, worked out once: the reader asks for it several times a frame)"""
        allc = np.concatenate([np.asarray(c) for c in self.markers.values()])
        return float(allc[:, 0].min()), float(allc[:, 1].min()), float(allc[:, 0].max()), float(allc[:, 1].max())


def _read_json(path: Path, what: str) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KitError(f"the {what} {path} is missing") from None
    except OSError as exc:
        raise KitError(f"cannot read the {what} {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KitError(f"the {what} {path} is not valid JSON: {exc}") from None


def tray_from_json(data: object, where: str = "tray.json") -> Tray:
    if not isinstance(data, dict):
        raise KitError(f"{where} must be a JSON object with aruco_dictionary, markers, tower_center_mm, block_mm")
    dictionary = data.get("aruco_dictionary", "DICT_4X4_50")
    if dictionary != "DICT_4X4_50":
        raise KitError(f"{where}: only the ArUco dictionary DICT_4X4_50 is supported, not {dictionary!r}")
    raw = data.get("markers")
    if not isinstance(raw, dict) or not raw:
        raise KitError(f"{where}: 'markers' must map marker ids to their four corners in mm")
    markers: dict[int, np.ndarray] = {}
    for key, corners in raw.items():
        try:
            mid = int(key)
            arr = np.asarray(corners, dtype=np.float64)
        except (TypeError, ValueError):
            raise KitError(f"{where}: marker {key!r} must have an integer id and four [x, y] corners") from None
        if arr.shape != (4, 2) or not np.all(np.isfinite(arr)):
            raise KitError(f"{where}: marker {key} must have four [x, y] corners in mm")
        markers[mid] = arr
    if len(markers) < 2:
        raise KitError(f"{where}: at least two markers are needed to find the tray")
    center = data.get("tower_center_mm")
    block = data.get("block_mm", [75, 25, 15])
    try:
        cx, cy = (float(v) for v in center)
        bl, bw, bh = (float(v) for v in block)
    except (TypeError, ValueError):
        raise KitError(f"{where}: tower_center_mm must be [x, y] and block_mm [length, width, height]") from None
    if min(bl, bw, bh) <= 0:
        raise KitError(f"{where}: block sizes must be positive")
    return Tray(dictionary, markers, (cx, cy), (bl, bw, bh))


def load_tray(path: str | Path) -> Tray:
    p = Path(path)
    return tray_from_json(_read_json(p, "tray file"), str(p))


@dataclass(frozen=True)
class Label:
    orientation: str
    slots: tuple[Block | None, Block | None, Block | None]
    hands: int


def parse_label(name: str, raw: object) -> Label:
    if not isinstance(raw, dict):
        raise KitError(f"labels.json: the label of {name} must be an object with orientation, slots, hands")
    orientation = raw.get("orientation")
    if orientation not in ORIENTATIONS:
        raise KitError(f"labels.json: {name} has orientation {orientation!r}; it must be \"x\" or \"y\"")
    slots = raw.get("slots")
    if not isinstance(slots, list) or len(slots) != 3:
        raise KitError(f"labels.json: {name} must list exactly 3 slots (a block name or null each)")
    blocks = []
    for s in slots:
        if s is None:
            blocks.append(None)
            continue
        try:
            blocks.append(Block.parse(s))
        except BlockError as exc:
            raise KitError(f"labels.json: {name}: {exc}") from None
    hands = raw.get("hands", 0)
    if not isinstance(hands, int) or isinstance(hands, bool) or hands < 0:
        raise KitError(f"labels.json: {name} has hands {hands!r}; it must be a whole number >= 0")
    return Label(orientation, tuple(blocks), hands)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Kit:
    root: Path
    tray: Tray
    labels: Mapping[str, Label]  # image file name -> label

    def image_path(self, name: str) -> Path:
        return self.root / "images" / name


def load_kit(path: str | Path) -> Kit:
    root = Path(path)
    if not root.is_dir():
        raise KitError(f"the kit folder {root} does not exist")
    tray = load_tray(root / "tray.json")
    raw = _read_json(root / "labels.json", "labels file")
    if not isinstance(raw, dict) or not raw:
        raise KitError(f"{root / 'labels.json'} must map image names to labels and hold at least one")
    labels = {}
    for name, lab in sorted(raw.items()):
        if not (root / "images" / name).is_file():
            raise KitError(f"labels.json names {name}, but {root / 'images' / name} is missing")
        labels[name] = parse_label(name, lab)
    return Kit(root, tray, labels)
