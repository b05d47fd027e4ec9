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


def recalled(memo: dict | None, key, inputs: tuple) -> tuple | None:
    """(value,) as made before for the same key and the very same inputs (see memoised), else
    None: for a caller that makes several values in one pass, only those not made yet."""
    got = None if memo is None else memo.get(key)
    if got is not None and len(got[0]) == len(inputs) and all(map(operator.is_, got[0], inputs)):
        return (got[1],)
    return None


def remember(memo: dict | None, key, inputs: tuple, val):
    """Keep val as made for key and these inputs (recalled, memoised find it); returns it."""
    if memo is not None:
        memo[key] = (inputs, val)
    return val
