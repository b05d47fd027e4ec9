"""The referee at the table: applies events, logs them first, then shows and speaks the decision.

One session owns the match state. Every accepted event is committed to the match log before it
is announced, so a crash or power cut loses nothing that was said; `resume` replays the log.
The senses (camera, sensors, buttons, page) only ever reach the engine through `submit`.

Corrections lose nothing either: `undo_last` voids the last accepted event of the round in the log
(the row stays, a void row says when and why) and rebuilds the match from the events that stand;
the table's answers to the referee's questions (`ask`) are logged with the events they lead to.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from referee.events import IllegalEvent, parse_event
from referee.match import Match


class Speaker(Protocol):
    def say(self, text: str, urgent: bool = False) -> None: ...


class Clock(Protocol):
    def now(self) -> float: ...


class _WallClock:
    def now(self) -> float:
        return time.monotonic()


@dataclass
class Pending:
    """A color the referee waits for, and since when (for the timeouts of RULES.md)."""

    kind: str
    player: str
    since: float


@dataclass
class SessionStats:
    accepted: int = 0
    refused: int = 0
    announce_latency_s: list[float] = field(default_factory=list)
    # (event kind, clock time, wall time) of every accepted event: latency against ground truth
    timeline: list[tuple[str, float, float]] = field(default_factory=list)


class RefereeSession:
    def __init__(
        self,
        store: Any = None,
        hub: Any = None,
        speaker: Speaker | None = None,
        clock: Clock | None = None,
        echo: Callable[[str], None] | None = None,
    ):
        self.store = store
        self.hub = hub
        self.speaker = speaker
        self.clock = clock or _WallClock()
        self.echo = echo
        self.match = Match()
        self.match_id: str | None = None
        self.round_no = 0
        self.players: list[str] = []
        self.options: dict | None = None
        self.pending: Pending | None = None
        self.stats = SessionStats()
        self.frame_jpeg: bytes | None = None
        self.last_refusal: str | None = None
        # what keeps the camera from seeing the tower while it is blind (loop.camera_watch): on the page
        self.camera_problem: str | None = None
        # The open question on the page ({"id", "text", "options", "labels"}) and who maps answers to events.
        self.question: dict | None = None
        # Play the table made while the referee waited for a color (event, evidence, released_at):
        # judged once the color is named (RULES.md: the game waits for it).
        self.held: list[tuple[dict, dict | None, float | None]] = []
        # A call announced before the table answered the question that settles its events (every
        # answer leads to the same decision): the question's id, the lines said, when, the round as
        # the first answer makes it (what the senses compare with meanwhile) and that answer.
        self.early: dict | None = None
        # Play the table made after such a call, before the answer: judged once the answer is logged.
        self.held_early: list[tuple[dict, dict | None, float | None]] = []
        self._settling: dict | None = None  # the early call whose events are being applied now
        self.early_swap: dict[str, str] = {}  # after its answer: the early call's places, if the answer was the other
        self.on_answer: Callable[[str, str], list[dict] | None] | None = None
        # A collapse entered on the page: the match loop blames it as a fall its sensors felt
        # (a pull under way, or the table asked who was touching); without one, it is logged as is
        self.on_collapse_report: Callable[[dict], dict] | None = None
        # The match as it stood before the current round's setup, and the round's standing events
        # (log seq, event): what an undo replays.
        self._base = Match()
        self._round_events: list[tuple[int | None, dict]] = []

    # -- state ----------------------------------------------------------------------------------
    @property
    def round(self):
        return self.match.current

    @property
    def round_events(self) -> list[dict]:
        """The current round's standing events, oldest first (what `undo_last` takes back from
        the end): a player checking the referee's last call reads them."""
        return [dict(e) for _, e in self._round_events]

    @property
    def over(self) -> bool:
        return self.round is not None and self.round.over

    # -- starting -------------------------------------------------------------------------------
    def start_match(self, players: Sequence[str], options: dict | None = None) -> str | None:
        self.players = list(players)
        self.options = options
        self.match = Match()
        self.question = None
        self.early, self.held_early = None, []
        self._base, self._round_events = Match(), []
        if self.store is not None:
            self.match_id = self.store.new_match(self.players, options)
        self.round_no = 0
        return self.match_id

    def start_round(self, tower: Sequence[Sequence[str | None]], blocks: Any = None) -> dict:
        setup: dict[str, Any] = {"event": "setup", "players": self.players, "tower": [list(r) for r in tower]}
        if self.options:
            setup["options"] = self.options
        if blocks is not None:
            setup["blocks"] = blocks
        if self.store is not None:
            self.round_no = self.store.new_round(self.match_id)
        else:
            self.round_no += 1
        return self.submit(setup)

    def resume(self) -> bool:
        """Pick up an unfinished match from the log: replay its events, say where play stands."""
        if self.store is None:
            return False
        info = self.store.unfinished_match()
        if info is None:
            return False
        self.match_id = info["id"]
        self.players = list(info.get("players") or [])
        match = Match()
        last_round = 0
        for logged in self.store.iter_events(self.match_id):  # voided events are left out
            try:
                event = parse_event(logged.event)
                before, match = match, match.apply(event)
            except IllegalEvent as exc:  # a log written by another version: report, keep going
                self.note(f"resume: event {logged.round}/{logged.seq} is no longer accepted: {exc}")
                continue
            if event.kind == "setup":
                self._base, self._round_events = before, []
            self._round_events.append((logged.seq, event.to_dict()))
            last_round = logged.round
        if match.current is None:
            return False
        self.match = match
        self.round_no = last_round
        self.options = dict(info.get("options") or {}) or None
        rnd = self.round
        note = f"Resuming match {self.match_id}, round {self.round_no}, where it stopped."
        self.announce([note] + [s for s in _prompt(rnd)], urgent=False)
        return True

    # -- events ---------------------------------------------------------------------------------
    def submit(self, event: dict, evidence: dict | None = None, released_at: float | None = None) -> dict:
        """Apply one referee event: log it, publish it, speak it. Refused events are said, not logged."""
        if self.early is not None and self._settling is None and not (isinstance(event, dict) and event.get("event") == "setup"):
            return self._hold_early(event, evidence, released_at)
        try:
            parsed = parse_event(event)
            match = self.match.apply(parsed)
        except IllegalEvent as exc:
            if self._play_before_the_color(event):
                return self._hold(event, evidence, released_at)
            self.stats.refused += 1
            return self._refuse(str(exc), f"refused {event}: {exc}")
        prev = self.match.current
        if parsed.kind == "setup":
            self._base, self._round_events = self.match, []
            self.question = None
            self.held = []
            self.early, self.held_early = None, []
        elif match.current.over and self.held:  # the round ended with play still waiting: keep it in the log
            evidence = {**(evidence or {}), "held_play_not_judged": [e for e, _, _ in self.held]}
            self.held = []
        self.match = match
        rnd = match.current
        report = rnd.report()
        seq = None
        if self.store is not None:
            seq = self.store.append(self.match_id, self.round_no, parsed.to_dict(), evidence=evidence,
                                    t=time.time(), output=report)
            if rnd.over and (prev is None or not prev.over):  # this event ended the round
                self.store.finish_round(self.match_id, self.round_no, rnd.outcome.winner, rnd.outcome.loser,
                                        rnd.outcome.reason)
        self._round_events.append((seq, parsed.to_dict()))
        if rnd.over:
            self.question = None  # nothing left to ask about
        self.stats.accepted += 1
        settling = self._settling
        # The time the decision was announced: for events whose call was announced before the
        # answer settled them, that earlier moment (release-to-announcement latencies use it).
        said_at = settling["t"] if settling is not None else self.clock.now()
        self.stats.timeline.append((parsed.kind, said_at, time.monotonic()))
        self._track_pending(rnd)
        lines = list(report["say"])
        if settling is not None:  # what was already said is not said again
            for line in list(lines):
                if line in settling["unsaid"]:
                    settling["unsaid"].remove(line)
                    lines.remove(line)
        self.announce(lines, urgent=bool(report["fouls"]) or rnd.over)
        if released_at is not None:
            self.stats.announce_latency_s.append(max(0.0, said_at - released_at))
        if self.held and rnd.waiting_for is None:
            self._judge_held()
        return report

    # -- play while a color is due ----------------------------------------------------------------
    @property
    def play_round(self):
        """The round as the table plays it: with the held play applied as if the color the referee
        waits for were the one it would name itself. What the senses see is compared with this."""
        rnd = self.round
        if self.early is not None:
            rnd = self.early["round"]
            for event, _, _ in self.held_early:
                rnd = rnd.apply(parse_event(event))  # (each was checked against this when held)
            return rnd
        if not self.held or rnd is None or rnd.waiting_for is None:
            return rnd
        try:
            rnd = rnd.apply(parse_event({"event": rnd.waiting_for, "color": rnd.default_color().value,
                                         "player": rnd.turn}))
            for event, _, _ in self.held:
                rnd = rnd.apply(parse_event(event))
        except IllegalEvent:
            return self.round
        return rnd

    def _play_before_the_color(self, event: dict) -> bool:
        rnd = self.round
        if rnd is None or rnd.over or rnd.waiting_for is None or not isinstance(event, dict):
            return False
        return event.get("event") == "pull" or (bool(self.held) and event.get("event") in ("place", "two_hands", "touch"))

    def _hold(self, event: dict, evidence: dict | None, released_at: float | None) -> dict:
        """The table played on before the color was named: keep the play, judge it once it is."""
        rnd = self.round
        self.held.append((dict(event), evidence, released_at))
        who = self.pending.player if self.pending is not None else rnd.turn
        what = "the Wild's color" if rnd.waiting_for == "wild_color" else "the penalty color"
        line = f"Noted. {who} names {what} first; then this play counts."
        self.note(f"held until {what} is named: {event}")
        if event.get("event") == "pull":
            self.announce([line])
        return {**self._table_state(), "ok": True, "held": True, "say": [line]}

    # -- a call announced before the answer that settles it -------------------------------------------
    def announce_early(self, qid: str, lines: Sequence[str], provisional, option: str, urgent: bool = False) -> None:
        """Announce the call of a turn whose events wait for the table's answer to question `qid`,
        because every answer leads to the same decision. Nothing is logged: the answer's events are
        (`answer`), without saying these lines again. `provisional`: the round as `option` makes it,
        what the senses compare the next play with until the answer."""
        self.early = {"qid": str(qid), "lines": list(lines), "t": self.clock.now(), "round": provisional,
                      "option": str(option)}
        self.announce(lines, urgent=urgent)

    def _hold_early(self, event: dict, evidence: dict | None, released_at: float | None) -> dict:
        """The table played on after a call announced before its answer: keep the play (it is
        judged against the round as logged once the answer is)."""
        try:
            self.play_round.apply(parse_event(event))
        except IllegalEvent as exc:
            self.stats.refused += 1
            return self._refuse(str(exc), f"refused {event}: {exc}")
        self.held_early.append((dict(event), evidence, released_at))
        self.note(f"held until the open question is answered: {event}")
        return {**self._table_state(), "ok": True, "held": True, "say": []}

    def withdraw_early(self, qid: str) -> dict | None:
        """The early call of question `qid` (None: there is none) is no longer pending: its events
        come another way (a player tells them); `settle_early` then judges the play held since."""
        early = self.early
        if early is None or early["qid"] != str(qid):
            return None
        self.early = None
        return early

    def settle_early(self, early: dict, option: str | None) -> None:
        """The early call's question is answered (`option`, the place its pull is logged from): the
        play held since is judged. It was read against the round as `early["option"]` made it; if
        the answer is the other place, a pull from where the block remained there is from the place
        the answer left (the same block). Without `option` (the question withdrawn, its turn not
        logged) the held play is not judged against a round it was not read against: it is dropped,
        and the table is told to enter it."""
        held, self.held_early = self.held_early, []
        if option is None:
            self.early_swap = {}
            if held:
                self.announce([f"The referee did not log the play made since its last call ({len(held)} "
                               f"event{'s' if len(held) > 1 else ''}): please enter it on the page."], urgent=True)
            return
        swap = {}
        if option is not None and option != early["option"]:
            swap = {early["option"]: option, option: early["option"]}
        self.early_swap = swap
        for event, evidence, released_at in held:
            if event.get("event") == "pull" and f"{event.get('level')}/{event.get('slot')}" in swap:
                level, slot = swap[f"{event.get('level')}/{event.get('slot')}"].split("/")
                event = {**event, "level": int(level), "slot": int(slot)}
            self.submit(event, {**(evidence or {}), "held_until_answer": True}, released_at)

    def _judge_held(self) -> None:
        held, self.held = self.held, []
        for event, evidence, released_at in held:
            self.submit(event, {**(evidence or {}), "held_until_color": True}, released_at)

    def finish_match(self) -> None:
        if self.store is not None and self.match_id is not None:
            self.store.finish_match(self.match_id)

    # -- colors: page, buttons and timeouts -------------------------------------------------------
    def name_color(self, color: str, player: str | None = None) -> dict | None:
        """A color from a button or the page goes to whichever color the referee waits for."""
        rnd = self.round
        if rnd is None or rnd.waiting_for is None:
            return None
        event = {"event": rnd.waiting_for, "color": color}
        if player:
            event["player"] = player
        return self.submit(event, evidence={"source": "button" if player is None else "page"})

    def tick(self) -> dict | None:
        """Apply the color timeouts: past them the referee names the color itself and says so."""
        rnd = self.round
        if self.pending is None or rnd is None or rnd.waiting_for is None:
            return None
        limit = rnd.options.wild_timeout_s if self.pending.kind == "wild_color" else rnd.options.penalty_color_timeout_s
        if self.clock.now() - self.pending.since < limit:
            return None
        color = rnd.default_color().value
        who = self.pending.player
        self.announce([f"{who} named no color in time: the referee names {color}."], urgent=False)
        return self.submit({"event": rnd.waiting_for, "color": color, "player": who},
                           evidence={"source": "timeout", "waited_s": round(self.clock.now() - self.pending.since, 2)})

    def handle_action(self, action: dict) -> dict | None:
        """A request from the page (already validated by web_ui.actions)."""
        kind = action.get("action")
        if kind in ("wild_color", "penalty_color"):
            event = {"event": kind, "color": action["color"]}
            if action.get("player"):
                event["player"] = action["player"]
            return self.submit(event, evidence={"source": action.get("source", "page")})
        if kind == "uno":
            return self.submit({"event": "uno", "caller": action["caller"], "offender": action["offender"]},
                               evidence={"source": action.get("source", "page")})
        if kind == "claim_no_match":
            return self.submit({"event": "claim_no_match", "player": action["player"]},
                               evidence={"source": action.get("source", "page")})
        if kind == "answer":
            return self.answer(action["question"], action["option"], source=action.get("source", "page"))
        if kind == "undo":
            return self.undo_last(source=action.get("source", "page"))
        if kind == "event":  # entered by hand on the page: the engine decides, a refusal is said
            evidence = {"source": action.get("source", "page"), "by_hand": True}
            if dict(action["event"]) == {"event": "collapse"} and self.on_collapse_report is not None:
                return self.on_collapse_report(evidence)
            return self.submit(dict(action["event"]), evidence=evidence)
        return None

    # -- questions to the table ---------------------------------------------------------------------
    def ask(self, qid: str, text: str, options: Sequence[str], labels: Sequence[str] | None = None,
            *, speak: bool = True) -> dict:
        """Put a question to the table: shown on the page with one button per option until it is
        answered (`on_answer`) or withdrawn (`clear_question`); spoken unless `speak` is False.
        Without `labels`, each button says its option in words (`option_label`)."""
        options = [str(o) for o in options]
        labels = [str(label) for label in labels] if labels is not None else [option_label(o) for o in options]
        if not options:
            raise ValueError("a question needs at least one option")
        if len(labels) != len(options):
            raise ValueError(f"a question needs one label per option ({len(options)} options, {len(labels)} labels)")
        if len(set(options)) != len(options):
            raise ValueError("a question's options must differ")
        self.question = {"id": str(qid), "text": str(text), "options": options, "labels": labels}
        self.announce([text] if speak else [], urgent=True)
        return self.question

    def clear_question(self, qid: str | None = None) -> None:
        """Withdraw the open question (only if it is `qid`, when given); the page hides it."""
        if self.question is None or (qid is not None and self.question["id"] != qid):
            return
        cleared, self.question = self.question["id"], None
        self.announce([])
        early = self.withdraw_early(cleared)
        if early is not None:
            self.settle_early(early, None)

    def answer(self, qid: str, option: str, source: str = "page") -> dict:
        """The table's answer: checked against the open question, logged, handed to `on_answer`,
        and the events it returns submitted with the answer as their evidence. `on_answer` returns
        event dicts, or (event, evidence) pairs whose evidence is logged beside the answer."""
        q = self.question
        if q is None:
            return self._refuse("the referee has no open question: it was already answered or withdrawn")
        if qid != q["id"]:
            return self._refuse("that question is no longer open: answer the one on the page now")
        if option not in q["options"]:
            return self._refuse(f"{option!r} is not one of the answers: pick one of {', '.join(q['labels'])}")
        self.question = None
        early = self.early if self.early is not None and self.early["qid"] == q["id"] else None
        if early is not None:  # the events are made against the round as logged, not the provisional one
            self.early = None
        label = q["labels"][q["options"].index(option)]
        self.announce([f"The table answers: {label}."])
        events: list[dict] = []
        extra: list[dict] = []  # evidence the loop adds per event (what the question was about)
        error = None
        if self.on_answer is not None:
            try:
                for item in self.on_answer(q["id"], option) or []:
                    event, more = item if isinstance(item, tuple) else (item, None)
                    events.append(dict(event))
                    extra.append(dict(more or {}))
            except Exception as exc:  # a bug on the loop's side must not stop the referee
                error = f"the referee could not use the answer {label!r}: {exc}"
                self.note(error)
        if self.store is not None:
            self.store.record_answer(self.match_id, self.round_no or None, q, option, source, events)
        if error is not None:  # the question is withdrawn: the loop asks again if it still must
            if early is not None:
                self.settle_early(early, None)
            return self._refuse(error)
        answer = {"question": q["id"], "text": q["text"], "option": option, "label": label}
        more_early = {}
        if early is not None:
            more_early = {"announced_before_the_answer": {"t": round(early["t"], 4), "say": early["lines"]}}
            self._settling = {**early, "unsaid": list(early["lines"])}
        try:
            reports = [self.submit(e, evidence={**more, **more_early, "source": source, "answer": answer})
                       for e, more in zip(events, extra)]
        finally:
            self._settling = None
        if early is not None:
            self.settle_early(early, option)
        return reports[-1] if reports else {**self._table_state(), "ok": True, "say": [f"The table answers: {label}."]}

    # -- corrections ----------------------------------------------------------------------------------
    def undo_last(self, source: str = "page", reason: str = "taken back from the table") -> dict:
        """Void the last accepted event of the current round and rebuild the match without it.

        The log keeps the event and records the void. An event that ended the round may be taken
        back (the round is open again); the round's setup may not, nor anything of an earlier round.
        """
        if self.held:  # the last play the table made is still waiting for the color: drop it
            event, _, _ = self.held.pop()
            self.announce([f"Taken back: {describe_event(event)}."])
            return {**self._table_state(), "ok": True, "undone": event}
        if self.held_early:  # play after a call whose question is still open: the last of it
            event, _, _ = self.held_early.pop()
            self.announce([f"Taken back: {describe_event(event)}."])
            return {**self._table_state(), "ok": True, "undone": event}
        if self.early is not None:  # the call announced before its answer: withdrawn with its question
            early, self.early = self.early, None
            if self.question is not None and self.question["id"] == early["qid"]:
                self.question = None
            lines = ["The referee takes back its last call: that turn is not logged."] + _prompt(self.round)
            self.announce(lines, urgent=False)
            return {**self._table_state(), "ok": True, "say": lines, "undone": {"announced": early["lines"]}}
        if self.round is None:
            return self._refuse("no round is being played: there is nothing to take back")
        if len(self._round_events) <= 1:
            earlier = " (the referee does not take back events of a finished round)" if self.round_no > 1 else ""
            return self._refuse(f"there is nothing to take back in round {self.round_no}: only its setup is logged{earlier}")
        seq, event = self._round_events[-1]
        standing = self._round_events[:-1]
        match = self._base
        try:
            for _, e in standing:
                match = match.apply(parse_event(e))
        except IllegalEvent as exc:  # cannot happen for events the engine accepted; say so if it does
            return self._refuse(f"the round cannot be rebuilt without {describe_event(event)}: {exc}")
        was = self.round
        said = dict(event)
        if said.get("event") == "pull" and not said.get("player") and was.hand is not None:
            said["player"] = was.players[was.hand.player]  # "Ben's pull", not "the pull"
        if self.store is not None and seq is not None:
            detail: dict[str, Any] = {"event": event}
            if was.over and was.outcome is not None:
                detail["outcome"] = {"winner": was.outcome.winner, "loser": was.outcome.loser, "reason": was.outcome.reason}
            self.store.void(self.match_id, self.round_no, seq, reason, source, detail, reopen_round=was.over)
        self.match = match
        self._round_events = standing
        self._track_pending(match.current)
        lines = [f"The referee takes back {describe_event(said)}."] + _prompt(match.current)
        self.announce(lines, urgent=False)
        return {**match.current.report(), "say": lines, "undone": event, "seq": seq}

    def poll_page(self) -> list[dict]:
        if self.hub is None:
            return []
        return [r for a in self.hub.actions() if (r := self.handle_action(a)) is not None]

    # -- output ---------------------------------------------------------------------------------
    def _track_pending(self, rnd) -> None:
        if rnd.waiting_for is None:
            self.pending = None
        elif self.pending is None or self.pending.kind != rnd.waiting_for or self.pending.player != rnd.turn:
            self.pending = Pending(rnd.waiting_for, rnd.turn, self.clock.now())

    def _table_state(self) -> dict:
        state = self._round_state()
        if self.camera_problem:
            state["camera"] = self.camera_problem
        return state

    def _round_state(self) -> dict:
        rnd = self.round
        if rnd is None:
            return {"question": self.question} if self.question else {}
        state = rnd.report()
        state["tower"] = rnd.tower.names()
        state["hand"] = (
            {"player": rnd.players[rnd.hand.player], "block": rnd.hand.block.name,
             "level": rnd.hand.level, "slot": rnd.hand.slot}
            if rnd.hand else None
        )
        state["players"] = list(rnd.players)
        state["builder"] = rnd.players[rnd.builder]
        state["match"] = self.match_id
        state["round"] = self.round_no
        state["turns"] = rnd.turns_completed
        state["standings"] = {p: vars(s) for p, s in self.match.standings}
        state["question"] = self.question
        # choices for an event entered by hand on the page
        state["legal_pulls"] = [{"level": o.level, "slot": o.slot, "block": o.block.name} for o in rnd.legal_pulls()]
        state["place_options"] = [list(p) for p in rnd.place_options()]
        state["can_undo"] = len(self._round_events) > 1
        return state

    def _refuse(self, message: str, console: str | None = None) -> dict:
        """Say and show why a request changes nothing (the state stays as it was)."""
        self.last_refusal = message
        self.note(console or f"refused: {message}")
        if self.hub is not None:
            line = f"Please check: {message}"
            self.hub.publish({**self._table_state(), "ok": False, "error": message, "say": [line]}, [line])
        return {"ok": False, "error": message}

    def announce(self, lines: Sequence[str], urgent: bool = False) -> None:
        """Show lines on the page (with the table state) and speak them."""
        lines = [s for s in lines if s]
        if self.hub is not None:
            state = self._table_state()
            state["say"] = list(lines)
            self.hub.publish(state, list(lines), self.frame_jpeg)
        for line in lines:
            self.note(line)
            if self.speaker is not None:
                self.speaker.say(line, urgent=urgent)

    def note(self, text: str) -> None:
        """A line for the console (the operator), not for the table."""
        if self.echo is not None:
            self.echo(text)


def option_label(option: str) -> str:
    """An answer option in words for its button: "4/0" -> "level 4, slot 0", "red-3" -> "red 3"."""
    level, sep, slot = option.partition("/")
    if sep and level.isdigit() and slot.isdigit():
        return f"level {level}, slot {slot}"
    from referee.blocks import Block, BlockError

    try:
        return Block.parse(option).spoken()
    except (BlockError, ValueError):
        return option


def describe_event(event: dict) -> str:
    """An event in words, for "the referee takes back ..."."""
    kind = event.get("event")
    who = event.get("player")
    if kind == "pull":
        what = f" of {event['block']}" if event.get("block") else ""
        return f"{who + chr(39) + 's' if who else 'the'} pull{what} from level {event.get('level')}, slot {event.get('slot')}"
    if kind == "place":
        return f"the block placed on level {event.get('level')}, slot {event.get('slot')}"
    if kind == "wild_color":
        return f"the Wild's color {event.get('color')}"
    if kind == "penalty_color":
        return f"the penalty color {event.get('color')}"
    if kind == "two_hands":
        return f"two hands by {who}"
    if kind == "uno":
        return f"{event.get('caller')}'s 'Uno!' on {event.get('offender')}"
    if kind == "touch":
        return f"the touch by {who}"
    if kind == "claim_no_match":
        return f"{who}'s 'no match'"
    if kind == "collapse":
        return "the collapse"
    return f"the {kind} event"


def _prompt(rnd) -> list[str]:
    from referee import announce

    text = announce.prompt_for(rnd)
    return [text] if text else []
