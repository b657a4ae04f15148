#!/usr/bin/env python3
"""The card timeline of the console (/ui/) keeps every alert's idempotency key readable, however
close in time the alerts are.

Runs `fraud-detector run` as console_browser_test.py does (the test broker of
$FRAUD_TEST_BROKERS, else its embedded cluster), produces with kcat the records of one card that
goes through many countries within a few seconds (so the service raises an alert and then an
escalation for each new country, their triggers a fraction of a second to a few seconds apart),
opens that card in headless Chromium over the DevTools protocol (cdp.py) and checks, from the
layout Chromium computed (getBoundingClientRect of each label), that

- the timeline holds one idempotency-key label for each of the card's alerts, each with the full
  key the service gave (/v1/alerts/recent);
- no two of those labels intersect, and each lies inside the drawing (nothing clipped);
- the page logged no console error, exception or CSP violation.

  console_timeline_test.py --detector BIN --kafka-script scripts/kafka [--screenshots DIR]
"""
import argparse
import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cdp  # noqa: E402
from console_browser_test import check_no_errors, http, start_service  # noqa: E402
from script_steps import fail, run, wait_for  # noqa: E402

# One card, one country per record: the third record opens the incident (revision 1), each
# later one escalates it (a new revision). Offsets (ms) from the first record: triggers 100 ms,
# 1.4 s, 5 s and 8 s apart, so some labels fall on the same spot and others only partly overlap.
COUNTRIES = ["US", "FR", "DE", "BR", "JP", "NG", "AU", "CA", "MX", "IN"]
OFFSETS_MS = [0, 100, 200, 300, 400, 1800, 1900, 6900, 7000, 15000]


def produce(kcat, brokers, topic, card, start_ms):
    """The card's records, keyed by the card (librdkafka's default partitioner, the crc32 the
    service expects), with event times the live service accepts (not in its future)."""
    lines = []
    for i, (country, offset) in enumerate(zip(COUNTRIES, OFFSETS_MS)):
        record = {"tx_id": f"timeline-{i}", "card": card, "country": country,
                  "event_time": start_ms + offset, "amount": 10 + i, "currency": "EUR"}
        lines.append(card + "\t" + json.dumps(record, separators=(",", ":")))
    run([kcat, "-P", "-b", brokers, "-t", topic, "-K", "\t", "-X", "acks=all"],
        input="\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--detector", required=True)
    parser.add_argument("--kafka-script", required=True)
    parser.add_argument("--screenshots", default=os.environ.get("FRAUD_CONSOLE_SCREENSHOTS"))
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        fail("chromium is not installed: run scripts/setup (it installs Debian's chromium)")
    kcat = shutil.which("kcat")
    if kcat is None:
        fail("kcat is not installed: run scripts/setup")

    work = tempfile.mkdtemp(prefix="console-timeline-")
    service = browser = None
    try:
        token = secrets.token_urlsafe(24)
        key_text = secrets.token_hex(32)
        key = os.path.join(work, "card-hash.key")
        with open(key, "w") as f:
            f.write(key_text)
        service, brokers, topics, port, _ = start_service(args, work, token, key)
        card = "4000" + "".join(secrets.choice("0123456789") for _ in range(12))
        ref = hmac.new(key_text.encode(), card.encode(), hashlib.sha256).hexdigest()
        produce(kcat, brokers, topics["input"], card, int(time.time() * 1000) - 30_000)
        expected = len(COUNTRIES) - 2  # revisions 1 .. len - 2

        def alerts():
            status, _, body = http(port, "/v1/alerts/recent", token)
            if status != 200:
                return None
            mine = [a for a in json.loads(body)["alerts"] if a["card_ref"] == ref]
            return mine if len(mine) >= expected else None
        mine = wait_for(f"{expected} alerts of the card", alerts, 90, service)
        keys = sorted(a["idempotency_key"] for a in mine)
        spread = max(a["trigger_event_time"] for a in mine) - min(
            a["trigger_event_time"] for a in mine)
        print(f"ok: {len(keys)} alerts of card {ref[:12]}… within {spread} ms of event time")

        browser = cdp.Browser(chromium, os.path.join(work, "profile"))
        check_labels(browser, port, token, ref, keys, args.screenshots)
        check_no_errors(browser)
        print("PASS")
    finally:
        if browser is not None:
            browser.close()
        if service is not None:
            service.send_signal(signal.SIGTERM)
            try:
                service.wait(timeout=60)
            except subprocess.TimeoutExpired:
                service.kill()
                service.wait()
        shutil.rmtree(work, ignore_errors=True)


# Each idempotency-key label of the timeline as laid out: its text, its box on the page, and the
# box of the drawing it is in.
LABELS = """(() => {
  const s = document.getElementById('timeline');
  const r = (b) => ({left: b.left, top: b.top, right: b.right, bottom: b.bottom});
  return {svg: r(s.getBoundingClientRect()),
          labels: Array.from(s.querySelectorAll('text.idempotency-key')).map(t =>
            Object.assign({text: t.textContent}, r(t.getBoundingClientRect())))};
})()"""


def check_labels(browser, port, token, ref, keys, screenshots):
    browser.call("Runtime.enable")
    browser.call("Log.enable")
    browser.call("Page.enable")
    browser.call("Page.navigate", url=f"http://127.0.0.1:{port}/ui/")
    browser.wait_for("the token form", "document.readyState === 'complete' && "
                     "!document.getElementById('login').hidden")
    browser.evaluate(f"document.getElementById('token').value = {json.dumps(token)}; "
                     "document.getElementById('login-form').requestSubmit(); true")
    browser.wait_for("the console after the token", "!document.getElementById('nav').hidden")
    browser.evaluate(f"location.hash = '#card/{ref}'; true")
    browser.wait_for(f"the {len(keys)} idempotency-key labels of the timeline",
                     "document.querySelectorAll('#timeline text.idempotency-key').length "
                     f">= {len(keys)}", 30)
    time.sleep(0.5)  # let the page settle (it redraws every 2 s)
    layout = browser.evaluate(LABELS)
    if screenshots:
        os.makedirs(screenshots, exist_ok=True)
        browser.screenshot(os.path.join(screenshots, "console-timeline.png"))
    labels, box = layout["labels"], layout["svg"]
    shown = sorted(label["text"] for label in labels)
    if shown != keys:
        fail(f"the timeline's labels {shown} are not the card's keys {keys}")
    print(f"ok: the timeline labels every key in full: {shown}")

    def overlap(a, b):
        # Boxes that only touch (or share less than half a pixel) are readable.
        return (min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5 and
                min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5)
    collisions = [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:]
                  if overlap(a, b)]
    clipped = [label["text"] for label in labels
               if label["left"] < box["left"] - 0.5 or label["right"] > box["right"] + 0.5 or
               label["top"] < box["top"] - 0.5 or label["bottom"] > box["bottom"] + 0.5 or
               label["right"] - label["left"] < 1]
    for label in labels:
        print(f"  {label['text']}: x {label['left']:.1f}..{label['right']:.1f}, "
              f"y {label['top']:.1f}..{label['bottom']:.1f}")
    if collisions:
        fail(f"{len(collisions)} pairs of idempotency-key labels intersect: {collisions}")
    if clipped:
        fail(f"labels outside the drawing {box}: {clipped}")
    print(f"ok: no two of the {len(labels)} labels intersect, each inside the drawing")


if __name__ == "__main__":
    main()
