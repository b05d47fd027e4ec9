"""The blocks of the build the referee must ask the builder about, asked on the page one at a time.

A block the camera cannot name, or read with too little confidence, or one of two the box cannot
both hold (a third red 3), is the builder's to name. Any of the 45 blocks can be named in two
taps: its colour (or the Wild), then its number or symbol, so no button list runs long. A level
the load cell says was laid while hands hid it is the builder's to confirm first: only then is
it taken into the map, and its three blocks asked about.
"""

from __future__ import annotations

from referee.blocks import Block, BlockError
from referee.loop.build import BuildReader, LevelRead

COLOURS = ("red", "yellow", "green", "blue", "wild")
SYMBOLS = ("1", "2", "3", "4", "draw2", "reverse", "skip")
_SYMBOL_WORDS = {"draw2": "Draw Two", "reverse": "Reverse", "skip": "Skip"}


class BuildQuestions:
    """Questions about build slots: `add` them as levels are taken, `poll` each loop round to put
    the next one on the page when none is open, and give `on_answer` to the session for as long
    as the build lasts (it names the block in the build's map; no event comes of it)."""

    def __init__(self, build: BuildReader, session):
        self.build = build
        self.session = session
        self.waiting: list[tuple[int, int]] = []  # (level, slot) not asked yet, in order
        self.asking: tuple[int, int, str | None] | None = None  # (level, slot, colour once named)
        self.answered: set[tuple[int, int]] = set()  # the builder's word is final
        self.covered: LevelRead | None = None  # a level found covered, until the builder says whether it is

    @property
    def open(self) -> bool:
        """Whether some slot (or a covered level) still waits for the builder's answer."""
        return bool(self.waiting) or self.asking is not None or self.covered is not None

    def confirm_covered(self, read: LevelRead) -> None:
        """Ask whether a level was laid while hands hid it (`read.covered`); the build takes no
        other level until the builder answers."""
        self.covered = read

    def add(self, level: int, slot: int) -> None:
        """Ask about a slot (once: not again after the builder has named its block)."""
        if ((level, slot) not in self.waiting and (level, slot) not in self.answered
                and (self.asking is None or self.asking[:2] != (level, slot))):
            self.waiting.append((level, slot))

    def poll(self) -> None:
        """Put the next question on the page when the page has none open."""
        if self.session.question is not None:
            return
        if self.covered is not None:
            level = self.covered.level
            if self.covered.by_camera:  # (no load cell to weigh it)
                why, other = "it sees blocks above it", "no, the camera is wrong"
            else:
                why, other = "the tray weighs more than the levels it read", "no, something else is on the tray"
            self.session.ask(f"covered-{level}", f"Is level {level} laid? The camera has not read it, and {why}.",
                             ["yes", "no"], [f"yes, level {level} is laid", other])
            return
        if self.asking is None and self.waiting:
            level, slot = self.waiting.pop(0)
            self.asking = (level, slot, None)
        if self.asking is None:
            return
        level, slot, colour = self.asking
        said = self.build.levels[level - 1].names[slot]
        if colour is None:  # the camera's own reading, when it has one, takes one tap to confirm
            mine = [said] if said and said not in COLOURS else []
            seen = f" (the camera read {Block.parse(said).spoken()})" if said else ""
            labels = [f"it is {Block.parse(n).spoken()}" for n in mine] + [c if c != "wild" else "the Wild" for c in COLOURS]
            self.session.ask(self._qid(), f"Level {level}, slot {slot}{seen}: what colour is the block?",
                             mine + list(COLOURS), labels)
        else:
            self.session.ask(self._qid(), f"Level {level}, slot {slot}: {colour} and which number or symbol?",
                             list(SYMBOLS), [_SYMBOL_WORDS.get(s, s) for s in SYMBOLS])

    def on_answer(self, qid: str, option: str) -> list:
        """The builder's answer to a build question: the colour asks for the symbol next; the
        symbol (or the Wild) names the block in the build's map."""
        if qid.startswith("covered-") and self.covered is not None:
            read, self.covered = self.covered, None
            if option == "yes":
                self.build.accept(read)
                for slot in range(3):
                    self.add(read.level, slot)
            else:
                self.build.deny_covered()
            return []
        if self.asking is None or not qid.startswith("build-"):
            raise ValueError("that question is not about the tower being built")
        level, slot, colour = self.asking
        if colour is None and option in COLOURS and option != "wild":
            self.asking = (level, slot, option)
            return []
        name = option if colour is None else f"{colour}-{option}"  # the Wild, the camera's reading, or colour and symbol
        try:
            Block.parse(name)
        except BlockError as exc:
            raise ValueError(str(exc)) from None
        self.build.correct(level, slot, name)
        self.answered.add((level, slot))
        self.asking = None
        for lv, s in self.build.over_counted():  # a block named may clash with one the camera read
            self.add(lv, s)
        return []

    def withdraw(self) -> None:
        """Stop asking (the build was ended another way): the open question leaves the page."""
        if self.asking is not None:
            self.session.clear_question(self._qid())
        if self.covered is not None:
            self.session.clear_question(f"covered-{self.covered.level}")
        self.waiting.clear()
        self.asking = None
        self.covered = None

    def _qid(self) -> str:
        """The id of the question on the slot being asked about, at its step (colour, then symbol)."""
        level, slot, colour = self.asking
        return f"build-{level}-{slot}" + (f"-{colour}" if colour else "")
