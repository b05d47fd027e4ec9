"""`stacko bench vision --families N`: N fresh families of kits, and all their kits scored as one."""

from __future__ import annotations

import json

from referee.cli import main
from vision.stage_clock import STAGES


def test_two_families_give_four_kits_and_their_sum(tmp_path, capsys):
    code = main(["bench", "vision", "--images", "8", "--families", "2", "--work", str(tmp_path)])
    assert code == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.strip().splitlines()]
    kits, total = lines[:-1], lines[-1]
    assert len(kits) == 4 and total["kits"] == 4
    assert (tmp_path / "family-1" / "calibration").is_dir() and (tmp_path / "family-2" / "calibration").is_dir()
    # the families' kits are drawn from different seeds, and the sum counts every image once
    assert total["images"] == sum(k["images"] for k in kits) == 32
    assert total["visible_slots"] == sum(k["visible_slots"] for k in kits)
    assert total["wrong_visible"] == sum(k["wrong_visible"] for k in kits)
    # each kit's frame time split by stage, and the families' mean of those
    for line in kits + [total]:
        assert set(line["stage_ms"]) == set(STAGES) and all(v >= 0 for v in line["stage_ms"].values())
        assert line["stage_ms"]["hands"] > 0
    # the census of misses: the families' counts are the kits' counts added, and the report says it
    for kind in {k for line in kits for k in line["slot_misses"]["all"]}:
        assert total["slot_misses"]["all"][kind] == sum(k["slot_misses"]["all"].get(kind, 0) for k in kits)
    assert sum(total["hand_misses"].values()) == sum(round((1 - k["hands_exact"]) * (k["images"] - k["errors"])) for k in kits)
    assert "hand counts wrong, by kind" in err or not total["hand_misses"]
    labels = [json.loads((tmp_path / f"family-{f}" / "unseen-kit" / "labels.json").read_text()) for f in (1, 2)]
    assert labels[0] != labels[1]


def test_families_refuse_kits_given_by_hand(tmp_path, capsys):
    assert main(["bench", "vision", "--families", "2", "--test-kit", str(tmp_path), "--work", str(tmp_path)]) == 2
    assert "--families" in capsys.readouterr().err
