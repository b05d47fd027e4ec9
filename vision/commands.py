"""The vision subcommands: calibrate markers / vision, vision identify, bench vision."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(groups) -> None:
    p = groups.subcommand("calibrate", "markers", "print the tray sheet (true-scale PNG and PDF) and its tray.json", _markers)
    p.add_argument("--out", required=True, help="folder to write tray-sheet.png, tray-sheet.pdf and tray.json")
    p.add_argument("--size-mm", type=float, default=280.0, help="tray side in mm (default 280)")
    p.add_argument("--marker-mm", type=float, default=34.0, help="marker side in mm (default 34)")
    p.add_argument("--dpi", type=int, default=300, help="print resolution (default 300)")

    p = groups.subcommand("calibrate", "vision", "learn the table's blocks, light and hands from a labelled kit", _calibrate)
    p.add_argument("kit", help="kit folder: tray.json, images/, labels.json (CONTRACT.md section 2)")
    p.add_argument("--out", required=True, help="folder to write the calibration to")

    p = groups.group("vision", "the camera pipeline")
    q = p.add_parser("identify", help="read the top level and hands in images, one JSON line each",
                     description="read the top level and hands in images, one JSON line each")
    q.add_argument("calibration", help="folder written by `stacko calibrate vision`")
    q.add_argument("images", nargs="+", help="image files")
    q.add_argument("--details", action="store_true", help="add confidences, hand sides and notes to each line")
    q.set_defaults(handler=_identify)
    q = p.add_parser("overlay", help="draw what the pipeline saw on images into one picture",
                     description="draw what the pipeline saw (markers, the top's slots and reading, the hand ring, "
                                 "counted hands) on each image, side by side in one PNG")
    q.add_argument("calibration", help="folder written by `stacko calibrate vision`")
    q.add_argument("images", nargs="+", help="image files")
    q.add_argument("--out", required=True, help="PNG file to write")
    q.add_argument("--columns", type=int, default=3, help="images a row (default 3)")
    q.set_defaults(handler=_overlay)
    q = p.add_parser("synthkit", help="render an independent synthetic kit (OpenCV, not the twin)",
                     description="render an independent synthetic kit (OpenCV, not the twin)")
    q.add_argument("out")
    q.add_argument("--images", type=int, default=40)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--focal", type=float, default=None, help="the camera's focal length in px (default: drawn per kit)")
    q.add_argument("--lens", type=float, nargs=2, metavar=("K1", "K2"), default=(0.0, 0.0),
                   help="radial lens distortion (k1 < 0: barrel, as wide camera modules); default none")
    q.add_argument("--table", choices=("plain", "wood", "cloth"), default="plain",
                   help="the table round the tray: one colour (default), wood grain or a check cloth")
    q.add_argument("--style", default=None, metavar="EFFECT=V[,EFFECT=V]",
                   help="another renderer's or camera's look put on every photo: " + _style_help())
    q.set_defaults(handler=_synthkit)
    q = p.add_parser("evaluate", help="score a calibration on a labelled kit (per-image JSON lines + summary)",
                     description="score a calibration on a labelled kit (per-image JSON lines + summary)")
    q.add_argument("calibration")
    q.add_argument("kit")
    q.add_argument("--rows", help="write one JSON line per image here")
    q.set_defaults(handler=_evaluate)

    p = groups.subcommand("bench", "vision", "vision speed (640x480, one thread) and accuracy on unseen kits", _bench)
    p.add_argument("--calib-kit", help="kit to calibrate on (default: a synthetic kit rendered now)")
    p.add_argument("--test-kit", action="append", default=[], help="kit(s) to score (default: synthetic kits with other light/pose/skin)")
    p.add_argument("--images", type=int, default=60, help="images per generated kit")
    p.add_argument("--work", default=None, help="folder for generated kits and the calibration (default: a temp folder)")
    p.add_argument("--rows", default=None, help="write per-image results (JSON lines) here")
    p.add_argument("--style", default=None, metavar="EFFECT=V[,EFFECT=V]",
                   help="put a renderer's or camera's look on every drawn kit, the calibration kit's too: " + _style_help())
    p.add_argument("--families", type=int, default=1,
                   help="kit families to draw, each a calibration kit and two unseen kits (seeds 101/202/404, "
                        "then 1101/1202/1404, ...); with more than one, all their kits are also scored as one")


def _style_help() -> str:
    # (written out: vision.styles imports OpenCV, which every `stacko` command would then load)
    return ("gamma (tone curve exponent, 1.6: darker mid-tones), saturation (factor), cast (warm light: red "
            "times it), jpeg (quality), defocus (blur sigma px), vignette (light lost at the corners), fringe "
            "(colour fringe px); e.g. gamma=1.6,jpeg=35")


def _err(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


def _markers(args: argparse.Namespace) -> int:
    from vision.sheet import write_sheet

    try:
        paths = write_sheet(args.out, args.size_mm, args.marker_mm, args.dpi)
    except (OSError, ValueError) as exc:
        return _err(str(exc))
    for p in paths:
        print(p)
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from vision.calibrate import calibrate_kit
    from vision.kit import KitError

    try:
        calibrate_kit(args.kit, args.out, log=lambda m: print(m, file=sys.stderr))
    except KitError as exc:
        return _err(str(exc))
    except OSError as exc:
        return _err(f"cannot write the calibration to {args.out}: {exc.strerror or exc}")
    print(json.dumps({"ok": True, "out": str(args.out)}))
    return 0


def _identify(args: argparse.Namespace) -> int:
    import cv2

    from vision.frame_errors import UnreadableFrame, reader_fault
    from vision.reader import CalibrationMissing, load_pipeline, read_frame
    from vision.tray import TrayNotFound

    try:
        pipe = load_pipeline(args.calibration)
    except CalibrationMissing as exc:
        return _err(str(exc))
    for path in args.images:
        out: dict
        img = cv2.imread(path, cv2.IMREAD_COLOR) if Path(path).is_file() else None
        if img is None:
            why = "no such file" if not Path(path).exists() else "not an image OpenCV can read"
            out = {"image": path, "error": f"cannot read the image: {why}"}
        else:
            try:
                res = read_frame(pipe, img)
                r = res.reading
                out = {"image": path, "orientation": r.orientation, "slots": r.names, "hands": len(r.hands)}
                if args.details:
                    out.update({
                        "confidence": [round(s.confidence, 3) for s in r.slots],
                        "candidates": [list(map(list, s.candidates)) for s in r.slots],
                        "orientation_confidence": round(res.orientation_p, 3),
                        "hand_sides": [h.side for h in r.hands],
                        "uncertain": r.uncertain, "note": r.note, "z_top_mm": round(res.z_top, 1),
                    })
            except TrayNotFound as exc:
                out = {"image": path, "error": str(exc)}
            except UnreadableFrame as exc:
                out = {"image": path, "error": f"cannot read the image: {exc}"}
            except Exception as exc:  # a fault in the reader: this image's line says so, the rest are read
                out = {"image": path, "error": reader_fault(exc)}
                print(f"warning: {path}: {out['error']}", file=sys.stderr)
        print(json.dumps(out), flush=True)
    return 0


def _overlay(args: argparse.Namespace) -> int:
    import cv2

    from vision.frame_errors import UnreadableFrame, reader_fault
    from vision.overlay import draw_overlay, overlay_sheet
    from vision.reader import CalibrationMissing, load_pipeline, read_frame
    from vision.tray import TrayNotFound

    try:
        pipe = load_pipeline(args.calibration)
    except CalibrationMissing as exc:
        return _err(str(exc))
    tiles = []
    for path in args.images:
        img = cv2.imread(path, cv2.IMREAD_COLOR) if Path(path).is_file() else None
        if img is None:
            print(f"{path}: cannot read the image, left out", file=sys.stderr)
            continue
        try:
            tiles.append(draw_overlay(pipe, img, read_frame(pipe, img)))
        except (TrayNotFound, UnreadableFrame) as exc:
            print(f"{path}: {exc}, left out", file=sys.stderr)
        except Exception as exc:  # a fault in the reader or the drawing: the others are drawn
            print(f"{path}: {reader_fault(exc)}; left out", file=sys.stderr)
    if not tiles:
        return _err("none of the images could be read, so nothing was drawn")
    if not cv2.imwrite(str(args.out), overlay_sheet(tiles, args.columns)):
        return _err(f"cannot write {args.out}")
    print(args.out)
    return 0


def _synthkit(args: argparse.Namespace) -> int:
    from vision.styles import parse_style, style_kit
    from vision.synthkit import SynthOptions, write_kit

    try:
        style = parse_style(args.style or "")
    except ValueError as exc:
        return _err(str(exc))
    write_kit(args.out, args.images, args.seed, SynthOptions(lens_radial=(args.lens[0], args.lens[1]), table=args.table), focal=args.focal)
    if style.effects:
        style_kit(style, args.out)
    print(args.out)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    import cv2

    from vision.evaluate import evaluate_kit, json_ready
    from vision.kit import KitError
    from vision.reader import CalibrationMissing, load_pipeline

    cv2.setNumThreads(1)
    try:
        pipe = load_pipeline(args.calibration)
        print(json.dumps(json_ready(evaluate_kit(pipe, args.kit, args.rows))))
    except (CalibrationMissing, KitError) as exc:
        return _err(str(exc))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from vision.bench import run_bench

    return run_bench(args)
