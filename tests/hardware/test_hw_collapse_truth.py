"""The recorded twin runs' collapse truth (RULES.md section 8: "any block falls from the tower"): a twin
collapse counts only if a block came off the tower; one left resting on the tower is `block_shifted`."""

import pytest

from hardware.sim.recording import fair_truth


def test_a_collapse_with_a_block_come_to_rest_off_the_tower_stays_a_collapse():
    truth = [{"t": 1.0, "type": "pull"}, {"t": 5.0, "type": "collapse", "fallen": 3, "blocks": ["red-1", "wild", "blue-2"]}]
    out = fair_truth(truth, ["wild"])
    assert out[0] == truth[0]
    assert out[1]["type"] == "collapse" and out[1]["landed"] == ["wild"]


def test_a_block_that_only_slid_and_stayed_on_the_tower_is_not_a_collapse():
    out = fair_truth([{"t": 5.0, "type": "collapse", "fallen": 1, "blocks": ["red-1"]}], [])
    assert out == [{"t": 5.0, "type": "block_shifted", "twin_type": "collapse", "fallen": 1, "blocks": ["red-1"]}]


@pytest.fixture(scope="module")
def twin():
    import hardware.sim  # noqa: F401  (the offscreen GL before MuJoCo loads)
    from hardware.sim.twin import Twin

    with Twin(seed=3, n_seats=3) as tw:
        tw.step(0.3)
        yield tw


def _move(twin, block, pos, settle_s=0.4):
    import mujoco

    a = block.qpos_adr
    twin.data.qpos[a:a + 3] = pos
    twin.data.qpos[a + 3:a + 7] = (1.0, 0.0, 0.0, 0.0)
    twin.data.qvel[block.qvel_adr:block.qvel_adr + 6] = 0.0
    mujoco.mj_forward(twin.model, twin.data)
    twin.step(settle_s)


def test_twin_truth_sees_where_blocks_rest(twin):
    from hardware.sim.recording import blocks_off_the_tower

    assert blocks_off_the_tower(twin) == []  # a standing tower: the bottom level rests on the tray, as it should
    top = twin.top_level()
    on_top = [b for b in twin.world.blocks if b.level == top]
    hz = twin.config.block_half[2]
    z_top = max(twin.data.xpos[b.body_id][2] for b in on_top)
    _move(twin, on_top[0], (0.0, 0.0, z_top + 2 * hz + 0.002))  # slid across the top: still on the tower
    assert blocks_off_the_tower(twin) == []
    _move(twin, on_top[-1], (0.25, 0.2, hz + 0.002))  # lying on the table
    assert blocks_off_the_tower(twin) == [on_top[-1].name]


def test_twin_truth_counts_a_block_flung_beyond_the_tray_as_fallen(twin):
    from hardware.sim.recording import blocks_off_the_tower

    top = twin.top_level()
    block = next(b for b in twin.world.blocks if b.level == top - 1)
    _move(twin, block, (5.0, 0.0, 0.3), settle_s=0.05)  # still in the air, far away
    assert block.name in blocks_off_the_tower(twin)
