"""A value made once for the same key and the very same inputs: the per-frame memo the reader
keeps (FrameContext.memo) and the per-view one of the height search (PlaneView.memo)."""

from __future__ import annotations

import operator


def memoised(memo: dict | None, key, inputs: tuple, make):
    """make() once for the same key and the same inputs (the very objects: the frame, its
    registration, the pipeline), as made before; without a memo, made afresh."""
    if memo is None:
        return make()
    got = memo.get(key)
    if got is not None and len(got[0]) == len(inputs) and all(map(operator.is_, got[0], inputs)):
        return got[1]  # (map of operator.is_: no generator's frame a step; ~37 calls a frame)
    val = make()
    memo[key] = (inputs, val)  # (holding the inputs: no other object can take their ids meanwhile)
    return val
