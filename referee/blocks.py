"""Blocks and block sets, as data.

Every other part of the referee (vision, the twin, the page, the log) speaks in these types, so a
block read by the camera is the same object the rules engine judges.
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence


class Color(str, enum.Enum):
    RED = "red"
    YELLOW = "yellow"
    GREEN = "green"
    BLUE = "blue"

    def __str__(self) -> str:  # announcements use the bare word
        return self.value


COLORS: tuple[Color, ...] = (Color.RED, Color.YELLOW, Color.GREEN, Color.BLUE)
NUMBERS: tuple[int, ...] = (1, 2, 3, 4)


class Kind(str, enum.Enum):
    NUMBER = "number"
    DRAW2 = "draw2"
    REVERSE = "reverse"
    SKIP = "skip"
    WILD = "wild"

    @property
    def is_action(self) -> bool:
        return self is not Kind.NUMBER


ACTION_KINDS: tuple[Kind, ...] = (Kind.DRAW2, Kind.REVERSE, Kind.SKIP)

_KIND_WORDS = {Kind.DRAW2: "Draw Two", Kind.REVERSE: "Reverse", Kind.SKIP: "Skip", Kind.WILD: "Wild"}


class BlockError(ValueError):
    """A block or block-set description that does not make sense; the message is for players."""


@dataclass(frozen=True, order=True)
class Block:
    """One wooden block. Two blocks with the same name are interchangeable for the rules."""

    kind: Kind
    color: Color | None = None
    number: int | None = None

    @property
    def name(self) -> str:
        if self.kind is Kind.WILD:
            return "wild"
        if self.kind is Kind.NUMBER:
            return f"{self.color.value}-{self.number}"
        return f"{self.color.value}-{self.kind.value}"

    @property
    def is_action(self) -> bool:
        return self.kind.is_action

    @property
    def glyph(self) -> str:
        """What is printed on the block: '1'..'4', 'draw2', 'reverse', 'skip' or 'wild'."""
        return str(self.number) if self.kind is Kind.NUMBER else self.kind.value

    def spoken(self) -> str:
        """How the referee says it: 'red 3', 'blue Draw Two', 'the Wild'."""
        if self.kind is Kind.WILD:
            return "the Wild"
        if self.kind is Kind.NUMBER:
            return f"{self.color.value} {self.number}"
        return f"{self.color.value} {_KIND_WORDS[self.kind]}"

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, name: object) -> "Block":
        """Parse a canonical name (`red-3`, `blue-draw2`, `green-reverse`, `yellow-skip`, `wild`)."""
        if not isinstance(name, str):
            raise BlockError(f"a block name must be text like 'red-3', not {name!r}")
        text = name.strip().lower()
        if text == "wild":
            return WILD
        color_word, sep, rest = text.partition("-")
        if not sep:
            raise BlockError(f"unknown block {name!r}: expected a name like 'red-3', 'blue-draw2' or 'wild'")
        try:
            color = Color(color_word)
        except ValueError:
            raise BlockError(f"unknown block {name!r}: '{color_word}' is not a color (red, yellow, green, blue)") from None
        if rest.isdigit():
            number = int(rest)
            if number not in NUMBERS:
                raise BlockError(f"unknown block {name!r}: numbers go from 1 to 4")
            return cls(Kind.NUMBER, color, number)
        try:
            kind = Kind(rest)
        except ValueError:
            raise BlockError(
                f"unknown block {name!r}: after the color comes 1-4, 'draw2', 'reverse' or 'skip'"
            ) from None
        if kind is Kind.WILD or kind is Kind.NUMBER:
            raise BlockError(f"unknown block {name!r}")
        return cls(kind, color, None)


WILD = Block(Kind.WILD)


def all_block_types() -> tuple[Block, ...]:
    """Every distinct block name there can be (vision classes, kit labels)."""
    blocks = [Block(Kind.NUMBER, c, n) for c in COLORS for n in NUMBERS]
    blocks += [Block(k, c) for c in COLORS for k in ACTION_KINDS]
    return tuple(blocks) + (WILD,)


@dataclass(frozen=True)
class BlockSet:
    """A named multiset of blocks: what a table's box holds."""

    name: str
    blocks: tuple[Block, ...]

    def counts(self) -> Counter:
        return Counter(b.name for b in self.blocks)

    def __len__(self) -> int:
        return len(self.blocks)

    def check_contains(self, names: Iterable[str]) -> None:
        """Raise if `names` uses a block more often than this set holds it."""
        have = self.counts()
        want = Counter(names)
        for name, n in sorted(want.items()):
            if n > have.get(name, 0):
                held = have.get(name, 0)
                if held == 0:
                    raise BlockError(f"the block set '{self.name}' has no {name} block")
                raise BlockError(
                    f"the tower holds {n} {name} blocks, but the block set '{self.name}' has only {held}"
                )


def _standard_45() -> tuple[Block, ...]:
    blocks = [Block(Kind.NUMBER, c, n) for c in COLORS for n in NUMBERS for _ in range(2)]
    blocks += [Block(k, c) for c in COLORS for k in ACTION_KINDS]
    return tuple(blocks) + (WILD,)


def _sheet_a_42() -> tuple[Block, ...]:
    """The set rule sheet a lists (3 Reverse, 2 Skip): kept so such a box can be refereed."""
    blocks = [Block(Kind.NUMBER, c, n) for c in COLORS for n in NUMBERS for _ in range(2)]
    blocks += [Block(Kind.DRAW2, c) for c in COLORS]
    blocks += [Block(Kind.REVERSE, c) for c in (Color.BLUE, Color.RED, Color.YELLOW)]
    blocks += [Block(Kind.SKIP, c) for c in (Color.GREEN, Color.RED)]
    return tuple(blocks) + (WILD,)


BLOCK_SETS: Mapping[str, BlockSet] = {
    "standard-45": BlockSet("standard-45", _standard_45()),
    "sheet-a-42": BlockSet("sheet-a-42", _sheet_a_42()),
}
DEFAULT_BLOCK_SET = "standard-45"


def block_set_from_names(names: Sequence[object], name: str = "custom") -> BlockSet:
    if not isinstance(names, (list, tuple)) or not names:
        raise BlockError("a block set must be a non-empty list of block names")
    return BlockSet(name, tuple(Block.parse(n) for n in names))


def resolve_block_set(spec: object) -> BlockSet:
    """A set name from the registry, or a list of block names (the `blocks` field of setup)."""
    if spec is None:
        return BLOCK_SETS[DEFAULT_BLOCK_SET]
    if isinstance(spec, str):
        try:
            return BLOCK_SETS[spec]
        except KeyError:
            known = ", ".join(sorted(BLOCK_SETS))
            raise BlockError(f"unknown block set {spec!r} (known sets: {known})") from None
    if isinstance(spec, list):
        return block_set_from_names(spec)
    raise BlockError("'blocks' must be a block-set name or a list of block names")


def load_block_set(path: str | Path) -> BlockSet:
    """Load a table's own set from a JSON file: {"name": "...", "blocks": ["red-1", ...]}."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BlockError(f"cannot read the block-set file {p}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BlockError(f"the block-set file {p} is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    if isinstance(data, list):
        return block_set_from_names(data, p.stem)
    if not isinstance(data, dict) or "blocks" not in data:
        raise BlockError(f"the block-set file {p} must hold {{\"name\": ..., \"blocks\": [...]}}")
    return block_set_from_names(data["blocks"], str(data.get("name") or p.stem))
