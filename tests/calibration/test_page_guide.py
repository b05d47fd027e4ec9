"""`stacko calibrate --page`: the guided calibration on the status page. Each instruction shows on the table
page and waits for the table's "Done" (PIN-protected, for the open instruction only); on the twin the whole
route runs unattended and the page ends up showing every step's verdict."""

from __future__ import annotations

import io
import socket
import threading
import time
from contextlib import redirect_stdout
from types import SimpleNamespace

import pytest

from calibration.page_guide import CalibrationHub, PageGuide, estimate_person_s
from calibration.person_time import PersonTimeModel, TimeLedger
from calibration.steps import Action, StepResult
from hardware.clock import RealClock
from web_ui.app import PIN_HEADER, create_app

PIN = "4321"
WEIGHT = Action("put_weight", "Put the known weight (500 g) in the middle of the tray and let go.", 500.0)


def table_rig():
    """A table (not the twin): a person does the instructions; the guide only needs its backend and clock."""
    return SimpleNamespace(backend="pi", clock=RealClock())


@pytest.fixture
def page():
    hub = CalibrationHub()
    guide = PageGuide(table_rig(), interactive=True, hub=hub, out=lambda _: None, poll_s=0.05,
                      steps=("markers", "loadcell"), expected_s=100.0)
    guide.step = "loadcell"
    client = create_app(hub, pin=PIN, testing=True).test_client()
    yield guide, client
    guide.stop()


def wait_for(check, what: str, timeout_s: float = 10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"gave up waiting for {what}")


def start_instruction(guide: PageGuide, action: Action = WEIGHT) -> threading.Thread:
    """The guide gives an instruction and waits for Done, on a thread (as the route does on the main one)."""
    thread = threading.Thread(target=guide.do, args=(action,), daemon=True)
    thread.start()
    wait_for(lambda: published_instruction(guide) == action.text, "the instruction on the page")
    return thread


def published_instruction(guide: PageGuide) -> str | None:
    latest = guide.hub.latest()
    instruction = latest["report"]["calibration"]["instruction"] if latest else None
    return instruction["text"] if instruction else None


def tap(client, step: str, pin: str | None = PIN):
    headers = {PIN_HEADER: pin} if pin else {}
    return client.post("/api/actions", json={"action": "calibration_next", "step": step}, headers=headers)


def test_an_instruction_is_published_with_its_time_and_weight_and_waits_for_done(page):
    guide, client = page
    thread = start_instruction(guide)
    state = client.get("/api/state").get_json()
    assert WEIGHT.text in state["say"], "the contract state says the instruction"
    calibration = client.get("/api/table").get_json()["calibration"]
    instruction = calibration["instruction"]
    assert instruction["text"] == WEIGHT.text and instruction["grams"] == 500.0 and instruction["by"] == "table"
    assert instruction["seconds"] == round(sum(guide.ledger.model.instruction_s(WEIGHT).values()))
    assert calibration["step"] == "loadcell" and calibration["step_no"] == 2 and calibration["person_s_left"] == 100
    time.sleep(0.2)
    assert thread.is_alive(), "the guide waits for the table"

    assert tap(client, instruction["key"]).status_code == 202
    thread.join(timeout=10)
    assert not thread.is_alive(), "Done on the page lets the route go on"
    after = client.get("/api/table").get_json()["calibration"]
    assert after["instruction"] is None
    assert after["person_s_left"] == 100 - instruction["seconds"], "the instruction's time is spent"


def test_a_stale_or_repeated_done_is_refused_in_words_and_does_not_skip_an_instruction(page):
    guide, client = page
    first = start_instruction(guide)
    key = guide.instruction["key"]
    assert tap(client, key).status_code == 202
    first.join(timeout=10)

    refused = tap(client, key)
    assert refused.status_code == 400 and "no instruction is waiting" in refused.get_json()["error"]

    second = start_instruction(guide, Action("remove_weight", "Take the weight off again."))
    stale = tap(client, key)
    assert stale.status_code == 400 and "already done: the referee has moved on" in stale.get_json()["error"]
    time.sleep(0.2)
    assert second.is_alive(), "a Done for the instruction before does not finish this one"
    assert tap(client, guide.instruction["key"], pin=None).status_code == 403, "only the table (PIN) may tap Done"
    assert tap(client, guide.instruction["key"]).status_code == 202
    again = tap(client, key)
    second.join(timeout=10)
    assert not second.is_alive() and again.status_code == 400


def test_match_requests_are_refused_while_the_table_calibrates(page):
    guide, client = page
    guide.say("Step 2 of 2: the load cell")
    got = client.post("/api/actions", json={"action": "undo"}, headers={PIN_HEADER: PIN})
    assert got.status_code == 400 and "calibrating" in got.get_json()["error"]
    guide.finish(True, "Calibration complete.")
    assert client.post("/api/actions", json={"action": "undo"}, headers={PIN_HEADER: PIN}).status_code == 202


def test_the_results_are_published_with_their_grades(page):
    guide, client = page
    guide.result(StepResult("loadcell", True, "good", ["scale: 429.5 ADC counts per gram"]))
    guide.result(StepResult("imu", False, "failed", ["the tray shook"]))
    results = client.get("/api/table").get_json()["calibration"]["results"]
    assert [(r["step"], r["grade"], r["ok"]) for r in results] == [("loadcell", "good", True), ("imu", "failed", False)]
    assert results[0]["lines"] == ["scale: 429.5 ADC counts per gram"]


def test_the_whole_quick_route_on_the_twin_shows_every_verdict_on_the_page(tmp_path):
    pytest.importorskip("hardware.sim")  # picks the offscreen GL before MuJoCo loads
    from calibration.files import CalibrationDir, load_limits
    from calibration.guided import STEPS, run_guided
    from deploy.rig import make_rig

    limits = load_limits()
    cal = CalibrationDir(tmp_path / "cal", limits)
    cal.path.mkdir(parents=True)
    model = PersonTimeModel.load()
    hub = CalibrationHub()
    printed: list[str] = []
    rig = make_rig("sim", 3, [])
    guide = PageGuide(rig, interactive=True, hub=hub, out=printed.append, ledger=TimeLedger(model), steps=STEPS,
                      expected_s=estimate_person_s(model, STEPS, "quick", 3, 3))
    seen_instructions: list[dict] = []
    real_publish = hub.publish

    def publish(report, *args, **kwargs):
        if report["calibration"]["instruction"]:
            seen_instructions.append(report["calibration"]["instruction"])
        return real_publish(report, *args, **kwargs)

    hub.publish = publish
    try:
        results = run_guided(rig, cal, limits, guide, limits["loadcell"]["default_known_grams"], 3, STEPS, levels=3)
    finally:
        rig.close()
    assert all(r.ok for r in results), [r.lines for r in results]
    calibration = hub.latest()["report"]["calibration"]
    assert sorted(r["step"] for r in calibration["results"]) == sorted(STEPS)
    assert all(r["grade"] in ("good", "usable") for r in calibration["results"])
    assert seen_instructions and all(i["by"] == "twin" for i in seen_instructions), "the twin acts, the page shows"
    assert len({i["key"] for i in seen_instructions}) == guide.ledger.counts["instructions"]
    assert calibration["person_s_left"] == 0, "the estimate of the route's person time was all spent"
    assert any("(the twin did it)" in line for line in printed), "the terminal still shows the route"


def test_stacko_calibrate_page_prints_the_address_and_pin_and_runs_the_route(tmp_path):
    pytest.importorskip("hardware.sim")
    from referee.cli import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["calibrate", "--backend", "sim", "--yes", "--page", "--host", "127.0.0.1", "--port", str(port),
                     "--steps", "markers,imu", "--calibration", str(tmp_path / "cal")])
    text = out.getvalue()
    assert code == 0, text
    assert f"http://127.0.0.1:{port}/" in text and "PIN" in text
    assert "markers: GOOD" in text and "imu: GOOD" in text and "Calibration complete" in text



def test_a_taken_port_is_refused_in_words_before_anything_is_calibrated(tmp_path):
    pytest.importorskip("hardware.sim")
    from referee.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out = io.StringIO()
        with redirect_stdout(out):
            code = main(["calibrate", "--backend", "sim", "--yes", "--page", "--host", "127.0.0.1", "--port",
                         str(taken.getsockname()[1]), "--steps", "markers", "--calibration", str(tmp_path / "cal")])
    assert code == 2 and "could not start on port" in out.getvalue() and "another --port" in out.getvalue()
    assert not (tmp_path / "cal" / "tray.json").exists()


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not __import__("pathlib").Path(CHROMIUM).exists(), reason="needs Debian's chromium")
def test_the_table_taps_done_in_a_real_browser_and_sees_the_verdict(page):
    from playwright.sync_api import sync_playwright

    from web_ui.server import BackgroundServer

    guide, _ = page
    app = create_app(guide.hub, pin=PIN)
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
    with BackgroundServer(app) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        try:
            tab = browser.new_page(viewport={"width": 1024, "height": 768})
            guide.say("Step 2 of 2: the load cell")
            tab.goto(server.url + "/")
            tab.wait_for_selector("#conn.on")
            tab.wait_for_selector("#calibration:not([hidden])")
            assert not tab.is_visible("#cal-done"), "only the table sees Done"
            tab.fill("#pin", PIN)
            tab.click("#unlock button")
            tab.wait_for_selector("body.is-table")
            thread = start_instruction(guide)
            tab.wait_for_function("document.getElementById('cal-instruction').textContent.includes('known weight')")
            assert "left" in tab.text_content("#cal-left") and "500 g" in tab.text_content("#cal-meta")
            assert not tab.is_visible(".turn-card"), "the match's cards step aside while the table calibrates"
            tab.click("#cal-done")
            thread.join(timeout=10)
            assert not thread.is_alive(), "the tap on Done let the route go on"
            tab.wait_for_selector("#cal-done", state="hidden")
            guide.result(StepResult("loadcell", True, "good", ["one block read as 16.9 g"]))
            tab.wait_for_selector("#cal-results li.grade-good")
            assert "16.9 g" in tab.text_content("#cal-results")
        finally:
            browser.close()
