"""Where a kit's misses lie, by kind: the bench's census of what to work on next.

Why: the bench's shares say how far a target is, not what stands in the way. Each session that
went after the last misses first sorted them by hand with a script of its own; the kinds below are
the ones those sessions found (docs/vision.md), worked out from the per-image rows the bench
writes anyway (`evaluate.kit_rows`), so every run of `stacko bench vision` says it.

A slot is judged as the acceptance measure judges it: only where hands hide at most a tenth of it.
"""

from __future__ import annotations

from collections import Counter

NO_BLOCK = "no block read"            # the reading holds no block at all (a wrong height, most often)
ORIENTATION = "orientation wrong"     # read across the top: its slots are other places
SLOT_OFF = "one slot off"             # the top's blocks read one slot over (a face lined up a slot off)
MISSED = "block missed"               # a block read as an empty slot
PHANTOM = "block where none"          # an empty slot read as a block
COLOUR = "colour"                     # a block of another colour named
GLYPH = "glyph"                       # the right colour, another number or symbol
SLOT_KINDS = (NO_BLOCK, ORIENTATION, SLOT_OFF, MISSED, PHANTOM, COLOUR, GLYPH)

FALSE_TWO = "false two or more"       # a false "Uno!": the worse error for the referee
MISSED_TWO = "missed two or more"
COUNT_OFF = "count off, two or more right"  # none read as one, three as two, and so on
HAND_KINDS = (FALSE_TWO, MISSED_TWO, COUNT_OFF)


def slot_miss_kind(row: dict, slot: int) -> str:
    """The kind of a wrong slot of one row (`kit_rows`): the whole reading's fault first (no
    block read, read across, one slot off), then the slot's own."""
    read, truth = row["slots"], row["truth"]["slots"]
    if all(s is None for s in read):
        return NO_BLOCK
    if row["orientation"] != row["truth"]["orientation"]:
        return ORIENTATION
    if _one_slot_off(read, truth):
        return SLOT_OFF
    got, want = read[slot], truth[slot]
    if want is None:
        return PHANTOM
    if got is None:
        return MISSED
    return COLOUR if _colour(got) != _colour(want) else GLYPH


def _one_slot_off(read: list, truth: list) -> bool:
    """Whether the blocks read are the true ones moved one slot along the face."""
    return any(a == b and any(x is not None for x in a) for a, b in ((read[1:], truth[:2]), (read[:2], truth[1:])))


def _colour(name: str) -> str:
    return name.split("-")[0]  # "red-draw2" -> red; "wild" -> wild


def slot_misses(ok_rows: list[dict], least_levels: int, hidden_max: float = 0.1) -> dict[str, dict[str, int]]:
    """The wrong slots in view (hands hide at most `hidden_max`), by kind: all of them, and those
    on towers of `least_levels` and more (where a match is played). Rows without hidden
    fractions are not judged, as in the acceptance measures."""
    every, tall = Counter(), Counter()
    for r in ok_rows:
        hidden = r.get("hidden")
        if not hidden:
            continue
        for i, ok in enumerate(r["slot_ok"]):
            if ok or hidden[i] > hidden_max:
                continue
            kind = slot_miss_kind(r, i)
            every[kind] += 1
            if isinstance(r.get("levels"), int) and r["levels"] >= least_levels:
                tall[kind] += 1
    return {"all": {k: every[k] for k in SLOT_KINDS if every[k]}, "tall": {k: tall[k] for k in SLOT_KINDS if tall[k]}}


def hand_misses(ok_rows: list[dict]) -> dict[str, int]:
    """The images whose hand count is wrong, by kind: a false "two or more", a missed one, and a
    count off that still gets "two or more" right."""
    out = Counter()
    for r in ok_rows:
        if r["hands_ok"]:
            continue
        truth = r["truth"]["hands"]
        if r["two_ok"]:
            out[COUNT_OFF] += 1
        else:
            out[FALSE_TWO if truth < 2 else MISSED_TWO] += 1
    return {k: out[k] for k in HAND_KINDS if out[k]}


def miss_line(kinds: dict[str, int], tall: dict[str, int] | None = None) -> str:
    """'block missed 55 (tall 29), no block read 27 (tall 24), ...', the largest first."""
    if not kinds:
        return "none"
    parts = []
    for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        parts.append(f"{k} {n}" + (f" (tall {tall.get(k, 0)})" if tall is not None else ""))
    return ", ".join(parts)
