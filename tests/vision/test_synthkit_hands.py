"""The synthetic renderer's hands: a kit renders whatever its seed draws."""

from __future__ import annotations

import json

from vision.bench import unseen_options
from vision.synthkit import SynthOptions, default_tray, write_kit


def test_a_second_hand_after_a_first_left_out_comes_from_anywhere(tmp_path):
    """Seed 5903, harsh options, image 28: the first hand found no pose that leaves the tray's
    markers readable and was left out; the second, drawn to overlap it, had nothing to overlap,
    and the whole kit failed (IndexError). Now it comes from its own seat."""
    kit = write_kit(tmp_path / "kit", 28, seed=5903, opt=unseen_options(SynthOptions()), tray=default_tray())
    labels = json.loads((kit / "labels.json").read_text())
    truth = json.loads((kit / "truth.json").read_text())
    assert len(labels) == 28 and (kit / "images" / "0028.png").is_file()
    hands = truth["0028.png"]["hands"]
    assert len(hands) == 1 and labels["0028.png"]["hands"] == sum(h["over_tower"] for h in hands)
