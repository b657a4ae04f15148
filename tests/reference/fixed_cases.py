"""Hand-written replay inputs that the random streams of gen_edge_cases.py rarely or never
produce, each with the parameters (W, G, N, M) it runs under; differential_test.py runs them
on every test."""

from __future__ import annotations


def _rec(tx: str = "t1", card: str = "abcd", country: str = "US", et: str = "1000", extra: str = "") -> str:
    """A record line; arguments are raw JSON text inside the quotes (escapes allowed)."""
    return f'{{"tx_id":"{tx}","card":"{card}","country":"{country}","event_time":{et}{extra}}}'


def fixed_cases() -> list[tuple[str, bytes, tuple[int, int, int, int]]]:
    """Hand-written inputs the random streams rarely or never produce.

    Each is (name, file bytes, (W, G, N, M)). Run by differential_test.py on every run.
    """
    defaults = (600_000, 120_000, 3, 1000)
    cases: list[tuple[str, list[str | bytes], tuple[int, int, int, int]]] = [
        ("empty-file", [], defaults),
        ("only-blank-lines", [" ", "\t\r", "", "\r"], defaults),
        ("near-blank-lines", [" \r ", "\r\r", "\f", "\x0b", "\u00a0"], defaults),
        ("fraction-40-digits", [_rec(et='"2024-01-15T10:00:00.' + "9" * 40 + 'Z"')], defaults),
        ("fraction-400-digits", [_rec(et='"2024-01-15T10:00:00.' + "1" * 400 + 'Z"')], defaults),
        ("fraction-beyond-uint64", [_rec(et='"2024-01-15T10:00:00.18446744073709551617Z"')], defaults),
        ("country-unicode-case-folding", [_rec(tx=f"t{i}", country=c) for i, c in
                                          enumerate(["\\u0131s", "\\u017fe", "\u212aS", "\u0131s", "\uff35S"])],
         defaults),
        ("nul-in-names", ['{"tx_id\\u0000":"t","tx_id":"t1","card":"abcd","country":"US","event_time":5}',
                          '{"tx_id\\u0000x":"t","card":"abcd","country":"US","event_time":5}'], defaults),
        ("nul-in-values", [_rec(card="abc\\u0000d"), _rec(card="abcd\\u0000"), _rec(tx="t1\\u0000")], defaults),
        ("overlong-and-surrogate-utf8", [b'{"tx_id":"\xe0\x80\xaf","card":"abcd","country":"US","event_time":5}',
                                         b'{"tx_id":"\xf0\x80\x80\xaf","card":"abcd","country":"US","event_time":5}',
                                         b'{"tx_id":"\xc1\xbf","card":"abcd","country":"US","event_time":5}',
                                         b'{"tx_id":"\xed\xb0\x80","card":"abcd","country":"US","event_time":5}'],
         defaults),
        ("noncharacters-are-valid", [_rec(tx="\\uFFFF\\uFFFE"), _rec(tx="\U0010FFFF", country="FR"),
                                     _rec(tx="\\udbff\\udfff", country="DE")], defaults),
        ("int64-extremes", [_rec(et="-9223372036854775808"), _rec(et="9223372036854775807"),
                            _rec(et="253402300799999"), _rec(tx="t2", et="253402300800000")], defaults),
        ("exponent-zero", [_rec(et="0e0"), _rec(et="1000E0"), _rec(et="-0"), _rec(et="0")], defaults),
        ("big-extra-string", [_rec(extra=',"x":"' + "a" * 200_000 + '"')], defaults),
        ("bom-first-and-middle", ["\ufeff" + _rec(), _rec(tx="t2"), "\ufeff" + _rec(tx="t3")], defaults),
        ("rfc3339-calendar", [_rec(tx=f"t{i}", et=f'"{v}"') for i, v in enumerate([
            "0000-02-29T23:59:59+23:59", "0000-02-30T00:00:00Z", "0001-01-01T00:00:00Z", "2000-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z", "1969-12-31T23:00:00-01:00", "1970-01-01T00:00:00-00:00",
            "1969-12-31T23:59:59.9999-00:00", "1970-01-01T00:30:00+00:30", "2024\\u002d01-15T10:00:00Z",
            "\uff12024-01-15T10:00:00Z"])], defaults),
        ("rfc3339-upper-bound", [_rec(tx="t1", et='"9999-12-31T23:59:59.999-00:01"'),
                                 _rec(tx="t2", et='"9999-12-31T23:59:59.9999999+00:01"'),
                                 _rec(tx="t3", et='"9999-12-31T23:59:59.999Z"')], defaults),
        ("raw-controls-and-del", ['{"tx_id":"t\t1","card":"abcd","country":"US","event_time":5}',
                                  '{"tx_id":"t\x7f1","card":"abcd","country":"US","event_time":5}',
                                  '{"tx_id":"t1","card":"abcd","country":"US","event_time":5,"x":"\x7f"}',
                                  '{"tx_id":"t1",\r"card":"abcd","country":"US","event_time":5}\r',
                                  '{"tx_id":"t1",\x0b"card":"abcd","country":"US","event_time":5}'], defaults),
        ("numbers-are-not-strings", ['{"tx_id":1.5,"card":"abcd","country":"US","event_time":1}',
                                     '{"tx_id":"t","card":12345.5,"country":"US","event_time":1}',
                                     '{"tx_id":"t","card":"abcd","country":1e1,"event_time":1}'], defaults),
        ("reason-order", ['{"tx_id":5,"card":"abcd","country":"US"}', '{"tx_id":NaN}', "[]", '"x"',
                          '{"tx_id":null,"card":null,"country":null,"event_time":null}', "{}"], defaults),
        # Walk-through: escalation, silent end growth, duplicate, tx_id re-use after death.
        ("incident-walkthrough", [_rec("t1", "AAAA", "US", "100"), _rec("t2", "AAAA", "FR", "110"),
                                  _rec("t3", "AAAA", "DE", "111"), _rec("t4", "AAAA", "US", "121"),
                                  _rec("t5", "AAAA", "JP", "132"), _rec("t6", "AAAA", "gb", "132"),
                                  _rec("t6", "AAAA", "NZ", "132"), _rec("t1", "AAAA", "NZ", "132")], (10, 0, 2, 5)),
        # An out-of-order event within grace moves s* before the incident's start.
        ("s-star-before-start", [_rec("a", "BBBB", "US", "1000"), _rec("b", "BBBB", "FR", "1050"),
                                 _rec("c", "BBBB", "DE", "990"), _rec("d", "BBBB", "JP", "940")], (100, 200, 2, 10)),
        # Overflow evicts the earliest live event (ties by acceptance) and frees its tx_id.
        ("overflow-frees-tx-id", [_rec("a", "CCCC", "US", "100"), _rec("b", "CCCC", "FR", "100"),
                                  _rec("c", "CCCC", "DE", "100"), _rec("a", "CCCC", "JP", "100"),
                                  _rec("b", "CCCC", "GB", "99")], (50, 10, 2, 2)),
    ]
    return [(name, b"\n".join(x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass") for x in lines)
             + (b"\n" if lines else b""), params) for name, lines, params in cases]


def _ctl(card: str = "AAAA", action: str = "suppress", extra: str = "", reason: str = "r", author: str = "a") -> str:
    """A control line; arguments are raw JSON text inside the quotes, `extra` raw members."""
    return f'{{"card":"{card}","action":"{action}","reason":"{reason}","author":"{author}"{extra}}}'


def fixed_control_cases() -> list[tuple[str, bytes, bytes, tuple[int, int, int, int]]]:
    """Hand-written replay inputs with a controls file (docs/rule.md "Card controls").

    Each is (name, input bytes, controls bytes, (W, G, N, M)).
    """
    small = (10, 0, 2, 5)
    # AAAA: alerts at trigger times 110 (rev 1), 111 (rev 2), 121 (rev 3, US-FR-DE-JP);
    # BBBB: one alert at 205; CCCC: one alert at 305.
    stream = [_rec("t1", "AAAA", "US", "100"), _rec("t2", "AAAA", "FR", "110"), _rec("t3", "AAAA", "DE", "111"),
              _rec("t4", "AAAA", "JP", "121"), _rec("b1", "BBBB", "US", "200"), _rec("b2", "BBBB", "FR", "205"),
              _rec("c1", "CCCC", "US", "300"), _rec("c2", "CCCC", "FR", "305")]
    cases: list[tuple[str, list[str | bytes], list[str | bytes], tuple[int, int, int, int]]] = [
        ("controls-empty-file", stream, [], small),
        # from inclusive, until exclusive; from defaults to 0; the incident's revisions go on.
        ("controls-bounds", stream, [_ctl("AAAA", extra=',"from":110,"until":121'),
                                     _ctl("BBBB", extra=',"until":205'),
                                     _ctl("CCCC", extra=',"from":305,"until":306')], small),
        # until (and from) in RFC 3339, with offsets and truncated fractions: [205, 206) holds
        # BBBB's alert, until 305 (exclusive) misses CCCC's; from == until after truncation.
        ("controls-rfc3339", stream, [_ctl("BBBB", extra=',"from":"1970-01-01T01:00:00.205+01:00",'
                                                        '"until":"1970-01-01t00:00:00.2069z"'),
                                      _ctl("AAAA", extra=',"from":"1970-01-01T00:00:00.110Z",'
                                                        '"until":"1970-01-01T00:00:00.1109Z"'),
                                      _ctl("CCCC", extra=',"until":"1969-12-31T23:00:00.305-01:00"')], small),
        # One control per card, the last applied; a remove erases, also of nothing.
        ("controls-last-wins", stream, [_ctl("AAAA", extra=',"until":1000'), _ctl("AAAA", "remove"),
                                        _ctl("BBBB", "remove"), _ctl("BBBB", extra=',"until":1000'),
                                        _ctl("CCCC", extra=',"until":1000'),
                                        _ctl("CCCC", extra=',"from":0,"until":300'),
                                        _ctl("DDDD", "remove")], small),
        # Every reason a controls file can give, and what is accepted next to it.
        ("controls-rejects", stream, [
            "not json", "null", "[]", '"x"', "\ufeff" + _ctl("AAAA", extra=',"until":1000'),
            _ctl("AAAA", extra=',"until":1000') + " x", '{"card":"AAAA","action":"suppress","until":5,"x":NaN}',
            '{"action":"suppress","until":1000,"reason":"r","author":"a"}',
            _ctl("AAAA"),  # a suppress without until
            '{"card":"AAAA","action":"remove","reason":"r"}',
            '{"card":"AAAA","action":"suppress","until":1000,"author":"a"}',
            '{"card":1,"action":"suppress","reason":"","author":null}',  # missing until first
            _ctl("AAAA", "Suppress", ',"until":1000'), _ctl("AAAA", "pause"), _ctl("AAAA", "", ',"until":1000'),
            _ctl("AAA", extra=',"until":1000'), _ctl("AA AA", extra=',"until":1000'),
            _ctl("AAAA", extra=',"from":1000,"until":1000'), _ctl("AAAA", extra=',"from":1001,"until":1000'),
            _ctl("AAAA", extra=',"until":0'), _ctl("AAAA", extra=',"from":null,"until":1000'),
            _ctl("AAAA", extra=',"until":1.0'), _ctl("AAAA", extra=',"until":-1'),
            _ctl("AAAA", extra=',"until":"2024-02-30T00:00:00Z"'), _ctl("AAAA", extra=',"until":253402300800000'),
            _ctl("AAAA", extra=',"until":1000', reason=""), _ctl("AAAA", extra=',"until":1000', reason="r" * 201),
            _ctl("AAAA", extra=',"until":1000', reason="\\u00e9" * 101), _ctl("AAAA", extra=',"until":1000', author=""),
            _ctl("AAAA", extra=',"until":1000', author="a" * 65), _ctl("AAAA", extra=',"until":1000', reason="a\\tb"),
            _ctl("AAAA", extra=',"until":1000', author="\\u007f"), _ctl("AAAA", extra=',"until":1000', reason="a\x7fb"),
            '{"card":"AAAA","action":"remove","reason":"r","author":"a","until":"garbage","from":null}',
            '{"card":"AAAA","action":null,"reason":"r","author":"a"}',
        ], small),
        # Accepted at the edges: 200-byte reason, 64-byte author (in bytes of UTF-8), C1
        # characters, extra fields, escaped names; the last line suppresses BBBB.
        ("controls-accepted-edges", stream, [
            _ctl("AAAA", extra=',"until":1000', reason="r" * 200, author="\\u00e9" * 32),
            _ctl("AAAA", "remove", reason="\\u0080\\u009f", author="\U0001F600" * 16),
            _ctl("CCCC", extra=',"until":1000,"ticket":{"id":[1,2.5,null]},"Until":"x"'),
            '{"c\\u0061rd":"BBBB","\\u0061ction":"suppress","unt\\u0069l":206,"reason":"r","author":"a"}',
            " \t\r", "",
        ], small),
        # Controls with no alert to suppress; a controls file without a final newline.
        ("controls-nothing-to-suppress", [_rec("t1", "AAAA", "US", "100")],
         [_ctl("AAAA", extra=',"until":1000')], small),
    ]

    def joined(lines: list[str | bytes], final_newline: bool = True) -> bytes:
        data = b"\n".join(x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass") for x in lines)
        return data + (b"\n" if lines and final_newline else b"")

    return [(name, joined(lines), joined(controls, name != "controls-nothing-to-suppress"), params)
            for name, lines, controls, params in cases]
