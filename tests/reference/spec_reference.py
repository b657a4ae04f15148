#!/usr/bin/env python3
"""Independent reference implementation of the detection contract (docs/rule.md §1-§6, and §9's
card controls as replay applies them), `replay` semantics only. Written from the rule alone, for differential testing against the
C++ detector. Naive on purpose: every window is recomputed from scratch.

Usage:
    FRAUD_CARD_HASH_KEY=... spec_reference.py --input FILE \
        [--window-ms W --grace-ms G --threshold N --max-events M]
        [--controls FILE --suppressed-output FILE]

Alerts go to stdout as JSONL in emission order; the summary JSON is the last stderr line.
`detected_at` is always 0 here (the rule lets it be any wall-clock value).

Readings of points where the rule could be read more than one way
(numbered so they can be compared with the main implementation's readings):

 1. Blank line (§1): after removing at most one trailing CR, the line holds only spaces and
    tabs (possibly none). So "", "\\r", " \\t\\r" are skipped; "\\r\\r", " \\r ", "\\f",
    "\\v" are records (and invalid_json). Lines are split on "\\n" only; the last piece
    after a final "\\n" is empty and skipped; a last line without "\\n" is a record.
 2. A CR before the LF stays in the record; CR is RFC 8259 whitespace, so CRLF files parse.
 3. A UTF-8 BOM (U+FEFF) at the start of a record is not RFC 8259 whitespace: invalid_json.
    (RFC 8259 §8.1 lets a parser ignore it; the rule says "one JSON value per RFC 8259",
    and the JSON-text grammar has no BOM.) Inside a string U+FEFF is an ordinary character.
 4. invalid_json covers the whole record: a lone-surrogate escape, NaN/Infinity or a bad
    number in an unknown (unread) field or in an object name is invalid_json too.
    A surrogate escape is lone unless a high one (D800-DBFF) is immediately followed by a
    low one (DC00-DFFF) escape; "\\udc00\\ud800" and "\\ud800\\u0041" are invalid_json.
 5. A top-level value that is valid JSON but not an object (array, string, number, true,
    false, null) is invalid_json ("or not an object").
 6. missing_field is decided over all four required fields before any rule is checked:
    a record that lacks one field and breaks another's rule is missing_field. A field whose
    value is null is present (so invalid_field, not missing_field). Field names are matched
    after JSON decoding ("tx\\u005fid" is tx_id).
 7. event_time as a number: any JSON integer literal (no fraction, no exponent); "-0" is an
    integer literal of value 0, so it is valid (0 ms). A negative integer is out of range:
    invalid_field. "1.0", "0.0", "-0.0", "1e3", "1E3" are invalid_field.
 8. event_time as a string: exactly YYYY-MM-DD(T|t)HH:MM:SS[.F+](Z|z|+HH:MM|-HH:MM) with
    ASCII digits only; 4-digit year 0000..9999 (proleptic Gregorian, so 0000 is a leap year,
    though every year-0000 value is out of range anyway); month 01..12; day valid for
    month/year; hour 00..23; minute 00..59; second 00..59 (no leap second 60); a fraction
    of one or more digits of any length, truncated (not rounded) to its first three digits
    BEFORE the offset is applied; offset hours 00..23, minutes 00..59, "-00:00" is UTC;
    no space separator, no "+HHMM", no missing seconds, no surrounding whitespace.
    UTC ms = local ms - offset; it must lie in 0..253402300799999. Example:
    "1969-12-31T23:59:59.9999Z" -> -1 ms -> invalid_field;
    "1969-12-31T23:00:00-01:00" -> 0 ms -> valid.
 9. tx_id: 1..64 bytes of the UTF-8 encoding of the decoded string. Only U+0000..U+001F
    and U+007F are forbidden; C1 controls (U+0080..U+009F) and every other scalar value are
    allowed. Compared for duplicates as exact decoded strings.
10. card: the decoded string, 4..64 characters each in 0x21..0x7E. Card identity is the
    exact (case-sensitive) string; card_ref = HMAC over its (ASCII) bytes.
11. country: exactly two characters in A-Z/a-z, upper-cased; "us" and "US" are the same
    country and alerts show "US".
12. Duplicate (§2.2): "holds" means currently held. An event evicted for overflow is no
    longer held, so a later record with its tx_id is NOT a duplicate (it is accepted).
    Liveness uses ST before r. Duplicates and late records change no state (ST included).
    Dead events are pruned lazily, as §2 allows ("may be evicted at any time").
13. Overflow (§2.3): "its earliest event" is read as the earliest LIVE event (by event
    time, then order of acceptance); dead events are not counted and are already
    evictable. Implemented as a loop, though one accepted record can exceed M by at most
    one. The evicted event may be r itself.
14. Detection (§3) runs after overflow eviction even when r itself was evicted: E then
    lacks r, `tx_ids` may not contain `trigger_tx_id`, and the trigger fields still
    describe r. The candidate range is still t - W <= s <= t with r's t. (Moot in
    practice: r is evicted only when every other live event is later than t, and dead
    events are older than t - W, so no s qualifies and nothing is raised.)
15. Incidents are never evicted here: §4's eviction (end < ST - G - W) cannot change
    output, because any later s* >= t - W >= ST - G - W > end opens a new incident anyway.
    A new incident replaces the card's previous one.
16. Same incident: `end` may grow silently (no alert) when C* adds no country. An
    escalation alert carries the updated end and the union of countries. s* may lie
    before I.start (an out-of-order event); start still never changes.
17. Summary: exactly the keys records, accepted, late_dropped, duplicate,
    overflow_evicted, alerts, incidents, rejected; `rejected` lists only reasons seen
    ({} when none). `records` counts every non-blank line, invalid UTF-8 ones included.
18. Out of contract, not generated by the tests: repeated names, numbers beyond int64 or
    double range, and nesting deeper than about 990 levels, where this reference hits
    Python's recursion limit and says invalid_json. RFC 8259 §9 lets a parser limit
    depth and the rule names no limit (the C++ parser accepts up to 1024 levels).
19. Parameters: only the rule's lower bounds are checked (W >= 1, G >= 0, N >= 1,
    M >= N). The key is FRAUD_CARD_HASH_KEY's bytes exactly as they are (only a key read
    from a file loses one trailing LF, which this reference does not support); an empty
    key is not refused here.
20. Types are JSON types: a number is never a string (tx_id 1.5 or card 12345.5 is
    invalid_field), and true/false are not numbers.
21-30. Card controls: see spec_controls.py's docstring.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import sys
from dataclasses import dataclass, field

from spec_controls import Controls
from spec_record import Record, Rejected, is_blank, parse_record

DEFAULT_WINDOW_MS = 600_000
DEFAULT_GRACE_MS = 120_000
DEFAULT_THRESHOLD = 3
DEFAULT_MAX_EVENTS = 1000


# --------------------------------------------------------------------------- §2-§6 state


@dataclass
class Event:
    seq: int  # order of acceptance within the partition
    t: int
    tx_id: str
    country: str


@dataclass
class Incident:
    start: int
    end: int
    revision: int
    countries: set[str]


@dataclass
class CardState:
    events: list[Event] = field(default_factory=list)  # held events (dead ones pruned lazily)
    incident: Incident | None = None


@dataclass
class Params:
    window_ms: int = DEFAULT_WINDOW_MS
    grace_ms: int = DEFAULT_GRACE_MS
    threshold: int = DEFAULT_THRESHOLD
    max_events: int = DEFAULT_MAX_EVENTS

    def check(self) -> None:
        if self.window_ms < 1 or self.grace_ms < 0 or self.threshold < 1 or self.max_events < self.threshold:
            raise ValueError("need W >= 1, G >= 0, N >= 1, M >= N")


class Replay:
    """One partition (one replay file)."""

    def __init__(self, params: Params, key: bytes):
        params.check()
        self.p = params
        self.key = key
        self.stream_time: int | None = None
        self.cards: dict[str, CardState] = {}
        self.next_seq = 0
        self.counts = dict(records=0, accepted=0, late_dropped=0, duplicate=0,
                           overflow_evicted=0, alerts=0, incidents=0)
        self.rejected: dict[str, int] = {}
        self.last_card: str | None = None

    # -- helpers

    def _live_threshold(self) -> int:
        return self.stream_time - self.p.grace_ms - self.p.window_ms

    def _live_events(self, state: CardState) -> list[Event]:
        if self.stream_time is None:
            return []
        return [e for e in state.events if e.t >= self._live_threshold()]

    def card_ref(self, card: str) -> str:
        return hmac.new(self.key, card.encode("utf-8"), hashlib.sha256).hexdigest()

    # -- §1 + §2

    def process_line(self, line: bytes) -> list[dict]:
        if is_blank(line):
            return []
        self.counts["records"] += 1
        try:
            record = parse_record(line)
        except Rejected as r:
            self.rejected[r.reason] = self.rejected.get(r.reason, 0) + 1
            return []
        return self.process_record(record)

    def process_record(self, r: Record) -> list[dict]:
        self.last_card = r.card  # the clear card of the alerts returned (controls need it)
        G = self.p.grace_ms
        t = r.event_time
        # 1. Late.
        if self.stream_time is not None and t < self.stream_time - G:
            self.counts["late_dropped"] += 1
            return []
        state = self.cards.setdefault(r.card, CardState())
        # Dead events "may be evicted at any time; eviction never changes any output" (§2).
        # Dropping them here only keeps long streams fast; every rule below still filters
        # on liveness itself.
        state.events = self._live_events(state)
        # 2. Duplicate: a live event (ST before r) with the same tx_id.
        if any(e.tx_id == r.tx_id for e in self._live_events(state)):
            self.counts["duplicate"] += 1
            return []
        # 3. Accepted.
        state.events.append(Event(seq=self.next_seq, t=t, tx_id=r.tx_id, country=r.country))
        self.next_seq += 1
        self.counts["accepted"] += 1
        self.stream_time = t if self.stream_time is None else max(self.stream_time, t)
        live = self._live_events(state)
        while len(live) > self.p.max_events:
            victim = min(live, key=lambda e: (e.t, e.seq))
            live.remove(victim)
            state.events.remove(victim)
            self.counts["overflow_evicted"] += 1
        return self._detect(r, state)

    # -- §3 + §4

    def _detect(self, r: Record, state: CardState) -> list[dict]:
        W, N = self.p.window_ms, self.p.threshold
        t = r.event_time
        E = state.events
        s_star = None
        S_star: list[Event] = []
        for s in sorted({e.t for e in E if t - W <= e.t <= t}):
            S = [e for e in E if s <= e.t <= s + W]
            if len({e.country for e in S}) >= N:
                s_star, S_star = s, S
                break
        if s_star is None:
            return []
        C_star = {e.country for e in S_star}

        inc = state.incident
        if inc is None or s_star > inc.end:
            inc = Incident(start=s_star, end=s_star + W, revision=1, countries=set(C_star))
            state.incident = inc
            self.counts["incidents"] += 1
        else:
            inc.end = max(inc.end, s_star + W)
            if C_star <= inc.countries:
                return []
            inc.countries |= C_star
            inc.revision += 1
        self.counts["alerts"] += 1
        return [self._alert(r, inc, S_star)]

    # -- §5 + §6

    def _alert(self, r: Record, inc: Incident, S_star: list[Event]) -> dict:
        card_ref = self.card_ref(r.card)
        alert_id = hashlib.sha256(f"{card_ref}:{inc.start}".encode("ascii")).hexdigest()[:32]
        return {
            "alert_id": alert_id,
            "idempotency_key": f"{alert_id}:{inc.revision}",
            "revision": inc.revision,
            "card_ref": card_ref,
            "rule": "distinct_countries",
            "threshold": self.p.threshold,
            "window_ms": self.p.window_ms,
            "grace_ms": self.p.grace_ms,
            "window_start": inc.start,
            "window_end": inc.end,
            "countries": sorted(inc.countries),
            "tx_ids": [e.tx_id for e in sorted(S_star, key=lambda e: (e.t, e.seq))],
            "trigger_tx_id": r.tx_id,
            "trigger_event_time": r.event_time,
            "detected_at": 0,
        }

    def summary(self) -> dict:
        return {**self.counts, "rejected": dict(sorted(self.rejected.items()))}


def replay_bytes(data: bytes, params: Params, key: bytes) -> tuple[list[dict], dict]:
    """Run a whole file's bytes; returns (alerts in emission order, summary)."""
    rp = Replay(params, key)
    alerts: list[dict] = []
    for line in data.split(b"\n"):
        alerts.extend(rp.process_line(line))
    return alerts, rp.summary()


def replay_with_controls(data: bytes, params: Params, key: bytes,
                         controls_data: bytes) -> tuple[list[dict], list[dict], dict]:
    """A whole file's bytes with a controls file applied before the first transaction.

    Returns (alerts not suppressed, suppressed alerts, summary), each list in emission order.
    Detection runs exactly as without controls; each alert is then diverted or not by its
    card's control at its trigger event time.
    """
    controls = Controls()
    controls.apply_file(controls_data)
    rp = Replay(params, key)
    kept: list[dict] = []
    suppressed: list[dict] = []
    for line in data.split(b"\n"):
        if is_blank(line):
            continue
        for alert in rp.process_line(line):
            card = rp.last_card
            (suppressed if controls.suppresses(card, alert["trigger_event_time"]) else kept).append(alert)
    summary = rp.summary()
    summary["suppressed"] = len(suppressed)
    summary["controls"] = controls.summary()
    return kept, suppressed, summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, help="JSONL file, '-' for stdin")
    ap.add_argument("--window-ms", type=int, default=DEFAULT_WINDOW_MS)
    ap.add_argument("--grace-ms", type=int, default=DEFAULT_GRACE_MS)
    ap.add_argument("--threshold", type=int, default=DEFAULT_THRESHOLD)
    ap.add_argument("--max-events", type=int, default=DEFAULT_MAX_EVENTS)
    ap.add_argument("--controls", help="controls file, one JSON object a line (with --suppressed-output)")
    ap.add_argument("--suppressed-output", help="where suppressed alerts go (with --controls)")
    args = ap.parse_args(argv)
    if (args.controls is None) != (args.suppressed_output is None):
        print("--controls and --suppressed-output go together", file=sys.stderr)
        return 2

    key = os.environb.get(b"FRAUD_CARD_HASH_KEY")
    if key is None:
        print("FRAUD_CARD_HASH_KEY is not set", file=sys.stderr)
        return 2
    params = Params(args.window_ms, args.grace_ms, args.threshold, args.max_events)
    try:
        params.check()
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 2

    if args.input == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(args.input, "rb") as f:
            data = f.read()
    suppressed = None
    if args.controls is None:
        alerts, summary = replay_bytes(data, params, key)
    else:
        with open(args.controls, "rb") as f:
            alerts, suppressed, summary = replay_with_controls(data, params, key, f.read())
    out = sys.stdout.buffer
    for a in alerts:
        out.write(json.dumps(a, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
    out.flush()
    if suppressed is not None:
        with open(args.suppressed_output, "wb") as f:
            for a in suppressed:
                f.write(json.dumps(a, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
    sys.stderr.write(json.dumps(summary, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
