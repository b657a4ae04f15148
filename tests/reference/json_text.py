"""Random but valid JSON text for gen_edge_cases.py: strings with escapes (surrogate pairs
included), whitespace, nested values, objects with escaped names, RFC 3339 times written every
way docs/rule.md §1 allows. The same random.Random state always gives the same text."""

from __future__ import annotations

import datetime
import random


def _hex4(rng: random.Random, code: int) -> str:
    h = f"{code:04x}"
    return "\\u" + (h.upper() if rng.random() < 0.5 else h)


def enc_string(rng: random.Random, s: str, escape_rate: float = 0.05) -> str:
    """A JSON string literal for s, with random (valid) escaping."""
    out = ['"']
    short = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"' if rng.random() < 0.8 else _hex4(rng, code))
        elif ch == "\\":
            out.append("\\\\" if rng.random() < 0.8 else _hex4(rng, code))
        elif code < 0x20:
            out.append(short[ch] if ch in short and rng.random() < 0.5 else _hex4(rng, code))
        elif ch == "/" and rng.random() < 0.5:
            out.append("\\/")
        elif rng.random() < escape_rate:
            if code > 0xFFFF:
                v = code - 0x10000
                out.append(_hex4(rng, 0xD800 + (v >> 10)) + _hex4(rng, 0xDC00 + (v & 0x3FF)))
            else:
                out.append(_hex4(rng, code))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def ws(rng: random.Random) -> str:
    """RFC 8259 whitespace, usually none (never LF: a record is one line)."""
    r = rng.random()
    if r < 0.85:
        return ""
    return rng.choice([" ", "  ", "\t", " \t ", "\r", " \r\t"])


def random_json_value(rng: random.Random, depth: int = 0) -> str:
    """Any valid JSON value text (for fields the detector must ignore)."""
    kinds = ["num", "str", "lit"] + (["arr", "obj"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "num":
        return rng.choice(["0", "-0", "12", "-7", "12.50", "0.0", "-0.0", "1e3", "1E+2", "2.5e-3",
                           "123456789012", "9007199254740993", "-1.5E-7", "1.7976931348623157e308"])
    if kind == "str":
        return enc_string(rng, rng.choice(["", "EUR", "caf\u00e9", "\U0001F600", "a\"b\\c", "\u007f",
                                           "\u2028\u2029", "\ufeff", "tab\there", "/slash/", "\u0000"]), 0.3)
    if kind == "lit":
        return rng.choice(["true", "false", "null"])
    if kind == "arr":
        items = [random_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        return "[" + ws(rng) + ("," + ws(rng)).join(items) + ws(rng) + "]"
    names = rng.sample(["a", "b", "tx_id", "card", "nested", "\u00e9", ""], rng.randint(0, 3))
    members = [enc_string(rng, n) + ws(rng) + ":" + ws(rng) + random_json_value(rng, depth + 1) for n in names]
    return "{" + ws(rng) + ("," + ws(rng)).join(members) + ws(rng) + "}"


def encode_object(rng: random.Random, members: list[tuple[str, str]], name_escape_rate: float = 0.0) -> str:
    """members: (decoded name, value text). Names are JSON-encoded here."""
    parts = [ws(rng) + enc_string(rng, name, name_escape_rate) + ws(rng) + ":" + ws(rng) + value + ws(rng)
             for name, value in members]
    return ws(rng) + "{" + ",".join(parts) + "}" + ws(rng)


def rfc3339(rng: random.Random, t_ms: int) -> str | None:
    """A valid RFC 3339 string naming t_ms, with a random offset and fraction style."""
    offset_min = 0 if rng.random() < 0.4 else rng.randint(-(23 * 60 + 59), 23 * 60 + 59)
    local_ms = t_ms + offset_min * 60_000
    try:
        local = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=local_ms)
    except OverflowError:
        return None
    if local_ms < -62135596800000:  # before year 1: datetime cannot name it
        return None
    ms = local_ms % 1000
    if ms == 0:
        frac = rng.choice(["", "", ".0", ".000", ".000000"])
    elif rng.random() < 0.3 and f"{ms:03d}".rstrip("0") != f"{ms:03d}":
        frac = "." + f"{ms:03d}".rstrip("0")
    else:  # extra digits must be truncated, never rounded
        frac = f".{ms:03d}" + "".join(rng.choice("0123456789") for _ in range(rng.choice([0, 0, 1, 3, 6])))
    if offset_min == 0 and rng.random() < 0.7:
        zone = rng.choice(["Z", "z"])
    else:
        sign = "-" if offset_min < 0 or (offset_min == 0 and rng.random() < 0.5) else "+"
        zone = f"{sign}{abs(offset_min) // 60:02d}:{abs(offset_min) % 60:02d}"
    sep = "T" if rng.random() < 0.8 else "t"
    return (f"{local.year:04d}-{local.month:02d}-{local.day:02d}{sep}"
            f"{local.hour:02d}:{local.minute:02d}:{local.second:02d}{frac}{zone}")
