#!/usr/bin/env python3
"""Differential test: `fraud-detector replay` against the independent Python reference
(spec_reference.py) on seeded adversarial streams (gen_edge_cases.py).

For each seed and each parameter set, one stream is generated and both sides replay it; on
odd seeds (and in the fixed cases that have one) with a seeded controls file
(gen_edge_cases.generate_controls), so that `--controls` and `--suppressed-output` are compared
too. Compared: the alerts as JSON values without `detected_at`, in order, the suppressed alerts
the same way, and the summary object (the last stderr line), exactly.

    differential_test.py --binary build/service/fraud-detector --seeds 20 --records 3000
    differential_test.py --binary ... --repro FILE [--window-ms W --grace-ms G
                         --threshold N --max-events M] [--controls FILE] [--minimize]

Exit 0 when every stream agrees, 1 on any mismatch (each one is reported with its seed,
parameters, the first differing alert/summary field and a kept copy of the input), 2 on a
usage or environment error.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_edge_cases  # noqa: E402
from fixed_cases import fixed_cases, fixed_control_cases  # noqa: E402
import spec_record  # noqa: E402
import spec_reference  # noqa: E402

CARD_HASH_KEY = "differential-test-key-of-32-bytes-\u00e9"
ALERT_FIELD_ORDER = ["alert_id", "idempotency_key", "revision", "card_ref", "rule", "threshold", "window_ms",
                     "grace_ms", "window_start", "window_end", "countries", "tx_ids", "trigger_tx_id",
                     "trigger_event_time", "detected_at"]


@dataclass(frozen=True)
class ParamSet:
    name: str
    window_ms: int
    grace_ms: int
    threshold: int
    max_events: int

    def cli(self) -> list[str]:
        return ["--window-ms", str(self.window_ms), "--grace-ms", str(self.grace_ms),
                "--threshold", str(self.threshold), "--max-events", str(self.max_events)]

    def reference_params(self) -> spec_reference.Params:
        return spec_reference.Params(self.window_ms, self.grace_ms, self.threshold, self.max_events)


PARAM_SETS = [
    ParamSet("defaults", 600_000, 120_000, 3, 1000),
    ParamSet("W1000-G0-N2-M2", 1000, 0, 2, 2),
    ParamSet("W1000-G300-N3-M3", 1000, 300, 3, 3),
    ParamSet("W5-G5-N1-M1", 5, 5, 1, 1),
    # Grace much longer than the window: many out-of-order events are accepted far below
    # the latest windows, so s* can fall before an incident's start and overflow evicts
    # events that arrive late; M = N + 1 keeps overflow frequent without making N=M.
    ParamSet("W100-G250-N2-M3", 100, 250, 2, 3),
    # The smallest window: only equal or adjacent milliseconds share a window.
    ParamSet("W1-G0-N2-M2", 1, 0, 2, 2),
]


@dataclass
class Outcome:
    alerts: list[dict]
    summary: dict
    suppressed: list[dict] | None = None  # with a controls file


@dataclass
class Mismatch:
    signature: tuple  # what differs, stable under shrinking the input
    message: str


# --------------------------------------------------------------------------- running both sides


def _alert_lines(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        return [line for line in f.read().split(b"\n") if line.strip()]


def run_binary(binary: str, path: str, params: ParamSet, controls_path: str | None = None) -> Outcome:
    with tempfile.NamedTemporaryFile(suffix=".alerts.jsonl", delete=False) as out:
        out_path = out.name
    with tempfile.NamedTemporaryFile(suffix=".suppressed.jsonl", delete=False) as out:
        suppressed_path = out.name
    suppressed_lines = None
    try:
        env = dict(os.environ, FRAUD_CARD_HASH_KEY=CARD_HASH_KEY)
        controls = [] if controls_path is None else ["--controls", controls_path,
                                                      "--suppressed-output", suppressed_path]
        proc = subprocess.run([binary, "replay", "--input", path, "--output", out_path, *controls, *params.cli()],
                              env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"binary exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}")
        alert_lines = _alert_lines(out_path)
        if controls_path is not None:
            suppressed_lines = _alert_lines(suppressed_path)
    finally:
        os.unlink(out_path)
        os.unlink(suppressed_path)
    stderr_lines = [line for line in proc.stderr.decode("utf-8", errors="replace").split("\n") if line.strip()]
    if not stderr_lines:
        raise RuntimeError("binary wrote no summary line on stderr")
    # The binary's output must itself be strict JSON (valid UTF-8, no lone surrogates...).
    alerts = [spec_record.strict_json_loads(line) for line in alert_lines]
    suppressed = None if suppressed_lines is None else [spec_record.strict_json_loads(line)
                                                         for line in suppressed_lines]
    return Outcome(alerts=alerts, summary=spec_record.strict_json_loads(stderr_lines[-1].encode()),
                   suppressed=suppressed)


def run_reference(data: bytes, params: ParamSet, controls: bytes | None = None) -> Outcome:
    key = CARD_HASH_KEY.encode()
    suppressed = None
    if controls is None:
        alerts, summary = spec_reference.replay_bytes(data, params.reference_params(), key)
    else:
        alerts, suppressed, summary = spec_reference.replay_with_controls(data, params.reference_params(), key,
                                                                          controls)
    # Round-trip through JSON text so both sides are compared as decoded JSON values.
    return Outcome(alerts=[json.loads(json.dumps(a)) for a in alerts], summary=json.loads(json.dumps(summary)),
                   suppressed=None if suppressed is None else [json.loads(json.dumps(a)) for a in suppressed])


# --------------------------------------------------------------------------- comparison


def _short(value) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 300 else text[:300] + "..."


def compare_alerts(kind: str, ref_list: list[dict], bin_list: list[dict]) -> Mismatch | None:
    """kind: "alert" (the output) or "suppressed" (the suppressed output)."""
    for i, alert in enumerate(bin_list):
        if not isinstance(alert, dict) or not isinstance(alert.get("detected_at"), int) \
                or isinstance(alert.get("detected_at"), bool):
            return Mismatch((f"{kind}-detected_at",), f"binary {kind} #{i} lacks an integer detected_at: {_short(alert)}")
    ref_alerts = [{k: v for k, v in a.items() if k != "detected_at"} for a in ref_list]
    bin_alerts = [{k: v for k, v in a.items() if k != "detected_at"} for a in bin_list]
    for i, (r, b) in enumerate(zip(ref_alerts, bin_alerts)):
        if r == b:
            continue
        names = [k for k in ALERT_FIELD_ORDER if k in r or k in b] + sorted((set(r) | set(b)) - set(ALERT_FIELD_ORDER))
        name = next(k for k in names if r.get(k, "<absent>") != b.get(k, "<absent>"))
        return Mismatch((kind, name),
                        f"{kind} #{i} field {name!r}: reference={_short(r.get(name, '<absent>'))} "
                        f"binary={_short(b.get(name, '<absent>'))}\n"
                        f"    reference {kind}: {_short(r)}\n    binary {kind}:    {_short(b)}")
    if len(ref_alerts) != len(bin_alerts):
        n = min(len(ref_alerts), len(bin_alerts))
        extra_side, extra = ("reference", ref_alerts[n]) if len(ref_alerts) > n else ("binary", bin_alerts[n])
        return Mismatch((f"{kind}-count", extra_side),
                        f"{kind} count: reference={len(ref_alerts)} binary={len(bin_alerts)}; "
                        f"first extra {kind} #{n} on the {extra_side} side: {_short(extra)}")
    return None


def compare(ref: Outcome, binary: Outcome) -> Mismatch | None:
    mismatch = compare_alerts("alert", ref.alerts, binary.alerts)
    if mismatch is None and (ref.suppressed is not None or binary.suppressed is not None):
        mismatch = compare_alerts("suppressed", ref.suppressed or [], binary.suppressed or [])
    if mismatch is not None:
        return mismatch
    if ref.summary != binary.summary:
        keys = list(ref.summary) + [k for k in binary.summary if k not in ref.summary]
        key = next(k for k in keys if ref.summary.get(k, "<absent>") != binary.summary.get(k, "<absent>"))
        return Mismatch(("summary", key),
                        f"summary field {key!r}: reference={_short(ref.summary.get(key, '<absent>'))} "
                        f"binary={_short(binary.summary.get(key, '<absent>'))}\n"
                        f"    reference summary: {_short(ref.summary)}\n    binary summary:    {_short(binary.summary)}")
    return None


def check_bytes(binary: str, data: bytes, params: ParamSet,
                controls: bytes | None = None) -> tuple[Mismatch | None, int]:
    """Replays data (with the controls file, when given) on both sides; returns (first mismatch
    or None, alerts compared, suppressed ones included)."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as f:
        f.write(data)
        path = f.name
    controls_path = None
    if controls is not None:
        with tempfile.NamedTemporaryFile(suffix=".controls.jsonl", delete=False) as f:
            f.write(controls)
            controls_path = f.name
    try:
        try:
            bin_outcome = run_binary(binary, path, params, controls_path)
        except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            return Mismatch(("binary-error",), f"binary failed: {e}"), 0
        ref_outcome = run_reference(data, params, controls)
    finally:
        os.unlink(path)
        if controls_path is not None:
            os.unlink(controls_path)
    return compare(ref_outcome, bin_outcome), len(ref_outcome.alerts) + len(ref_outcome.suppressed or [])


# --------------------------------------------------------------------------- seeded run


# A controls file for a generated stream: on odd seeds.
NO_CONTROLS = b"<none>"


def run_one(binary: str, label: str, data: bytes | None, controls: bytes | None, seed: int, records: int,
            invalid_rate: float, params: ParamSet) -> tuple[str, ParamSet, bytes, bytes | None, Mismatch | None, int]:
    """One stream: the given bytes, or (data=None) a generated stream for seed, with its controls
    file (controls=None with a generated stream: one generated on odd seeds)."""
    if data is None:
        data = gen_edge_cases.generate(seed, records, params.window_ms, params.grace_ms, invalid_rate)
        if controls is None and seed % 2 == 1:
            controls = gen_edge_cases.generate_controls(seed, data)
    if controls == NO_CONTROLS:
        controls = None
    mismatch, compared = check_bytes(binary, data, params, controls)
    return label, params, data, controls, mismatch, compared


def repro_command(binary: str, path: str, params: ParamSet, controls_path: str | None = None) -> str:
    controls = "" if controls_path is None else f" --controls {controls_path}"
    return f"{sys.argv[0]} --binary {binary} --repro {path}{controls} {' '.join(params.cli())}"


def run_seeds(args) -> int:
    jobs = [(f"fixed-{name}", data, NO_CONTROLS, 0, ParamSet(name, *p)) for name, data, p in fixed_cases()]
    jobs += [(f"fixed-{name}", data, controls, 0, ParamSet(name, *p))
             for name, data, controls, p in fixed_control_cases()]
    jobs += [(f"seed{seed}-{p.name}", None, None, seed, p)
             for seed in range(args.first_seed, args.first_seed + args.seeds) for p in PARAM_SETS]
    streams = alerts = mismatches = 0
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, args.binary_copy, label, data, controls, seed, args.records,
                               args.invalid_rate, p)
                   for label, data, controls, seed, p in jobs]
        for fut in futures:  # in submission order, so the report is deterministic
            label, params, data, controls, mismatch, compared = fut.result()
            streams += 1
            alerts += compared
            if mismatch is None:
                continue
            mismatches += 1
            os.makedirs(args.keep_dir, exist_ok=True)  # only when there is something to keep
            kept = os.path.join(args.keep_dir, f"{label}.jsonl")
            with open(kept, "wb") as f:
                f.write(data)
            kept_controls = None
            if controls is not None:
                kept_controls = os.path.join(args.keep_dir, f"{label}.controls.jsonl")
                with open(kept_controls, "wb") as f:
                    f.write(controls)
            print(f"MISMATCH {label} params={params.name} ({' '.join(params.cli())})\n"
                  f"  {mismatch.message}\n"
                  f"  input kept at {kept}" + ("" if kept_controls is None else f", controls at {kept_controls}") +
                  f"\n  repro: {repro_command(args.binary, kept, params, kept_controls)}", flush=True)
    print(f"{streams} streams, {alerts} alerts compared, {mismatches} mismatches")
    return 1 if mismatches else 0


# --------------------------------------------------------------------------- single file


def minimize(binary: str, data: bytes, params: ParamSet, signature: tuple,
             controls: bytes | None = None) -> bytes:
    """Delta debugging over the input's lines (the controls file stays as it is): the smallest
    input found that still shows `signature`."""
    lines = data.split(b"\n")

    def still_fails(candidate: list[bytes]) -> bool:
        mismatch, _ = check_bytes(binary, b"\n".join(candidate), params, controls)
        return mismatch is not None and mismatch.signature == signature

    chunk = max(1, len(lines) // 2)
    while chunk >= 1:
        i, removed = 0, False
        while i < len(lines):
            candidate = lines[:i] + lines[i + chunk:]
            if candidate and still_fails(candidate):
                lines, removed = candidate, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return b"\n".join(lines) + b"\n"


def run_repro(args) -> int:
    params = ParamSet("repro", args.window_ms, args.grace_ms, args.threshold, args.max_events)
    with open(args.repro, "rb") as f:
        data = f.read()
    controls = None
    if args.controls is not None:
        with open(args.controls, "rb") as f:
            controls = f.read()
    mismatch, compared = check_bytes(args.binary_copy, data, params, controls)
    if mismatch is None:
        print(f"1 streams, {compared} alerts compared, 0 mismatches")
        return 0
    print(f"MISMATCH file={args.repro} params=({' '.join(params.cli())})\n  {mismatch.message}")
    if args.minimize:
        small = minimize(args.binary_copy, data, params, mismatch.signature, controls)
        out = args.repro + ".min.jsonl"
        with open(out, "wb") as f:
            f.write(small)
        again, _ = check_bytes(args.binary_copy, small, params, controls)
        line_count = small.count(b"\n")
        print(f"  minimized to {line_count} lines: {out}\n  {again.message if again else '(no mismatch?)'}")
    return 1


def snapshot_binary(binary: str, tmp_dir: str, attempts: int = 5) -> str | None:
    """A private copy of the binary that replays an empty file, or None.

    The build tree may be relinked while the test runs (or while we copy it), so the test
    runs a copy, and checks the copy before trusting any mismatch it reports.
    """
    empty = os.path.join(tmp_dir, "empty.jsonl")
    open(empty, "wb").close()
    for attempt in range(attempts):
        if attempt:
            time.sleep(3)
        copy = shutil.copy2(binary, os.path.join(tmp_dir, "fraud-detector"))
        try:
            run_binary(copy, empty, PARAM_SETS[0])
            return copy
        except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired):
            continue
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", required=True, help="path to fraud-detector")
    ap.add_argument("--seeds", type=int, default=20, help="seeds to run, each with every parameter set")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--records", type=int, default=3000, help="lines per generated stream")
    ap.add_argument("--invalid-rate", type=float, default=0.12, help="fraction of malformed/invalid lines")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep-dir", default=os.path.join(tempfile.gettempdir(), "fraud-diff-failures"),
                    help="where inputs of mismatching streams are kept")
    ap.add_argument("--repro", metavar="FILE", help="compare one given file instead of generated streams")
    ap.add_argument("--minimize", action="store_true", help="with --repro: shrink the file to a minimal repro")
    ap.add_argument("--controls", metavar="FILE", help="--repro only: a controls file for both sides")
    ap.add_argument("--window-ms", type=int, default=spec_reference.DEFAULT_WINDOW_MS, help="--repro only")
    ap.add_argument("--grace-ms", type=int, default=spec_reference.DEFAULT_GRACE_MS, help="--repro only")
    ap.add_argument("--threshold", type=int, default=spec_reference.DEFAULT_THRESHOLD, help="--repro only")
    ap.add_argument("--max-events", type=int, default=spec_reference.DEFAULT_MAX_EVENTS, help="--repro only")
    args = ap.parse_args(argv)
    if not os.access(args.binary, os.X_OK):
        print(f"not an executable: {args.binary}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="fraud-diff-") as tmp:
        args.binary_copy = snapshot_binary(args.binary, tmp)
        if args.binary_copy is None:
            print(f"{args.binary} does not replay an empty file (being relinked?)", file=sys.stderr)
            return 2
        return run_repro(args) if args.repro else run_seeds(args)


if __name__ == "__main__":
    sys.exit(main())
