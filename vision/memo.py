"""A value made once for the same key and the very same inputs: the per-frame memo the reader
keeps (FrameContext.memo) and the per-view one of the height search (PlaneView.memo)."""

from __future__ import annotations

import operator


def memoised(memo: dict | None, key, inputs: tuple, make):
    """make() once for the same key and the same inputs (the very objects: the frame, its
    registration, the pipeline), as made before; without a memo, made afresh."""
    if memo is None:
        return make()
    got = recalled(memo, key, inputs)
    return got[0] if got is not None else remember(memo, key, inputs, make())


def memoised_many(memo: dict | None, keys: list, inputs: tuple, make) -> list:
    """memoised for several keys of the same inputs, those not made before made together:
    make(indices) gives the values of keys[i] for those i, in order (one pass for all of them)."""
    got = [recalled(memo, k, inputs) for k in keys]
    todo = [i for i, g in enumerate(got) if g is None]
    if todo:
        for i, val in zip(todo, make(todo)):
            got[i] = (remember(memo, keys[i], inputs, val),)
    return [g[0] for g in got]


def recalled(memo: dict | None, key, inputs: tuple) -> tuple | None:
    """(value,) as made before for the same key and the very same inputs (see memoised), else
    None: for a caller that makes several values in one pass, only those not made yet."""
    got = None if memo is None else memo.get(key)
    # (map of operator.is_: no generator's frame a step; some 40 calls a frame)
    if got is not None and len(got[0]) == len(inputs) and all(map(operator.is_, got[0], inputs)):
        return (got[1],)
    return None


def remember(memo: dict | None, key, inputs: tuple, val):
    """Keep val as made for key and these inputs (recalled, memoised find it); returns it.
    (Holding the inputs: no other object can take their ids meanwhile.)"""
    if memo is not None:
        memo[key] = (inputs, val)
    return val
