"""Readers of the load-test report for report_browser_test.py: the charts of the DOM chromium
dumps, the pixels of its screenshot, the data fraud-loadgen embeds in the page. Each fails the
test (fail(): a message, exit 1) on what it cannot read."""
import html.parser
import json
import re
import struct
import zlib

from script_steps import fail  # the importer puts tests/integration on sys.path

# chromium's window, and so the screenshot's size.
WINDOW = (1200, 3400)


class DomCharts(html.parser.HTMLParser):
    """Each chart svg: its data-points, polyline coordinate pairs and bars (their counts, and
    theirs beyond the limit); the verdict text; the dropped-share cells (data-share, text)."""

    def __init__(self):
        super().__init__()
        self.charts = {}
        self.current = None
        self.depth = 0
        self.verdict = None
        self.in_verdict = False
        self.title = ""
        self.in_title = False
        self.shares = {}
        self.in_share = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("class") == "chart":
            self.current = a.get("id")
            self.charts[self.current] = {"data_points": int(a.get("data-points", "0")),
                                         "line_pairs": 0, "bars": 0, "count": 0,
                                         "count_beyond": 0, "beyond_low": None}
            self.depth = 0
        elif self.current is not None:
            chart = self.charts[self.current]
            if tag == "polyline":
                chart["line_pairs"] += len(a.get("points", "").split())
            elif tag == "rect" and a.get("class") in ("bar", "bar beyond"):
                chart["bars"] += 1
                chart["count"] += int(a.get("data-count", "0"))
                if a.get("class") == "bar beyond":
                    chart["count_beyond"] += int(a.get("data-count", "0"))
                    low = float(a.get("data-low", "nan"))
                    if chart["beyond_low"] is None or low < chart["beyond_low"]:
                        chart["beyond_low"] = low
        if tag == "td" and a.get("id", "").startswith("dropped-share-"):
            self.in_share = a["id"]
            self.shares[self.in_share] = {"data_share": a.get("data-share"), "text": ""}
        if self.current is not None and tag not in ("line", "polyline", "polygon", "circle"):
            self.depth += 1
        if a.get("id") == "verdict":
            self.in_verdict = True
            self.verdict = ""
        if tag == "title" and self.current is None:
            self.in_title = True

    def handle_endtag(self, tag):
        if self.current is not None and tag not in ("line", "polyline", "polygon", "circle"):
            self.depth -= 1
            if self.depth == 0:
                self.current = None
        if tag == "div":
            self.in_verdict = False
        if tag == "td":
            self.in_share = None
        if tag == "title":
            self.in_title = False

    def handle_data(self, data):
        if self.in_verdict:
            self.verdict += data
        if self.in_share:
            self.shares[self.in_share]["text"] += data
        if self.in_title:
            self.title += data


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        fail(f"unexpected PNG format (depth {depth}, colour type {colour}, interlace {interlace})")
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


def embedded_data(text):
    """The report's data, as fraud-loadgen embedded it in the page."""
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text,
                      re.S)
    if not found:
        fail("the page holds no report data")
    return json.loads(found.group(1))


def colour_counts(png):
    """Pixels of each colour in a screenshot, and its size; fails unless it is WINDOW."""
    width, height, rows = png_pixels(png)
    if (width, height) != WINDOW:
        fail(f"screenshot is {width}x{height}, not {WINDOW}")
    colours = {}
    for row in rows:
        for pixel in row:
            colours[pixel] = colours.get(pixel, 0) + 1
    return colours, width, height


def near(colours, rgb):
    """Pixels within a small distance of `rgb` (anti-aliased edges aside)."""
    return sum(n for c, n in colours.items() if sum(abs(a - b) for a, b in zip(c, rgb)) <= 24)
