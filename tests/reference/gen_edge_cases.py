#!/usr/bin/env python3
"""Seeded generator of adversarial replay input (JSONL) for the detection contract
(docs/rule.md). The same seed and knobs always give the same bytes.

It stresses:
  * state: few cards and few countries (cards collide, incidents escalate to 4-6
    countries), event times placed on window edges (exactly W, W-1, W+1 apart), grace
    edges (exactly ST-G, ST-G-1), liveness edges for duplicates (ST-G-W), equal
    timestamps, out-of-order arrival, bursts on one card (overflow with a small M), gaps
    longer than W+G, tx_id re-use (same card while live, same card after it died, other
    cards);
  * §1 parsing: a fraction of lines malformed or invalid in every way we could think of,
    plus valid lines written oddly (RFC 3339 times with offsets/fractions/lowercase,
    escaped names and values, extra nested fields, CRLF, surrounding whitespace, unicode
    tx_ids at the 64-byte limit).

Usage: gen_edge_cases.py --seed N --records N --out FILE [--window-ms W --grace-ms G]
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass

from json_text import enc_string, encode_object, random_json_value, rfc3339

MAX_EVENT_TIME_MS = 253_402_300_799_999
CARD_POOL = ["4111111111111111", "tok_A~b!c", "5500-0000-0000-0004", "CARD", "card",
             "x" * 64, "!#$%&'()*+,-./:;<=>?@[]^_`{|}~"]
COUNTRY_POOL = ["US", "FR", "DE", "GB", "JP", "BR", "NZ", "ZA"]


# --------------------------------------------------------------------------- catalogue of bad input

BAD_RFC3339 = [
    "2024-01-15T10:00:00", "2024-01-15T10:00:00+0100", "2024-01-15T10:00Z", "2024-01-15 10:00:00Z",
    "2024-13-01T00:00:00Z", "2024-00-10T00:00:00Z", "2024-01-32T00:00:00Z", "2024-01-00T00:00:00Z",
    "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-04-31T00:00:00Z", "2024-01-15T24:00:00Z",
    "2024-01-15T23:60:00Z", "2024-01-15T23:59:60Z", "2016-12-31T23:59:60Z", "2024-01-15T10:00:00+24:00",
    "2024-01-15T10:00:00+00:60", "2024-01-15T10:00:00.Z", "2024-01-15T10:00:00,5Z", "24-01-15T10:00:00Z",
    "2024-1-15T10:00:00Z", "2024-01-15T1:00:00Z", " 2024-01-15T10:00:00Z", "2024-01-15T10:00:00Z ",
    "2024-01-15T10:00:00ZZ", "2024-01-15X10:00:00Z", "2024-01-15T10:00:00UTC", "+2024-01-15T10:00:00Z",
    "12024-01-15T10:00:00Z", "2024-01-15T10:00:00.123+01", "2024-01-15T10:00:00\u2212" + "01:00",
    "\uff12024-01-15T10:00:00Z", "2024-01-15T10:00:00.\u0661Z", "1969-12-31T23:59:59.999Z",
    "1969-12-31T23:59:59.9999999Z", "1970-01-01T00:00:00+00:01", "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59-00:01", "10000-01-01T00:00:00Z", "", "1700000000000", "2024-01-15",
    "2024-01-15T10:00:00+01:00:00", "2024-01-15T10:00:00.5-1:00", "2100-02-29T00:00:00Z",
    "2024-06-31T00:00:00Z", "2024-01-15T10:00:00.123456789012345678901234567890+24:00",
]
VALID_EXTREME_TIMES = [  # valid, but far in the past: late once stream time is set
    "0", "-0", "1", "1969-12-31T23:00:00-01:00", "1970-01-01T00:00:00Z", "1970-01-01t00:00:00.000z",
    "1970-01-01T01:00:00.0009+01:00", "2000-02-29T12:34:56.789123456-23:59", "1972-06-30T23:59:59.999Z",
]
VALID_FUTURE_TIMES = ["253402300799999", "9999-12-31T23:59:59.999Z", "9999-12-31t23:59:59.999999999z",
                      "9999-12-31T23:59:59.999+00:00", "9999-12-31T00:00:00-23:59", "2400-02-29T00:00:00Z",
                      "9999-12-31T23:59:59." + "9" * 40 + "Z"]


@dataclass
class Tx:
    card: str
    tx_id: str
    t: int
    country: str


class StreamGenerator:
    def __init__(self, seed: int, window_ms: int, grace_ms: int, invalid_rate: float = 0.12):
        self.rng = random.Random(seed)
        rng = self.rng
        self.W = window_ms
        self.G = grace_ms
        self.invalid_rate = invalid_rate
        self.cards = rng.sample(CARD_POOL, rng.randint(2, 4))
        if rng.random() < 0.1:  # now and then many cards, so per-card state comes and goes
            self.cards += [f"tok-{rng.randrange(16 ** 6):06x}" for _ in range(40)]
        self.countries = rng.sample(COUNTRY_POOL, rng.randint(4, 7))
        # Mostly realistic epochs; sometimes just above 0 or just below the largest valid
        # time, so edges fall out of range (invalid_field); sometimes any valid date.
        span = 3 * (window_ms + grace_ms)
        self.anchor = rng.choice([1_700_000_000_000 + rng.randint(0, 10 ** 9)] * 5 + [
            rng.randint(0, span), max(0, MAX_EVENT_TIME_MS - rng.randint(0, span)), rng.randint(0, MAX_EVENT_TIME_MS)])
        self.history: list[Tx] = []
        self.history_by_card: dict[str, list[Tx]] = {}
        self.next_tx = 0
        self.lines: list[bytes] = []
        self.crlf_file = rng.random() < 0.2

    # -- valid records ----------------------------------------------------------------

    def fresh_tx_id(self) -> str:
        rng = self.rng
        self.next_tx += 1
        base = f"t{self.next_tx}"
        r = rng.random()
        if r < 0.8:
            return base
        if r < 0.9:  # exactly 64 UTF-8 bytes, multi-byte characters at the end
            filler = rng.choice(["\u00e9", "\u20ac", "\U0001F600", "\u0080", "\u007e"])
            s = base + "-"
            while len((s + filler).encode()) <= 64:
                s += filler
            return s + "a" * (64 - len(s.encode()))
        return base + rng.choice(["\u00e9t\u00e9", " space", "\"q\\", "\U0001F600", "\u2028", "/s", "\ufeff"])

    def pick_time(self, card: str) -> int:
        rng, W, G, A = self.rng, self.W, self.G, self.anchor
        same_card = [h for h in self.history[-40:] if h.card == card and h.t >= A - G - W]
        ref = rng.choice(same_card).t if same_card and rng.random() < 0.7 else A
        move = rng.choices(
            ["forward", "equal", "win_edge", "grace_edge", "in_grace", "gap", "late", "live_edge"],
            weights=[30, 8, 20, 8, 14, 2, 5, 4])[0]
        if move == "forward":
            return A + rng.randint(0, max(1, W // 6))
        if move == "equal":
            return ref
        if move == "win_edge":
            return ref + rng.choice([W, W + 1, W - 1, -W, -W - 1, -W + 1, W // 2])
        if move == "grace_edge":
            return A - G + rng.choice([0, -1, 1])
        if move == "in_grace":
            return A - rng.randint(0, G)
        if move == "gap":
            return A + W + G + rng.randint(1, W + 1)
        if move == "late":
            return A - G - rng.randint(1, 2 * W + 1)
        # live_edge: put stream time where an old event of this card is just live or dead
        return ref + G + W + rng.choice([0, 1, -1])

    def pick_tx_id(self, card: str, t: int) -> str:
        rng = self.rng
        r = rng.random()
        same_card = self.history_by_card.get(card, [])
        if r < 0.12 and same_card:  # recent: usually a duplicate
            return rng.choice(same_card[-6:]).tx_id
        if r < 0.17 and same_card:  # old: possibly dead, so accepted again
            return rng.choice(same_card).tx_id
        if r < 0.22 and self.history:  # another card's tx_id: not a duplicate
            return rng.choice(self.history[-20:]).tx_id
        return self.fresh_tx_id()

    def time_text(self, t: int) -> str:
        if self.rng.random() < 0.25:
            s = rfc3339(self.rng, t)
            if s is not None:
                return enc_string(self.rng, s, 0.02)
        if t == 0 and self.rng.random() < 0.5:
            return "-0"
        return str(t)

    def country_text(self, country: str) -> str:
        rng = self.rng
        c = country if rng.random() < 0.8 else rng.choice([country.lower(), country[0] + country[1].lower()])
        return enc_string(rng, c, 0.05)

    def record_members(self, tx: Tx, time_text: str | None = None) -> list[tuple[str, str]]:
        rng = self.rng
        members = [
            ("tx_id", enc_string(rng, tx.tx_id, 0.05)),
            ("card", enc_string(rng, tx.card, 0.05)),
            ("country", self.country_text(tx.country)),
            ("event_time", time_text if time_text is not None else self.time_text(tx.t)),
        ]
        for name in rng.sample(["amount", "currency", "merchant", "meta", "Tx_Id", "event_time "],
                               rng.choice([0, 0, 0, 1, 2])):
            members.append((name, random_json_value(rng)))
        rng.shuffle(members)
        return members

    def emit_text(self, text: str) -> None:
        if self.crlf_file or self.rng.random() < 0.03:
            text += "\r"
        self.lines.append(text.encode("utf-8"))

    def emit_valid(self, tx: Tx) -> None:
        name_escape = 0.3 if self.rng.random() < 0.1 else 0.0
        self.emit_text(encode_object(self.rng, self.record_members(tx), name_escape))
        self.history.append(tx)
        self.history_by_card.setdefault(tx.card, []).append(tx)
        if tx.t > self.anchor:
            self.anchor = tx.t

    def valid_tx(self, card: str | None = None, t: int | None = None) -> Tx:
        rng = self.rng
        card = card or rng.choice(self.cards)
        t = self.pick_time(card) if t is None else t
        return Tx(card=card, tx_id=self.pick_tx_id(card, t), t=t, country=rng.choice(self.countries))

    def emit_burst(self) -> None:
        """Many events of one card close together: overflow with small M, escalations."""
        rng = self.rng
        card = rng.choice(self.cards)
        t0 = self.anchor - rng.randint(0, self.G)
        for _ in range(rng.randint(2, 7)):
            t = t0 + rng.choice([0, 0, 1, -1, rng.randint(0, max(1, self.W // 3))])
            self.emit_valid(Tx(card=card, tx_id=self.fresh_tx_id(), t=t, country=rng.choice(self.countries)))

    def emit_live_edge_duplicate(self) -> None:
        """Move stream time so an old event is exactly (not) live, then repeat its tx_id."""
        rng = self.rng
        if not self.history:
            return
        old = rng.choice(self.history[-30:])
        edge = old.t + self.G + self.W + rng.choice([0, 1, -1])
        if edge > self.anchor:
            self.emit_valid(self.valid_tx(t=edge))
        t = self.anchor - rng.randint(0, self.G)
        self.emit_valid(Tx(card=old.card, tx_id=old.tx_id, t=t, country=rng.choice(self.countries)))

    # -- invalid and odd lines ---------------------------------------------------------

    def emit_invalid(self) -> None:
        rng = self.rng
        tx = self.valid_tx()
        kind = rng.choice(["bytes", "json", "json", "missing", "field", "field", "field", "blank", "extreme"])
        getattr(self, "bad_" + kind)(tx)

    def bad_bytes(self, tx: Tx) -> None:
        """Not valid UTF-8 somewhere in the record."""
        rng = self.rng
        bad = rng.choice([b"\xff", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf", b"\xed\xa0\x80",
                          b"\xed\xbf\xbf", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\x80", b"\xf8\x88\x80\x80\x80",
                          b"\xef\xbb", b"\xfe"])
        where = rng.choice(["tx", "extra", "after", "before"])
        members = self.record_members(tx)
        if where == "tx":
            members = [(n, '"@BAD@"' if n == "tx_id" else v) for n, v in members]
        text = encode_object(rng, members).encode()
        if where == "tx":
            text = text.replace(b"@BAD@", b"t" + bad, 1)
        elif where == "extra":
            text = text[:-1] + b',"note":"a' + bad + b'"}' if text.endswith(b"}") else text + bad
        elif where == "after":
            text += bad
        else:
            text = bad + text
        self.lines.append(text)

    def bad_json(self, tx: Tx) -> None:
        """Not one RFC 8259 value, a lone surrogate, or not an object."""
        rng = self.rng
        members = self.record_members(tx)
        good = encode_object(rng, members)
        body = good.strip(" \t\r")
        choice = rng.randrange(28)
        if choice == 0:
            text = body[:-1] + ',"x":"\\ud800"}'
        elif choice == 1:
            text = body[:-1] + ',"x":"a\\uDC00b"}'
        elif choice == 2:
            text = body[:-1] + ',"x":"\\udc00\\ud800"}'
        elif choice == 3:
            text = body[:-1] + ',"x":"\\ud83d\\u0041"}'
        elif choice == 4:
            text = body[:-1] + ',"\\ud800":1}'
        elif choice == 5:
            text = encode_object(rng, [(n, "NaN" if n == "event_time" else v) for n, v in members])
        elif choice == 6:
            text = body[:-1] + ',"x":' + rng.choice(["NaN", "Infinity", "-Infinity", "nan", "inf"]) + "}"
        elif choice == 7:
            text = body + rng.choice([" x", "}", ",", " {}", "\x00", " //c", "]", body, " 1", "\f", "\x0b"])
        elif choice == 8:
            text = rng.choice(["\ufeff", "\f", "\x0b", "\u00a0", "x", "\x00", "\u2028"]) + body
        elif choice == 9:
            text = rng.choice(["[]", "[" + body + "]", '"s"', "1", "null", "true", "false", "-0", '""', "{}x",
                               "[" + body + "," + body + "]"])
        elif choice == 10:
            text = body[:-1] + ',"x":"a' + rng.choice(["\x01", "\x1f", "\t", "\x00", "\r"]) + 'b"}'
        elif choice == 11:
            text = body[:-1] + ',"x":' + rng.choice(["01", "1.", ".5", "+1", "-", "1e", "1e+", "0x1F", "1.e3",
                                                      "-01", "00", "1_000", "--1", "0.", "1..2"]) + "}"
        elif choice == 12:
            text = body[:-1] + ',"x":"' + rng.choice(["\\x41", "\\'", "\\U0041", "\\u12", "\\u12G4", "\\a",
                                                        "\\", "\\u+123", "\\u 123", "\\0"]) + '"}'
        elif choice == 13:
            text = body[:-1] + ',"x":' + rng.choice(["True", "nul", "NULL", "undefined", "tru", "nulll"]) + "}"
        elif choice == 14:
            text = body[:-1] + rng.choice([",}", ",,", ',"x"}', ',"x":}', ",x:1}", ",'x':1}", ',"x" 1}'])
        elif choice == 15:
            text = body[:-1]  # unterminated object
        elif choice == 16:
            text = body.replace('":', '" :', 1).replace(",", ";", 1) if "," in body else body + ";"
        elif choice == 17:
            text = rng.choice([" \r ", "\r\r", "\r \r", "\f", "\x0b", "\u00a0", " \r\t", "\t\r\r"])
        elif choice == 18:
            text = body[:-1] + ",/*c*/}" if rng.random() < 0.5 else "/*c*/" + body
        elif choice == 19:
            text = body.replace("{", "{'a':1,", 1)
        elif choice == 20:
            text = body[:-1] + ',"x":[1,2,]}'
        elif choice == 21:
            text = body[:-1] + ',"x":{"a"}}'
        elif choice == 22:  # an unescaped quote inside a string
            text = body[:-1] + ',"x":"a"b"}'
        elif choice == 23:
            text = "{" + "[" * 3 + "}"
        elif choice == 24:  # lone surrogate as the tx_id itself
            text = encode_object(rng, [(n, '"t\\uDBFF"' if n == "tx_id" else v) for n, v in members])
        elif choice == 25:  # a string that runs to the end of the line
            text = body[:-1] + ',"x":"abc'
        elif choice == 26:
            text = body + "\r\r"
        else:  # valid pair in the tx_id but trailing garbage
            text = encode_object(rng, [(n, '"t\\ud83d\\ude00"' if n == "tx_id" else v) for n, v in members]) + "x"
        self.lines.append(text.encode("utf-8", "surrogatepass"))

    def bad_missing(self, tx: Tx) -> None:
        """missing_field, also when another field is broken too (missing wins)."""
        rng = self.rng
        members = self.record_members(tx)
        required = ["tx_id", "card", "country", "event_time"]
        drop = set(rng.sample(required, rng.choice([1, 1, 1, 2, 4])))
        kept = [(n, v) for n, v in members if n not in drop]
        if rng.random() < 0.3:  # also break a field that is present
            kept = [(n, "null" if n in required and rng.random() < 0.5 else v) for n, v in kept]
        if rng.random() < 0.3:  # names that are NOT the required ones
            kept.append((rng.choice(["TX_ID", "txid", "tx_id ", "Card", "event-time", "country\u0000", "tx_id\u0000",
                                     "card\u0000x", "\u0000event_time"]), '"x"'))
        self.emit_text(encode_object(rng, kept))

    def bad_field(self, tx: Tx) -> None:
        """invalid_field: null, wrong type or a broken rule in exactly one field."""
        rng = self.rng
        name = rng.choice(["tx_id", "card", "country", "event_time", "event_time"])
        bad_values = {
            "tx_id": ["null", "5", "1.5", "1e3", "true", "[]", "{}", '""', '"' + "a" * 65 + '"', '"' + "\u20ac" * 22 + '"',
                      '"' + "a" * 63 + "\u00e9" + '"', '"' + "\U0001F600" * 16 + "a" + '"', '"a\\u001fb"',
                      '"a\\u007fb"', '"a\x7fb"', '"\\u0000"', '"tab\\there"', '"line\\n"', '["t1"]'],
            "card": ["null", "4111111111111111", "41111.5", "4111e10", "[]", '"abc"', '"' + "x" * 65 + '"', '"4111 1111"',
                     '"caf\u00e9card"', '"abc\\u007f"', '"abc\x7f"', '"abc\\t"', '""', '"\\u00a0abcd"', "true"],
            "country": ["null", '"U"', '"USA"', '"U1"', '"\u00dcS"', '""', "12", '["US"]', '"U "', '"\\u0130S"',
                        '"\u212aS"', '"-S"', "{}", '"\u0131s"', '"\u017fe"', '"U\\u0000"', '"\uff35S"'],
            "event_time": ["null", "true", "false", "1.0", "1e3", "1E3", "1e12", "-1", "0.0", "-0.0",
                           "253402300800000", "1700000000000.5", "[1]", "{}", '"1700000000000"',
                           "-1700000000000", "170000000000000000", "9223372036854775807", "1.7e12"]
                          + [enc_string(rng, s, 0.0) for s in BAD_RFC3339],
        }
        value = rng.choice(bad_values[name])
        members = [(n, value if n == name else v) for n, v in self.record_members(tx)]
        self.emit_text(encode_object(rng, members))

    def bad_blank(self, tx: Tx) -> None:
        """Blank lines, which are skipped and not counted."""
        self.lines.append(self.rng.choice([b"", b" ", b"\t", b"\r", b" \t \r", b"\t\t", b"   \r"]))

    def bad_extreme(self, tx: Tx) -> None:
        """Valid records with extreme event times far in the past (late or accepted)."""
        rng = self.rng
        value = rng.choice(VALID_EXTREME_TIMES)
        text = value if value[0] in "-0123456789" else enc_string(rng, value, 0.0)
        self.emit_text(encode_object(rng, self.record_members(tx, time_text=text)))

    # -- driver -----------------------------------------------------------------------

    def generate(self, records: int) -> bytes:
        rng = self.rng
        while len(self.lines) < records:
            r = rng.random()
            if r < self.invalid_rate:
                self.emit_invalid()
            elif r < self.invalid_rate + 0.03:
                self.emit_burst()
            elif r < self.invalid_rate + 0.05:
                self.emit_live_edge_duplicate()
            else:
                self.emit_valid(self.valid_tx())
        lines = self.lines[:records]
        if rng.random() < 0.3:  # far-future valid times poison stream time: only at the end
            tx = self.valid_tx()
            lines[-1] = encode_object(rng, self.record_members(tx, time_text=enc_string(
                rng, rng.choice(VALID_FUTURE_TIMES), 0.0) if rng.random() < 0.5 else "253402300799999")).encode()
        data = b"\n".join(lines)
        return data if rng.random() < 0.2 else data + b"\n"


def generate(seed: int, records: int, window_ms: int = 600_000, grace_ms: int = 120_000,
             invalid_rate: float = 0.12) -> bytes:
    return StreamGenerator(seed, window_ms, grace_ms, invalid_rate).generate(records)


# --------------------------------------------------------------------------- controls files


def _stream_cards_and_times(data: bytes) -> dict[str, list[int]]:
    """The valid records' event times by card, read back with the reference's §1 reading (only
    to aim controls at cards and edges the stream has; detection is not involved)."""
    from spec_record import Rejected, is_blank, parse_record
    times: dict[str, list[int]] = {}
    for line in data.split(b"\n"):
        if is_blank(line):
            continue
        try:
            record = parse_record(line)
        except Rejected:
            continue
        times.setdefault(record.card, []).append(record.event_time)
    return times


def generate_controls(seed: int, data: bytes, lines: int = 40) -> bytes:
    """A seeded controls file (docs/rule.md "Card controls") for the stream `data`: suppresses
    of its cards whose bounds sit on, just before and just after its event times (in both
    event_time forms), replacements and removes of the same card (the last one counts), and
    refused lines of every reason a controls file can give."""
    rng = random.Random(seed * 7919 + 17)
    times = _stream_cards_and_times(data)
    cards = sorted(times) or ["CARD"]
    out: list[str] = []

    def time_text(t: int) -> str:
        if rng.random() < 0.3:
            text = rfc3339(rng, t)
            if text is not None:
                return enc_string(rng, text, 0.0)
        return str(t)

    def text(max_bytes: int) -> str:
        base = rng.choice(["travel notice", "cleared by analyst", "r", "\u00e9t\u00e9 \u0085", "x" * max_bytes,
                           "\u00e9" * (max_bytes // 2), "\\ud83d\\ude00 emoji", "\U0001F600" * 16])
        return base

    def members(card: str, action: str) -> list[tuple[str, str]]:
        ts = times.get(card) or [1000]
        t = rng.choice(ts)
        # Bounds on an event time (an alert's trigger time, often), one off either way, or wide.
        start = max(0, t + rng.choice([-1, 0, 0, 1, -rng.randint(0, 5000)]))
        until = rng.choice([t, t, t + 1, start + 1, start + rng.randint(1, 20_000), start + 10 ** 9])
        until = min(max(until, start + 1), MAX_EVENT_TIME_MS)
        m = [("card", enc_string(rng, card, 0.05)), ("action", f'"{action}"'),
             ("reason", f'"{text(200)}"'), ("author", f'"{text(64)}"')]
        if action == "suppress" or rng.random() < 0.2:
            m.append(("until", time_text(until)))
            if rng.random() < 0.7:
                m.append(("from", time_text(start)))
        if rng.random() < 0.2:
            m.append(("ticket", random_json_value(rng)))
        rng.shuffle(m)
        return m

    bad_values = {
        "card": ["null", "1234", '"abc"', '"has space"', '"' + "x" * 65 + '"'],
        "action": ['"Suppress"', '"pause"', "null", '""', "1"],
        "reason": ['""', "null", '"' + "r" * 201 + '"', '"a\\tb"', '"a\\u007fb"', '"' + "\u00e9" * 101 + '"'],
        "author": ['""', '"' + "a" * 65 + '"', '"\\u0000"', "7"],
        "until": ["null", "1.0", "-1", '"2024-02-30T00:00:00Z"', "253402300800000", '"soon"'],
        "from": ["null", "1e3", '"x"', "-5"],
    }
    while len(out) < lines:
        r = rng.random()
        card = rng.choice(cards)
        if r < 0.55:
            out.append(encode_object(rng, members(card, "suppress"), 0.05))
        elif r < 0.7:
            out.append(encode_object(rng, members(card, "remove"), 0.05))
        elif r < 0.75:
            out.append(rng.choice(["", " \t", "\r"]))
        elif r < 0.8:
            out.append(rng.choice(["not json", "null", "[]", '{"card":', '"suppress"', "\ufeff{}"]))
        elif r < 0.85:
            m = members(card, rng.choice(["suppress", "remove"]))
            names = [n for n, _ in m if n in ("card", "action", "reason", "author", "until")]
            drop = rng.choice(names)
            out.append(encode_object(rng, [x for x in m if x[0] != drop]))
        elif r < 0.9:  # from >= until
            t = rng.choice(times.get(card) or [1000])
            m = [("card", enc_string(rng, card)), ("action", '"suppress"'), ("reason", '"r"'), ("author", '"a"'),
                 ("from", time_text(t)), ("until", time_text(t - rng.choice([0, 0, 1])))]
            out.append(encode_object(rng, m))
        else:
            action = rng.choice(["suppress", "remove"])
            m = dict(members(card, action))
            m.setdefault("until", "5")
            name = rng.choice(list(bad_values))
            m[name] = rng.choice(bad_values[name])
            out.append(encode_object(rng, list(m.items())))
    return "\n".join(out).encode("utf-8") + (b"\n" if rng.random() < 0.8 else b"")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Seeded adversarial JSONL for the detection contract")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--records", type=int, required=True, help="lines to write (blank ones included)")
    ap.add_argument("--out", required=True, help="output file, '-' for stdout")
    ap.add_argument("--window-ms", type=int, default=600_000, help="W used to place window edges")
    ap.add_argument("--grace-ms", type=int, default=120_000, help="G used to place grace edges")
    ap.add_argument("--invalid-rate", type=float, default=0.12, help="fraction of malformed/invalid lines")
    args = ap.parse_args(argv)
    data = generate(args.seed, args.records, args.window_ms, args.grace_ms, args.invalid_rate)
    if args.out == "-":
        sys.stdout.buffer.write(data)
    else:
        with open(args.out, "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
