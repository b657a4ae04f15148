"""docs/rule.md §1 for spec_reference.py: one line of replay input read into a Record, or
refused with its reason (invalid_json, missing_field, invalid_field). It follows the numbered
readings listed in spec_reference.py's docstring; standard library only."""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass

MAX_EVENT_TIME_MS = 253_402_300_799_999
REQUIRED_FIELDS = ("tx_id", "card", "country", "event_time")

INVALID_JSON = "invalid_json"
MISSING_FIELD = "missing_field"
INVALID_FIELD = "invalid_field"


# --------------------------------------------------------------------------- §1 parsing


class Rejected(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class FloatLiteral:
    """A JSON number written with a fraction or an exponent, kept as its source text.

    Deliberately not a str or float: it must match no field rule (tx_id 1.5 is not "1.5").
    """

    text: str


def _reject_constant(name: str):
    raise ValueError(f"non-RFC 8259 constant {name}")


def _contains_surrogate(value) -> bool:
    """True when a decoded string (value or name) anywhere in value holds a surrogate.

    The record text was decoded from strict UTF-8, so it holds no raw surrogates; Python's
    json joins a high+low escape pair into one character. Any surrogate left in the decoded
    value therefore came from a lone-surrogate escape. Iterative, so depth cannot matter.
    """
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in v):
                return True
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
    return False


def strict_json_loads(raw: bytes):
    """Any JSON value, parsed per RFC 8259 strictly; raises ValueError otherwise."""
    text = raw.decode("utf-8", errors="strict")  # UnicodeDecodeError is a ValueError
    if text.startswith("\ufeff"):
        raise ValueError("byte order mark")
    try:
        # json.loads only skips [ \t\n\r] around the value, rejects control characters in
        # strings (strict=True), leading zeros, "1.", "+1", ".5" and trailing data.
        # NaN/Infinity need parse_constant; lone surrogates need the check below.
        value = json.loads(text, parse_constant=_reject_constant, parse_float=FloatLiteral)
    except RecursionError:
        raise ValueError("nesting too deep for this reference")
    if _contains_surrogate(value):
        raise ValueError("lone surrogate escape")
    return value


def parse_json_object(line: bytes) -> dict:
    """§1 invalid_json: one strict RFC 8259 value that is an object; raises Rejected."""
    try:
        value = strict_json_loads(line)
    except ValueError:
        raise Rejected(INVALID_JSON)
    if not isinstance(value, dict):
        raise Rejected(INVALID_JSON)
    return value


_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if _is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


def _days_since_epoch(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a valid proleptic Gregorian date of year 1..9999."""
    return datetime.date(year, month, day).toordinal() - _EPOCH_ORDINAL


def parse_rfc3339_ms(text: str) -> int | None:
    """Epoch ms of an RFC 3339 timestamp as §1 restricts it, or None when invalid."""
    m = _RFC3339.fullmatch(text)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    fraction, zulu, sign, off_h, off_m = m.group(7, 8, 9, 10, 11)
    if not 1 <= month <= 12 or not 1 <= day <= _days_in_month(year, month):
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    if year == 0:  # valid date, but even with offset -23:59 it is long before 1970
        return -1
    offset_minutes = 0
    if zulu is None:
        if int(off_h) > 23 or int(off_m) > 59:
            return None
        offset_minutes = int(off_h) * 60 + int(off_m)
        if sign == "-":
            offset_minutes = -offset_minutes
    millis = int((fraction or "").ljust(3, "0")[:3])
    local_seconds = _days_since_epoch(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return local_seconds * 1000 + millis - offset_minutes * 60_000


def _valid_tx_id(v) -> bool:
    return (
        isinstance(v, str)
        and 1 <= len(v.encode("utf-8")) <= 64
        and all(ord(c) >= 0x20 and ord(c) != 0x7F for c in v)
    )


def _valid_card(v) -> bool:
    return isinstance(v, str) and 4 <= len(v) <= 64 and all(0x21 <= ord(c) <= 0x7E for c in v)


def _valid_country(v) -> bool:
    return isinstance(v, str) and len(v) == 2 and all(c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" for c in v)


def _event_time_ms(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):  # an integer literal; "-0" arrives as 0
        ms = v
    elif isinstance(v, str):
        ms = parse_rfc3339_ms(v)
        if ms is None:
            return None
    else:  # null, fraction/exponent number, array, object
        return None
    return ms if 0 <= ms <= MAX_EVENT_TIME_MS else None


@dataclass(frozen=True)
class Record:
    tx_id: str
    card: str
    country: str
    event_time: int


def parse_record(line: bytes) -> Record:
    """§1: a valid Record, or raises Rejected with the first reason that applies."""
    obj = parse_json_object(line)
    if any(name not in obj for name in REQUIRED_FIELDS):
        raise Rejected(MISSING_FIELD)
    tx_id, card, country = obj["tx_id"], obj["card"], obj["country"]
    event_time = _event_time_ms(obj["event_time"])
    if not (_valid_tx_id(tx_id) and _valid_card(card) and _valid_country(country)) or event_time is None:
        raise Rejected(INVALID_FIELD)
    return Record(tx_id=tx_id, card=card, country=country.upper(), event_time=event_time)


def is_blank(line: bytes) -> bool:
    """§1: empty, or only spaces and tabs and a final CR."""
    if line.endswith(b"\r"):
        line = line[:-1]
    return all(b in b" \t" for b in line)
