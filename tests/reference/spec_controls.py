"""docs/rule.md "Card controls" for spec_reference.py: one line of replay's controls file read into
a Control, or refused with its reason, and the suppression decision. Standard library only;
it reuses spec_record's §1 readings (strict JSON, the card rule, both event_time forms) because
the rule says a control's card and times follow §1.

Readings (continuing the numbering of spec_reference.py's docstring):

21. Reasons in order: invalid_json (as §1: the line is not one strict JSON object), then
    missing_field over card, action, reason, author, plus until when action is exactly the
    string "suppress", then invalid_field, then card_mismatch. In a controls file the key is
    the line's own card, so card_mismatch (and misrouted, which needs a partition) never occur.
22. action is exactly "suppress" or "remove" (case-sensitive); anything else, null or a
    non-string included, is invalid_field, and then until is not required.
23. A remove requires card, reason and author, and ignores from and until entirely (present,
    absent, null or malformed alike).
24. A suppress: until in either event_time form; from absent means 0, from present (null
    included) must be a valid event_time; from < until, compared as milliseconds.
25. reason 1..200 and author 1..64 bytes of the UTF-8 encoding of the decoded string, with no
    character below U+0020 and no U+007F (C1 U+0080..U+009F allowed, as in a tx_id).
26. Unknown fields are ignored. Names are matched after JSON decoding.
27. A line is never a tombstone: "null" is a JSON value that is not an object, so invalid_json.
    Blank lines (as §1's blank-line reading 1) are skipped and counted nowhere.
28. The last applied control of a card is its only one: a suppress replaces, a remove erases
    (a remove of a card with no control is applied and does nothing). Cards are compared by
    card_ref, which is the same as comparing the card strings exactly.
29. An alert is suppressed when its card's control is a suppress with
    from <= trigger_event_time < until. Controls never touch detection: alerts and incidents
    count every alert raised; suppressed counts those diverted; the alerts output holds the
    rest, in order, and the suppressed output the diverted ones, in order, as the same JSON.
30. The summary gains "suppressed" and "controls": {"applied": N, "rejected": {reason: count}}
    only when a controls file is given; the reasons listed are those seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from spec_record import (INVALID_FIELD, INVALID_JSON, MISSING_FIELD, Rejected, _event_time_ms,
                         _valid_card, is_blank, parse_json_object)

CARD_MISMATCH = "card_mismatch"


@dataclass(frozen=True)
class Control:
    card: str
    action: str  # "suppress" or "remove"
    start: int  # `from`, inclusive (suppress only)
    until: int  # exclusive (suppress only)
    reason: str
    author: str

    def suppresses(self, t: int) -> bool:
        return self.action == "suppress" and self.start <= t < self.until


def _text_ok(v, max_bytes: int) -> bool:
    if not isinstance(v, str):
        return False
    if not 1 <= len(v.encode("utf-8")) <= max_bytes:
        return False
    return all(ord(c) >= 0x20 and ord(c) != 0x7F for c in v)


def parse_control(line: bytes, key: str | None = None) -> Control:
    """One control value; raises Rejected. key None: the key is the value's own card."""
    obj = parse_json_object(line)
    for name in ("card", "action", "reason", "author"):
        if name not in obj:
            raise Rejected(MISSING_FIELD)
    action = obj["action"]
    if action == "suppress" and "until" not in obj:
        raise Rejected(MISSING_FIELD)
    card = obj["card"]
    if not _valid_card(card):
        raise Rejected(INVALID_FIELD)
    if action not in ("suppress", "remove") or isinstance(action, bool):
        raise Rejected(INVALID_FIELD)
    if not _text_ok(obj["reason"], 200) or not _text_ok(obj["author"], 64):
        raise Rejected(INVALID_FIELD)
    start = until = 0
    if action == "suppress":
        until = _event_time_ms(obj["until"])
        start = _event_time_ms(obj["from"]) if "from" in obj else 0
        if until is None or start is None or not start < until:
            raise Rejected(INVALID_FIELD)
    if key is not None and key != card:
        raise Rejected(CARD_MISMATCH)
    return Control(card=card, action=action, start=start, until=until, reason=obj["reason"],
                   author=obj["author"])


class Controls:
    """The controls file applied: one control per card, counts of applied and rejected."""

    def __init__(self):
        self.by_card: dict[str, Control] = {}
        self.applied = 0
        self.rejected: dict[str, int] = {}

    def apply_file(self, data: bytes) -> None:
        for line in data.split(b"\n"):
            if is_blank(line):
                continue
            try:
                control = parse_control(line)
            except Rejected as r:
                self.rejected[r.reason] = self.rejected.get(r.reason, 0) + 1
                continue
            self.applied += 1
            if control.action == "remove":
                self.by_card.pop(control.card, None)
            else:
                self.by_card[control.card] = control

    def suppresses(self, card: str, trigger_event_time: int) -> bool:
        control = self.by_card.get(card)
        return control is not None and control.suppresses(trigger_event_time)

    def summary(self) -> dict:
        return {"applied": self.applied, "rejected": dict(sorted(self.rejected.items()))}
