"""The tower stands when left alone, falls when shoved, and is the same tower for the same seed."""

import numpy as np
import pytest

from hardware.sim.twin import Twin
from hardware.sim.world import build_world, orientation, slot_pose, WorldConfig


def positions(twin: Twin) -> np.ndarray:
    return np.array([twin.data.xpos[b.body_id] for b in twin.world.blocks])


def test_tower_is_built_level_by_level_per_the_geometry_convention():
    world = build_world(seed=3)
    assert len(world.blocks) == 45
    assert orientation(1) == "x" and orientation(2) == "y"
    for b in world.blocks:
        pos, yaw = slot_pose(world.config, b.level, b.slot)
        assert np.allclose(world.data.xpos[b.body_id][:2], pos[:2], atol=0.001)
    # odd levels: slots by increasing y; even levels: by increasing x
    one = sorted((b for b in world.blocks if b.level == 1), key=lambda b: b.slot)
    two = sorted((b for b in world.blocks if b.level == 2), key=lambda b: b.slot)
    assert [world.data.xpos[b.body_id][1] for b in one] == sorted(world.data.xpos[b.body_id][1] for b in one)
    assert [world.data.xpos[b.body_id][0] for b in two] == sorted(world.data.xpos[b.body_id][0] for b in two)
    assert world.model.body_mass[one[0].body_id] == pytest.approx(0.017)


def test_untouched_tower_raises_no_event_and_moves_less_than_a_millimetre():
    with Twin(seed=4) as twin:
        before = positions(twin)
        twin.step(3.0)
        moved = np.abs(positions(twin) - before).max()
        assert twin.truth == []
        assert not twin.collapsed
        assert moved < 0.001


def test_a_hard_push_topples_the_tower():
    with Twin(seed=6) as twin:
        twin.push(force=20.0, seat=1)
        twin.step(1.0)
        assert twin.collapsed
        assert len(twin.fallen_blocks()) >= 3
        assert twin.truth[-1]["type"] == "collapse"


def test_same_seed_same_tower_same_pull():
    def run(seed):
        with Twin(seed=seed) as twin:
            ev = twin.pull(0, 5, 1)
            return twin.tower_map(), ev, positions(twin)

    a, b, c = run(9), run(9), run(10)
    assert a[0] == b[0] and a[1] == b[1]
    assert np.array_equal(a[2], b[2])
    assert a[0] != c[0]


def test_a_pull_takes_the_block_out_of_the_map_and_a_place_puts_it_on_top():
    with Twin(seed=2) as twin:
        name = twin.tower_map()[4][1]
        ev = twin.pull(0, 5, 1)
        assert ev["block"] == name and ev["level"] == 5 and ev["slot"] == 1
        assert twin.tower_map()[4][1] is None and twin.in_hand is not None
        place = twin.place(16, 1, seat=0)
        assert place["block"] == name
        assert twin.tower_map()[15] == [None, name, None]
        twin.step(0.5)
        assert not twin.collapsed
        top = twin.world.block_at(16, 1)
        assert twin.data.xpos[top.body_id][2] > twin.config.tray_top_z + 15 * 0.015


def test_a_careful_push_on_a_loose_block_barely_moves_the_level_above():
    from hardware.sim.twin import PullStyle

    with Twin(seed=1) as twin:
        loose = max((b for b in twin.world.blocks if 3 <= b.level <= 10 and b.slot == 1), key=lambda b: b.looseness)
        assert loose.looseness > 0.5
        ev = twin.pull(0, loose.level, 1, style=PullStyle(care=0.95))
        assert ev is not None and not twin.collapsed
        assert ev["drag_mm"] < 1.5  # soft contacts used to let the upper tower creep 3-8 mm along


def test_a_block_that_slides_off_the_top_just_after_release_has_fallen_from_that_moment():
    """RULES.md 8: a placed block is the tower's once released; if it tips off the top while the
    hand withdraws, the collapse is dated when it drops, not when the hand has gone."""
    with Twin(seed=2) as twin:
        twin.pull(0, 5, 1)
        twin.start_place(16, 1, seat=0)
        while not any(e["type"] == "place" for e in twin.truth):
            twin.step(0.01)
        placed = twin.world.block_at(16, 1)
        dof = twin.model.jnt_dofadr[twin.model.body_jntadr[placed.body_id]]
        flicked_t = twin.t
        twin.data.qvel[dof:dof + 3] = [0.0, 1.2, 0.0]  # knocked sideways off the top
        twin.run_until_idle(5.0)
        twin.step(1.0)
        assert twin.collapsed
        assert placed.name in twin.fallen
        assert twin.collapse_time - flicked_t < 0.3


def test_the_table_can_be_a_check_cloth_and_the_camera_sees_its_squares():
    plain, checker = (Twin(seed=2, config=WorldConfig(table=t)) for t in ("plain", "checker"))
    try:
        corner = [tw.render("top")[:40, :40].astype(float).mean(axis=2) for tw in (plain, checker)]
    finally:
        plain.close()
        checker.close()
    assert corner[1].std() > corner[0].std() + 10  # squares of two tones against one colour


def test_an_unknown_table_is_refused():
    with pytest.raises(ValueError, match="unknown table"):
        build_world(seed=1, config=WorldConfig(table="marble"))
