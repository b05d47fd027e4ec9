"""Vision kits (CONTRACT.md section 2): overhead images of towers on the tray, with labels.

One model holds the whole 45-block set; each image moves the blocks it needs into a tower of
random height with a partly filled top level and a few holes lower down (no physics: a kit is
photographs, and the blocks are placed with a builder's small misalignments). Light, camera pose,
hands (0, 1 or 2, over the tower or not) and skin tones vary from a seeded RNG.
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from hardware.sim.hands import HandLook, HandRig, reach_pose
from hardware.sim.render import Look, TwinRenderer
from hardware.sim.world import WorldConfig, build_world, orientation, slot_pose, yaw_quat
from referee.blocks import BLOCK_SETS

import mujoco

PARKED_Z = -0.5


@dataclass(frozen=True)
class KitConfig:
    """The spread of scenes in a kit."""

    min_levels: int = 1
    max_levels: int = 18
    top_counts: tuple[float, float, float] = (0.3, 0.35, 0.35)  # P(1, 2, 3 blocks on the top level)
    hole_rate: float = 0.25  # chance a lower level has lost a block
    hands: tuple[float, float, float] = (0.4, 0.38, 0.22)  # P(0, 1, 2 hands in the picture)
    over_tower_rate: float = 0.65  # a hand in the picture is over the tower's footprint
    jitter_mm: float = 1.2
    jitter_deg: float = 1.5
    look_strength: float = 1.0
    deal_tops: bool = True  # every block shows on top about equally often (see random_scene)


@dataclass
class Scene:
    """One kit image's tower (bottom first, None = empty) and hands."""

    levels: list[list[str | None]]
    hands: list[tuple[np.ndarray, float, HandLook, bool]]  # fingertip, from-angle, look, over tower

    @property
    def label(self) -> dict:
        top = len(self.levels)
        return {
            "orientation": orientation(top),
            "slots": list(self.levels[-1]),
            "hands": sum(1 for h in self.hands if h[3]),
        }


def random_scene(rng: random.Random, cfg: KitConfig, config: WorldConfig, top_deck: list[str] | None = None) -> Scene:
    """A random tower and hands. With `top_deck` (a list the caller keeps across a kit's images),
    the top level's blocks are dealt from it, refilled with the whole set shuffled when it runs
    low, so every block shows on top about as often as every other: a kit of a few dozen photos
    drawn freely can show the single Wild on top once, under a hand, and a calibration from it
    never learns the Wild."""
    names = [b.name for b in BLOCK_SETS["standard-45"].blocks]
    rng.shuffle(names)
    height = rng.randint(cfg.min_levels, cfg.max_levels)
    top_n = rng.choices((1, 2, 3), weights=cfg.top_counts)[0]
    lower = [[True, True, True] for _ in range(height - 1)]
    for lv in lower[:-1]:  # the highest completed level cannot have lost a block
        if rng.random() < cfg.hole_rate:
            lv[rng.choice((0, 1, 2))] = False
    # a tall tower needs blocks from lower levels: take out side blocks until the set suffices
    def used() -> int:
        return sum(sum(lv) for lv in lower) + top_n

    candidates = [i for i in range(len(lower) - 1)]
    rng.shuffle(candidates)
    while used() > len(names) and candidates:
        i = candidates.pop()
        lv = lower[i]
        if lv[1]:
            lv[0] = lv[2] = False  # middle only
        else:
            lv[1] = True
            lv[0] = lv[2] = False
    if used() > len(names):
        raise ValueError("tower too tall for the block set")
    top = [False, False, False]
    for s in rng.sample((0, 1, 2), top_n):
        top[s] = True
    if top_deck is not None:
        if len(top_deck) < top_n:  # a new set under what is left (the deck never holds more than the set)
            fresh = list(names)
            for n in top_deck:
                fresh.remove(n)
            rng.shuffle(fresh)
            top_deck[:0] = fresh
        dealt = [top_deck.pop() for _ in range(top_n)]
        rest = list(names)
        for n in dealt:
            rest.remove(n)
        names = rest[: used() - top_n] + dealt  # the top level takes the last names
    it = iter(names)
    levels = [[next(it) if present else None for present in lv] for lv in lower + [top]]

    hands = []
    n_hands = rng.choices((0, 1, 2), weights=cfg.hands)[0]
    top_z = config.tray_top_z + height * 2 * config.block_half[2]
    half = config.block_half[0]
    limit = half + 2 * half  # footprint half-size plus one block length
    for _ in range(n_hands):
        angle = rng.uniform(0, 2 * math.pi)
        over = rng.random() < cfg.over_tower_rate
        if over:
            r = rng.uniform(0.0, limit - 0.03)
            a = rng.uniform(0, 2 * math.pi)
            tip = np.array([r * math.cos(a), r * math.sin(a), top_z + rng.uniform(0.012, 0.07)])
        else:
            r = rng.uniform(limit + 0.02, limit + 0.09)
            side = angle + rng.uniform(-0.5, 0.5)
            tip = np.array([r * math.cos(side), r * math.sin(side), config.tray_top_z + rng.uniform(0.02, 0.12)])
            angle = side  # reaching in from outside, it stays outside
            if max(abs(tip[0]), abs(tip[1])) <= limit + 0.01:
                tip[:2] *= (limit + 0.02) / max(abs(tip[0]), abs(tip[1]))
        hands.append((tip, angle, HandLook.random(rng), over))
    return Scene(levels, hands)


class KitStudio:
    """A full block set in one model, posed scene by scene for photos."""

    def __init__(self, config: WorldConfig | None = None, seed: int = 0):
        self.config = config or WorldConfig(n_hands=2, height_tolerance_m=0.0)
        names = [b.name for b in BLOCK_SETS["standard-45"].blocks]
        tower = [names[i : i + 3] for i in range(0, len(names), 3)]
        self.world = build_world(tower, seed, self.config)
        self.rig = HandRig(self.world.model, self.world.data, self.config.n_hands)
        self.by_name: dict[str, list] = defaultdict(list)
        for b in self.world.blocks:
            self.by_name[b.name].append(b)
        self.renderer = TwinRenderer(self.world.model)

    def close(self) -> None:
        self.renderer.close()

    def pose(self, scene: Scene, rng: random.Random, cfg: KitConfig) -> None:
        d = self.world.data
        for i, b in enumerate(self.world.blocks):  # park everything under the table
            d.qpos[b.qpos_adr : b.qpos_adr + 7] = (0.1 * (i % 7), 0.1 * (i // 7), PARKED_Z, 1, 0, 0, 0)
            b.level = b.slot = None
        free = {k: list(v) for k, v in self.by_name.items()}
        for li, level in enumerate(scene.levels, start=1):
            for slot, name in enumerate(level):
                if name is None:
                    continue
                b = free[name].pop()
                pos, yaw = slot_pose(self.config, li, slot)
                j = cfg.jitter_mm / 1000.0
                pos = pos + np.array([rng.uniform(-j, j), rng.uniform(-j, j), 0.0])
                q = yaw_quat(yaw + math.radians(rng.uniform(-cfg.jitter_deg, cfg.jitter_deg)))
                d.qpos[b.qpos_adr : b.qpos_adr + 7] = (*pos, *q)
                b.level, b.slot = li, slot
        self.rig.park_all()
        for k, (tip, angle, look, _) in enumerate(scene.hands):
            pos, quat = reach_pose(tip, angle)
            self.rig.set_pose(k, pos, quat)
            self.rig.color(k, look)
        d.qvel[:] = 0
        mujoco.mj_forward(self.world.model, d)

    def photo(self, look: Look) -> np.ndarray:
        return self.renderer.render(self.world.data, "top", look, self.config.tray_top_z, self.config.layout.tray_mm / 1000)


def slot_hidden(studio: KitStudio, scene: Scene, look: Look) -> list[float]:
    """How much of each top slot's face (the top level's three block places, whether a block
    lies there or not) the hands hide in the photo of `scene` taken with `look`, 0..1: what the
    acceptance measures count a slot by (hidden by at most a tenth). Like the synthetic kit's
    truth.json `slot_hidden`, from the hands' own pixels (a segmentation pass), not their shadow."""
    cfg = studio.config
    tray_m = cfg.layout.tray_mm / 1000
    level = len(scene.levels)
    hx, hy, hz = cfg.block_half
    top_z = cfg.tray_top_z + 2 * level * hz
    geoms = [g for hand in studio.rig.geoms for g in hand]
    hands = studio.renderer.hand_pixels(studio.world.data, geoms, look, cfg.tray_top_z, tray_m)
    corners = []
    for slot in range(3):
        pos, yaw = slot_pose(cfg, level, slot)
        c, s = math.cos(yaw), math.sin(yaw)
        corners += [(pos[0] + c * a - s * b, pos[1] + s * a + c * b, top_z)
                    for a, b in ((-hx, -hy), (hx, -hy), (hx, hy), (-hx, hy))]
    # the three slots' corners seen at once (the camera framed once)
    quads = studio.renderer.project_top(studio.world.data, np.array(corners), look, cfg.tray_top_z, tray_m).reshape(3, 4, 2)
    out = []
    for uv in quads:
        poly = np.zeros(hands.shape, np.uint8)
        cv2.fillConvexPoly(poly, np.round(uv).astype(np.int32), 1)
        area = int(poly.sum())
        out.append(round(float((hands & (poly > 0)).sum()) / area, 3) if area else 1.0)
    return out


def kit_photos(studio: KitStudio, seed: int, n_images: int, cfg: KitConfig,
               wanted: Container[int] | None = None) -> Iterator[tuple[int, Scene, Look, np.ndarray | None]]:
    """The photos of the kit `seed`, in order: (number from 1, scene, look, image). Only the
    numbers in `wanted` (all when None) are rendered, the others' images are None; every scene
    is drawn and posed all the same, so that photo 23 is the kit's photo 23 (a test reads a few
    photos of a kit without rendering the rest)."""
    rng = random.Random(seed)
    top_deck: list[str] | None = [] if cfg.deal_tops else None
    for i in range(1, n_images + 1):
        scene = random_scene(rng, cfg, studio.config, top_deck)
        studio.pose(scene, rng, cfg)
        look = Look.random(rng, cfg.look_strength)
        yield i, scene, look, studio.photo(look) if wanted is None or i in wanted else None


def write_kit(out: Path, n_images: int, seed: int, cfg: KitConfig | None = None) -> dict:
    """Write tray.json, images/NNNN.png, labels.json (and scenes.jsonl: each image's tower, hands,
    look, and how much of each top slot the hands hide, `slot_hidden`)."""
    cfg = cfg or KitConfig()
    out = Path(out)
    (out / "images").mkdir(parents=True, exist_ok=True)
    studio = KitStudio(seed=seed)
    labels: dict[str, dict] = {}
    try:
        (out / "tray.json").write_text(json.dumps(studio.config.layout.tray_json(), indent=1) + "\n", encoding="utf-8")
        with open(out / "scenes.jsonl", "w", encoding="utf-8") as meta:
            for i, scene, look, img in kit_photos(studio, seed, n_images, cfg):
                fname = f"{i:04d}.png"
                if not cv2.imwrite(str(out / "images" / fname), img):
                    raise OSError(f"could not write {out / 'images' / fname}")
                labels[fname] = scene.label
                meta.write(json.dumps({
                    "image": fname,
                    "levels": scene.levels,
                    "hands": [{"fingertip_m": [round(float(v), 4) for v in tip], "from_deg": round(math.degrees(a) % 360, 1),
                               "skin_rgb": [round(c, 3) for c in hl.skin], "over_tower": over} for tip, a, hl, over in scene.hands],
                    "look": look.__dict__,
                    "slot_hidden": slot_hidden(studio, scene, look),
                }) + "\n")
    finally:
        studio.close()
    (out / "labels.json").write_text(json.dumps(labels, indent=1) + "\n", encoding="utf-8")
    return labels
