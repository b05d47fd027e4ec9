"""A real headless Chromium follows a whole round on the table page, and the table's clicks reach
the referee; after the referee is killed and restarted, the page recovers by itself."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from web_ui.app import create_app
from web_ui.hub import TableHub
from web_ui.replay import tower_steps
from web_ui.server import BackgroundServer
from web_ui.store import MatchStore

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
PIN = "2468"

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def a_round_with_a_wild() -> tuple[list[dict], list[dict]]:
    """Events and decisions of a whole round (real engine) in which a Wild's color is named."""
    from referee.randomplay import Mischief, random_game
    from referee.script import ScriptRunner

    for seed in range(200):
        events = random_game(random.Random(seed), players=4, mischief=Mischief(foul=0.1, nonsense=0.0, collapse=0.01))
        runner = ScriptRunner()
        outputs = [runner.feed(dict(e)) for e in events]
        if outputs[-1].get("over") and any(o.get("waiting_for") == "wild_color" for o in outputs) \
                and any(o.get("fouls") for o in outputs) and len(events) < 120:
            return events, outputs
    raise AssertionError("no suitable random round found")


def camera_frame(text: str) -> bytes:
    """A hand-made overhead frame with a detection box drawn on it."""
    import cv2
    import numpy as np

    img = np.full((240, 320, 3), 90, np.uint8)
    cv2.rectangle(img, (100, 60), (220, 180), (40, 160, 40), 3)
    cv2.putText(img, text, (104, 200), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1)
    ok, jpeg = cv2.imencode(".jpg", img)
    assert ok
    return jpeg.tobytes()


def test_the_page_follows_a_whole_round_and_the_table_can_act(browser, tmp_path):
    events, outputs = a_round_with_a_wild()
    players = events[0]["players"]
    towers = tower_steps(events, outputs)
    hub = TableHub()
    app = create_app(hub, MatchStore(tmp_path / "log.sqlite"), PIN)
    with BackgroundServer(app) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server.url + "/")
        page.wait_for_selector("#conn.on")
        page.fill("#pin", PIN)
        page.click("#unlock button")
        page.wait_for_selector("body.is-table")

        clicked = False
        fouls_seen = 0
        for i, (event, out) in enumerate(zip(events, outputs)):
            if not out["ok"]:
                continue
            report = dict(out, tower=towers[i]["tower"], hand=towers[i]["hand"], players=players, match="m", round=1,
                          standings={p: {"wins": 0, "losses": 0, "fouls": 0} for p in players})
            frame = camera_frame(f"step {i}") if event["event"] == "place" else None
            seq = hub.publish(report, out["say"], frame)
            page.wait_for_function(f"document.body.dataset.seq == '{seq}'")
            if out["turn"]:
                assert page.inner_text("#turn") == out["turn"]
                assert page.inner_text("#seat") == f"seat {players.index(out['turn']) + 1} of {len(players)}"
            assert page.locator("#tower .level").count() == len(towers[i]["tower"])
            call = out["call"]
            if not (out["over"] or out["waiting_for"] or call["free"]):  # the call: swatches and numbers
                assert page.locator("#call .big-swatch").count() == len(call["colors"])
                assert page.locator("#call .number").all_inner_texts() == [str(n) for n in call["numbers"]]
                if call["numbers_only"]:
                    assert "number block" in page.inner_text("#call-text")
            fouls_seen += len(out["fouls"])
            assert page.locator("#fouls li").count() == fouls_seen
            if out["waiting_for"] == "wild_color" and not clicked:
                assert page.is_visible("#waiting") and page.is_visible(".color-btn[data-color=green]")
                page.screenshot(path=str(ARTIFACTS / "page-table-wild.png"), full_page=True)
                page.click(".color-btn[data-color=green]")
                action = hub.next_action(timeout=5)
                assert action is not None
                assert (action["action"], action["color"], action["player"]) == ("wild_color", "green", out["turn"])
                page.select_option("#uno-caller", players[0] if out["turn"] != players[0] else players[1])
                page.select_option("#uno-offender", out["turn"])
                page.click("#uno")
                action = hub.next_action(timeout=5)
                assert action is not None and action["action"] == "uno" and action["offender"] == out["turn"]
                clicked = True
        assert clicked
        final = outputs[-1]
        over = page.inner_text("#over")
        assert (f"{final['loser']} lost" if final["loser"] else "nobody lost") in over
        assert page.locator("#standings tr").count() == len(players)
        page.screenshot(path=str(ARTIFACTS / "page-table-end.png"), full_page=True)

        phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
        phone.goto(server.url + "/")
        phone.wait_for_function(f"document.body.dataset.seq == '{hub.latest()['seq']}'")
        assert phone.is_visible("#turn") and not phone.is_visible("#uno")  # a spectator sees no controls
        assert phone.locator("#fouls li").count() == fouls_seen  # a late viewer gets the round so far
        phone.screenshot(path=str(ARTIFACTS / "page-phone.png"), full_page=True)
        phone.close()
        page.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(log: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--log", str(log), "--port", str(port),
                             "--host", "127.0.0.1", "--pin", PIN], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert "status page" in proc.stdout.readline()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    raise AssertionError("stacko serve did not start")


def test_the_page_recovers_after_the_referee_is_killed_and_restarted(browser, tmp_path):
    from web_test_helpers import logged_round

    log = tmp_path / "log.sqlite"
    with MatchStore(log) as store:
        match_id, _, _, outputs = logged_round(store, seed=3)
    port = free_port()
    proc = start_serve(log, port)
    try:
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector("#conn.on")
        page.fill("#pin", PIN)
        page.click("#unlock button")
        page.wait_for_selector("body.is-table")
        last = [o for o in outputs if o["ok"]][-1]
        assert page.inner_text("#turn") == (last["turn"] or "round over")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        page.wait_for_selector("#conn.off", timeout=10_000)
        with MatchStore(log) as store:  # a new round is logged while the page waits
            m = store.new_match(["Zed", "Yan"])
            r = store.new_round(m)
            from referee.tower import random_tower
            setup = {"event": "setup", "players": ["Zed", "Yan"], "tower": random_tower(random.Random(1))}
            from referee.script import ScriptRunner
            store.append(m, r, setup, output=ScriptRunner().feed(dict(setup)))
        proc = start_serve(log, port)
        page.wait_for_selector("#conn.on", timeout=15_000)
        page.wait_for_function("document.getElementById('turn').textContent === 'Zed'", timeout=10_000)
        page.wait_for_selector("body:not(.is-table)", timeout=10_000)  # the new referee run must be unlocked again
        page.fill("#pin", PIN)
        page.click("#unlock button")
        page.wait_for_selector("body.is-table", timeout=10_000)
        with MatchStore(log) as store:  # the referee (another process) goes on logging: the page follows
            pull = {"event": "pull", "level": 1, "slot": 1}
            runner = ScriptRunner()
            runner.feed(dict(setup))
            out = runner.feed(dict(pull))
            assert out["ok"]
            store.append(m, r, pull, output=out)
        page.wait_for_selector("#hand .block", timeout=10_000)
        assert page.locator("#tower .block:not(.empty)").count() == 44
        page.screenshot(path=str(ARTIFACTS / "page-after-restart.png"), full_page=True)
        page.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)


def test_history_steps_through_a_logged_round_and_plots_a_collapse(browser, tmp_path):
    from web_test_helpers import logged_round

    store = MatchStore(tmp_path / "log.sqlite")
    match_id, round_no, events, _ = logged_round(store, seed=3)
    m = store.new_match(["Ana", "Ben"])
    r = store.new_round(m)
    store.append(m, r, {"event": "setup", "players": ["Ana", "Ben"], "tower": events[0]["tower"]})
    store.append(m, r, {"event": "pull", "level": 2, "slot": 1})
    t = [i / 100 for i in range(100)]
    store.append(m, r, {"event": "collapse"}, evidence={"t_event": 0.5, "traces": {
        "tilt_deg": {"t": t, "v": [0.1 if x < 0.5 else 8.0 for x in t], "unit": "deg"},
        "load_g": {"t": t, "v": [1200.0 if x < 0.5 else 700.0 for x in t], "unit": "g"}}})
    store.finish_round(m, r, None, "Ana", "collapse")
    with BackgroundServer(create_app(TableHub(), store, PIN)) as server:
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(server.url + "/history")
        assert page.locator("#matches tbody tr").count() == 2
        assert page.locator("#standings tbody tr").count() == len(set(events[0]["players"]) | {"Ana", "Ben"})
        page.click(f"a[href='/history/{m}/1']")
        page.wait_for_selector("#tower .level")
        assert page.locator("#tower .block:not(.empty)").count() == 45
        page.click("#next")
        assert page.locator("#tower .block:not(.empty)").count() == 44
        assert page.inner_text("#hand").startswith("in hand")
        page.click("#last")
        assert "collapse" in page.inner_text("#step-event")
        assert page.locator("svg.traces polyline").count() == 2
        page.screenshot(path=str(ARTIFACTS / "page-round.png"), full_page=True)
        page.close()


def run_the_loop_once(session, timeout: float = 10.0) -> list[dict]:
    """What the match loop does each tick, until a page request has been handled."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        handled = session.poll_page()
        if handled:
            return handled
        time.sleep(0.05)
    raise AssertionError("no request from the page reached the referee")


def test_the_table_answers_the_referees_question_and_undoes_a_call_on_the_page(browser, tmp_path):
    from referee.loop.session import RefereeSession
    from referee.tower import random_tower

    store = MatchStore(tmp_path / "log.sqlite")
    hub = TableHub()
    session = RefereeSession(store, hub)
    session.start_match(["Ana", "Ben", "Cy"])
    tower = random_tower(random.Random(5))
    session.start_round(tower)
    first = session.round.legal_pulls()[0]
    answers = []
    session.on_answer = lambda qid, option: answers.append(option) or [
        {"event": "pull", "level": int(option.split("/")[0]), "slot": int(option.split("/")[1]), "player": "Ana"}]
    with BackgroundServer(create_app(hub, store, PIN)) as server:
        page = browser.new_page(viewport={"width": 1024, "height": 768}, has_touch=True)  # the tablet at the table
        page.goto(server.url + "/")
        page.wait_for_selector("#conn.on")
        page.fill("#pin", PIN)
        page.click("#unlock button")
        page.wait_for_selector("body.is-table")
        session.ask("q1", f"Which {first.block.spoken()} was pulled: level {first.level}, slot {first.slot} or level 20, slot 1?",
                    [f"{first.level}/{first.slot}", "20/1"], [f"level {first.level}, slot {first.slot}", "level 20, slot 1"])
        page.wait_for_selector("#question .answer-btn")
        assert page.locator(".answer-btn").all_inner_texts() == [f"level {first.level}, slot {first.slot}", "level 20, slot 1"]
        page.screenshot(path=str(ARTIFACTS / "page-question.png"), full_page=True)
        page.reload()  # the question survives a reload
        page.wait_for_selector("#question .answer-btn")
        page.click(f".answer-btn[data-option='{first.level}/{first.slot}']")
        [report] = run_the_loop_once(session)
        assert answers == [f"{first.level}/{first.slot}"] and report["ok"]
        page.wait_for_selector("#question", state="hidden")
        page.wait_for_selector("#hand .block")
        assert store.events(session.match_id)[-1].evidence["answer"]["question"] == "q1"

        page.click("#undo")
        [undone] = run_the_loop_once(session)
        assert undone["undone"]["event"] == "pull"
        page.wait_for_selector("#hand .block", state="detached")
        assert "takes back" in page.inner_text("#feed")
        assert page.locator("#tower .block:not(.empty)").count() == 45
        assert [e.event["event"] for e in store.events(session.match_id)] == ["setup"]
        page.screenshot(path=str(ARTIFACTS / "page-after-undo.png"), full_page=True)
        # the referee missed a pull: the table enters it by hand, from the legal pulls offered
        assert page.locator("#ev-where option").first.inner_text() == f"level {first.level}, slot {first.slot}: {first.block.name}"
        page.click("#ev-send")
        [entered] = run_the_loop_once(session)
        assert entered["ok"] and store.events(session.match_id)[-1].evidence == {"source": "page", "by_hand": True}
        page.wait_for_selector("#hand .block")
        page.select_option("#ev-kind", "place")
        page.select_option("#ev-where", "other")
        page.fill("#ev-level", "3")
        page.fill("#ev-slot", "1")
        page.click("#ev-send")
        [refused] = run_the_loop_once(session)
        assert refused["ok"] is False
        page.wait_for_selector("#toast.bad")  # the refusal is shown, and said
        assert "level 3, slot 1 already holds" in page.inner_text("#toast")
        page.wait_for_function("document.getElementById('feed').textContent.includes('Please check')")
        session.undo_last()
        page.goto(f"{server.url}/history/{session.match_id}/1")  # the history shows the voided pull struck through
        page.click("#last")
        assert page.locator("#step-event.voided").count() == 1 and "voided" in page.inner_text("#step-say")
        assert page.locator("#tower .block:not(.empty)").count() == 45
        page.close()


def test_a_blind_camera_stands_on_the_page_until_it_sees_again(browser, tmp_path):
    """The match loop's "camera" in the table state (`loop.camera_watch`): a banner with the
    reason, for the table and the spectators alike, gone with the next state without it."""
    hub = TableHub()
    app = create_app(hub, MatchStore(tmp_path / "log.sqlite"), PIN)
    base = {"ok": True, "turn": "Ana", "players": ["Ana", "Ben"], "say": []}
    with BackgroundServer(app) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server.url + "/")
        page.wait_for_selector("#conn.on")
        seq = hub.publish(dict(base))
        page.wait_for_function(f"document.body.dataset.seq == '{seq}'")
        assert not page.is_visible("#camera-problem")
        reason = "Cannot find the tray: the picture is mirrored (the camera's flip setting): turn mirroring off."
        seq = hub.publish(dict(base, camera=reason), ["The camera cannot see the tower. " + reason])
        page.wait_for_function(f"document.body.dataset.seq == '{seq}'")
        assert page.is_visible("#camera-problem") and page.inner_text("#camera-reason") == reason
        page.screenshot(path=str(ARTIFACTS / "page-camera-blind.png"))
        seq = hub.publish(dict(base), ["The camera sees the tower again."])
        page.wait_for_function(f"document.body.dataset.seq == '{seq}'")
        assert not page.is_visible("#camera-problem")
        page.close()
