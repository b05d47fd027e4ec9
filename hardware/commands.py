"""`stacko record`, `stacko replay`, `stacko bench detectors` (heavy modules imported in handlers)."""

from __future__ import annotations

import argparse
import json
import sys

DEFAULT_SESSIONS = "recordings/twin"


def _event_json(ev) -> dict:
    return {"t": round(ev.t, 4), "event": ev.kind.value, "confidence": round(ev.confidence, 3),
            "evidence": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in ev.evidence.items()}}


def _replay(args: argparse.Namespace) -> int:
    from hardware.detectors import DetectorConfigError, load_detector_config
    from hardware.detectors.bench import run_detectors
    from hardware.recorder import Session, SessionError

    try:
        cfg = load_detector_config(args.detectors)
        session = Session(args.session)
        events = run_detectors(session, cfg)
    except (DetectorConfigError, SessionError) as exc:
        print(f"stacko replay: {exc}", file=sys.stderr)
        return 2
    for ev in events:
        print(json.dumps(_event_json(ev)))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hardware.detectors import DetectorConfigError, load_detector_config
    from hardware.detectors.bench import bench, find_sessions
    from hardware.recorder import SessionError

    root = Path(args.sessions)
    if args.record:
        from hardware.twin_sessions import record_twin_rounds

        record_twin_rounds(root, range(args.seed, args.seed + args.record), args.max_pulls,
                           progress=lambda info: print(f"recorded {json.dumps(info)}", file=sys.stderr))
    sessions = find_sessions(root) if root.exists() else []
    if not sessions:
        print(f"stacko bench detectors: no recorded sessions with truth.jsonl under {root}. "
              "Record twin sessions first (--record N, or the twin's own recording command), or pass --sessions DIR.", file=sys.stderr)
        return 2
    try:
        cfg = load_detector_config(args.detectors)
        scores, seconds = bench(sessions, cfg)
    except (DetectorConfigError, SessionError) as exc:
        print(f"stacko bench detectors: {exc}", file=sys.stderr)
        return 2
    rows = [s.as_dict() for s in scores.values()]
    if args.misses:
        for s in scores.values():
            for where, t in s.misses:
                print(f"missed {s.kind:8} {where} t={t:.3f}", file=sys.stderr)
            for where, t in s.false_alarms:
                print(f"false  {s.kind:8} {where} t={t:.3f}", file=sys.stderr)
    for r in rows:
        print(json.dumps(r))
    from hardware.detectors.bench import CAMERA_ROW

    collapse = scores["collapse"].as_dict()
    collapse2 = scores["collapse_off_tray"].as_dict()
    fused = scores[CAMERA_ROW].as_dict() if CAMERA_ROW in scores else None
    camera = {} if fused is None else {
        "collapse_with_camera_recall_100": fused["recall"] == 1.0, "collapse_with_camera_false_alarms": fused["fp"],
        "collapse_with_camera_median_latency_from_impact_ok": (fused.get("latency_from_impact_ms_median") or 1e9) <= 100.0}
    print(json.dumps({"sessions": len(sessions), "recorded_s": seconds, **camera,
                      "collapse_recall_100": collapse["recall"] == 1.0, "collapse_false_alarms": collapse["fp"],
                      "collapse_median_latency_from_impact_ok": (collapse["latency_from_impact_ms_median"] or 1e9) <= 100.0,
                      "collapse_off_tray_recall_100": collapse2["recall"] == 1.0, "collapse_off_tray_false_alarms": collapse2["fp"],
                      "collapse_off_tray_median_latency_from_impact_ok": (collapse2["latency_from_impact_ms_median"] or 1e9) <= 100.0,
                      "lift_f1_ok": (scores["lift"].as_dict()["f1"] or 0) >= 0.99,
                      "place_f1_ok": (scores["place"].as_dict()["f1"] or 0) >= 0.99}))
    print(f"{'detector':17} {'truth':>6} {'tp':>5} {'fp':>4} {'fn':>4} {'prec':>6} {'recall':>6} {'F1':>6} {'lat med':>8} {'lat p95':>8}",
          file=sys.stderr)
    for r in rows:
        f = lambda x, d=3: "-" if x is None else f"{x:.{d}f}"  # noqa: E731
        extra = f"   from impact: {f(r['latency_from_impact_ms_median'], 0)}ms median" if "latency_from_impact_ms_median" in r else ""
        print(f"{r['detector']:17} {r['truth']:6d} {r['tp']:5d} {r['fp']:4d} {r['fn']:4d} {f(r['precision']):>6} {f(r['recall']):>6} "
              f"{f(r['f1']):>6} {f(r['latency_ms_median'], 0):>6}ms {f(r['latency_ms_p95'], 0):>6}ms{extra}", file=sys.stderr)
    return 0


def _record(args: argparse.Namespace) -> int:
    from hardware.backends import build_devices, choose_backend, load_device_config
    from hardware.errors import DeviceError
    from hardware.recorder import SessionWriter
    from hardware.session_recording import record_loop

    twin = None
    try:
        cfg = load_device_config(args.devices)
        backend = choose_backend(cfg, args.backend)
        if backend == "replay":
            print("stacko record: a replay is already a recording; record with --backend pi or sim", file=sys.stderr)
            return 2
        if backend == "sim":
            from hardware.sim.twin import Twin

            twin = Twin(seed=args.seed)
        devices = build_devices(backend, config=cfg, twin=twin, quiet_voice=True, strict=False)
    except DeviceError as exc:
        print(f"stacko record: {exc}", file=sys.stderr)
        return 2
    for name, problem in devices.problems.items():
        print(f"stacko record: {name} not recorded: {problem}", file=sys.stderr)
    imu_hz = float(cfg["imu"]["sample_rate_hz"])
    sps = float(cfg["loadcell"]["rate_sps"])
    try:
        with SessionWriter(args.out, devices.backend, imu_hz, sps, extra={"devices": cfg}) as writer:
            n = record_loop(devices, writer, args.seconds, args.frame_period, twin=twin, with_frames=not args.no_frames)
    except KeyboardInterrupt:
        n = None
    finally:
        devices.close()
        if twin is not None:
            twin.close()
    print(json.dumps({"session": str(args.out), **(n or {})}))
    return 0


def register(groups) -> None:
    p = groups.command("record", "record every raw stream of the table (IMU, load cell, frames, buttons) to a session folder", _record)
    p.add_argument("out", help="session folder to write")
    p.add_argument("--backend", choices=("pi", "sim"), help="devices to record (default: STACKO_BACKEND or the devices file)")
    p.add_argument("--seconds", type=float, default=None, help="stop after this long (default: until Ctrl-C)")
    p.add_argument("--frame-period", type=float, default=0.1, help="seconds between camera frames")
    p.add_argument("--no-frames", action="store_true", help="sensors and buttons only")
    p.add_argument("--devices", help="device settings file (default hardware/devices.json or STACKO_DEVICES)")
    p.add_argument("--seed", type=int, default=0, help="twin seed (sim backend)")

    p = groups.command("replay", "run the sensor detectors over a recorded session; prints events as JSON lines", _replay)
    p.add_argument("session", help="session folder")
    p.add_argument("--detectors", help="detector settings (default calibration/defaults/detectors.json)")

    p = groups.subcommand("bench", "detectors", "precision, recall and latency of each sensor detector over recorded twin sessions", _bench)
    p.add_argument("--sessions", default=DEFAULT_SESSIONS, help=f"folder of session folders with truth.jsonl (default {DEFAULT_SESSIONS})")
    p.add_argument("--detectors", help="detector settings (default calibration/defaults/detectors.json)")
    p.add_argument("--misses", action="store_true", help="also list every miss and false alarm (session and time) on stderr")
    p.add_argument("--record", type=int, default=0, metavar="N",
                   help="first record N twin rounds (seeds from --seed) into the sessions folder; existing ones are kept")
    p.add_argument("--seed", type=int, default=0, help="first seed for --record")
    p.add_argument("--max-pulls", type=int, default=6, help="pulls per recorded round before the tower is pushed over")
