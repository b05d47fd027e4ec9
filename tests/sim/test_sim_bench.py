"""`stacko bench sim --pulls`: self-play pulls per skill, counted and measured (a tiny run)."""

from hardware.sim.bench import bench_pulls


def test_the_pull_bench_counts_pulls_and_measures_how_far_the_level_above_follows():
    rows = []
    (out,) = bench_pulls(seed=2, pulls=2, skills=("careful",), heights=(9,), per_tower=2, log=rows.append)
    assert out["skill"] == "careful" and out["pulls"] == 2 and out["towers"] == 1
    assert out["collapses"] == 0 and out["collapses_per_pull"] == 0.0
    assert len(rows) == 1 and len(rows[0]["drag_mm"]) == 2 and rows[0]["height"] == 9
    assert 0.0 <= out["drag_median_mm"] <= out["drag_p95_mm"] <= out["drag_max_mm"] < 3.0
