"""The twin's kits say how much of each top slot the hands hide, as the synthetic kits do, so
that its photos with hands count in the acceptance measures (slots hidden by at most a tenth)
instead of in none."""

import json
import random

import numpy as np
import pytest

from hardware.sim.hands import HandLook
from hardware.sim.kit import KitConfig, KitStudio, Scene, slot_hidden, write_kit
from hardware.sim.render import Look
from hardware.sim.world import slot_pose
from vision.evaluate import hidden_fractions, kit_truth
from vision.kit import load_kit

FULL_TOP = [["red-1", "red-2", "red-3"], ["blue-1", "blue-2", "blue-3"], ["green-1", "green-2", "green-3"]]
SKIN = HandLook((0.85, 0.66, 0.52))


@pytest.fixture(scope="module")
def studio():
    s = KitStudio(seed=3)
    yield s
    s.close()


def _posed(studio, hands=()) -> Scene:
    scene = Scene([list(lv) for lv in FULL_TOP], list(hands))
    studio.pose(scene, random.Random(0), KitConfig(jitter_mm=0.0, jitter_deg=0.0))
    return scene


def _top_face(studio, slot: int) -> np.ndarray:
    cfg = studio.config
    pos, _ = slot_pose(cfg, len(FULL_TOP), slot)
    return np.array([pos[0], pos[1], cfg.tray_top_z + 2 * len(FULL_TOP) * cfg.block_half[2]])


def test_the_top_blocks_project_where_the_camera_sees_them(studio):
    _posed(studio)
    cfg = studio.config
    look = Look.nominal()
    top = [b for b in studio.world.blocks if b.level == len(FULL_TOP)]
    assert sorted(b.slot for b in top) == [0, 1, 2]
    for b in top:
        seen = studio.renderer.hand_pixels(studio.world.data, [b.geom_id], look, cfg.tray_top_z, cfg.layout.tray_mm / 1000)
        u, v = studio.renderer.project_top(studio.world.data, _top_face(studio, b.slot)[None], look, cfg.tray_top_z,
                                           cfg.layout.tray_mm / 1000)[0]
        assert seen[int(round(v)), int(round(u))], f"slot {b.slot}'s block is not where its top face projects"


def test_no_hand_hides_nothing(studio):
    assert slot_hidden(studio, _posed(studio), Look.nominal()) == [0.0, 0.0, 0.0]


def test_a_hand_reaching_over_the_middle_slot_hides_it_most(studio):
    tip = _top_face(studio, 1) + np.array([0.0, 0.0, 0.02])
    _, along = slot_pose(studio.config, len(FULL_TOP), 1)  # the arm comes in along the middle block
    hidden = slot_hidden(studio, _posed(studio, [(tip, along, SKIN, True)]), Look.nominal())
    assert hidden[1] > 0.3
    assert hidden[1] > hidden[0] and hidden[1] > hidden[2]


def test_the_twin_kit_records_it_and_the_evaluation_counts_photos_with_hands(tmp_path):
    write_kit(tmp_path, 4, seed=5, cfg=KitConfig(hands=(0.0, 0.0, 1.0), over_tower_rate=1.0))
    scenes = [json.loads(line) for line in (tmp_path / "scenes.jsonl").read_text().splitlines()]
    assert all(len(s["slot_hidden"]) == 3 and all(0.0 <= v <= 1.0 for v in s["slot_hidden"]) for s in scenes)
    truth = kit_truth(tmp_path)
    assert {n: t["levels"] for n, t in truth.items()} == {s["image"]: len(s["levels"]) for s in scenes}
    kit = load_kit(tmp_path)
    assert all(kit.labels[n].hands == 2 for n in kit.labels)
    hidden = hidden_fractions(tmp_path, kit)
    assert all(hidden[s["image"]] == s["slot_hidden"] for s in scenes)  # known, though hands are over the tower


def test_a_twin_kit_written_before_counts_photos_with_hands_in_no_measure(tmp_path):
    write_kit(tmp_path, 2, seed=5, cfg=KitConfig(hands=(0.0, 0.0, 1.0), over_tower_rate=1.0))
    path = tmp_path / "scenes.jsonl"
    old = [{k: v for k, v in json.loads(line).items() if k != "slot_hidden"} for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(d) + "\n" for d in old))
    assert all(h is None for h in hidden_fractions(tmp_path, load_kit(tmp_path)).values())
