#!/usr/bin/env python3
"""The console (/ui/) in a real browser, over a service fed by fraud-loadgen.

Runs `fraud-detector run` on the test broker ($FRAUD_TEST_BROKERS, topics made with
scripts/kafka in $FRAUD_TEST_KAFKA_DIR) or, when that is unset, on its embedded cluster; sends a
few seconds of loadgen traffic with injected fraud; then drives headless Chromium over the
DevTools protocol (tests/integration/console/cdp.py) and checks that

- /ui/ answers with a strict Content-Security-Policy, and the page shows nothing but the token
  form without a token (and asks nothing of /v1/*);
- with the token, a defrauded card of the loadgen's truth file, looked up by its number (found in
  a repeat of the same run written to a file), shows its card_ref (never the number) and a
  timeline with every country of its scenario;
- the partitions table lists every partition held, with lateness figures and no misrouted
  records; the recent alerts list links to cards;
- the page logged no console error, exception or CSP violation.

  console_browser_test.py --loadgen BIN --detector BIN --kafka-script scripts/kafka
                          [--screenshots DIR]

--screenshots DIR (or $FRAUD_CONSOLE_SCREENSHOTS) keeps a PNG of each view there (docs/ uses
them).
"""
import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cdp  # noqa: E402
from script_steps import fail, read, run, wait_for  # noqa: E402

PARTITIONS = 4





def http(port, path, token=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()
    except OSError:
        return 0, {}, b""



def start_service(args, work, token, key):
    brokers = os.environ.get("FRAUD_TEST_BROKERS")
    prefix = f"console-{secrets.token_hex(4)}"
    topics = {"input": f"{prefix}-tx", "alerts": f"{prefix}-alerts", "dlq": f"{prefix}-dlq"}
    command = [args.detector, "run", "--state-dir", os.path.join(work, "state"),
               "--http-address", "127.0.0.1", "--http-port", "0", "--probe-port", "0",
               "--card-hash-key-file", key, "--commit-interval-ms", "100"]
    if brokers:
        kafka_dir = os.environ.get("FRAUD_TEST_KAFKA_DIR")
        for name in topics.values():
            run([args.kafka_script, "create-topic", name, str(PARTITIONS)] +
                (["--dir", kafka_dir] if kafka_dir else []))
        command += ["--brokers", brokers, "--group-id", prefix, "--input-topic", topics["input"],
                    "--alerts-topic", topics["alerts"], "--dlq-topic", topics["dlq"]]
        print(f"broker {brokers}, topics {prefix}-*")
    else:
        command += ["--embedded-kafka", "--embedded-partitions", str(PARTITIONS)]
        topics = {"input": "transactions", "alerts": "alerts", "dlq": "transactions.dlq"}
        print("FRAUD_TEST_BROKERS unset: the service's embedded cluster")
    out, log = os.path.join(work, "service.out"), os.path.join(work, "service.log")
    env = dict(os.environ, FRAUD_API_TOKEN=token)
    with open(out, "w") as so, open(log, "w") as se:
        service = subprocess.Popen(command, stdout=so, stderr=se, env=env)
    if not brokers:
        brokers = wait_for("the bootstrap line", lambda: (re.findall(
            r"^bootstrap=(\S+)", read(out), re.M) or [None])[0], 60, service)
    port = wait_for("the API port", lambda: (re.findall(
        r"API on http://127\.0\.0\.1:(\d+)", read(log)) or [None])[0], 60, service)
    wait_for("/readyz", lambda: http(port, "/readyz")[0] == 200, 120, service)
    return service, brokers, topics, port, log


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--detector", required=True)
    parser.add_argument("--kafka-script", required=True)
    parser.add_argument("--screenshots", default=os.environ.get("FRAUD_CONSOLE_SCREENSHOTS"))
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        fail("chromium is not installed: run scripts/setup (it installs Debian's chromium)")

    work = tempfile.mkdtemp(prefix="console-browser-")
    service = browser = None
    try:
        token = secrets.token_urlsafe(24)
        key = os.path.join(work, "card-hash.key")
        with open(key, "w") as f:
            f.write(secrets.token_hex(32))
        service, brokers, topics, port, log = start_service(args, work, token, key)
        truth = os.path.join(work, "truth.jsonl")
        # The same run twice (same seed and model clock): to the broker, and to a file, where
        # the test finds a defrauded card's number to type into the page.
        traffic = ["--rate", "1000", "--count", "5000", "--seed", "11", "--cards", "3000",
                   "--fraud-rate", "10", "--start-time", str(int(time.time() * 1000)),
                   "--card-hash-key-file", key, "--no-progress"]
        run([args.loadgen, "--brokers", brokers, "--topic", topics["input"], "--truth", truth] +
            traffic)
        records = os.path.join(work, "records.jsonl")
        run([args.loadgen, "--output-single", records, "--partitions", str(PARTITIONS)] +
            traffic)
        card_of_tx = {}
        for line in read(records).splitlines():
            try:
                r = json.loads(line)
                card_of_tx[r["tx_id"]] = r["card"]
            except (ValueError, KeyError, TypeError):
                pass  # the model's malformed records
        scenarios = [json.loads(line) for line in read(truth).splitlines() if line.strip()]
        if not scenarios:
            fail("the load generator injected no fraud")
        # A scenario whose card the service holds now, with all its countries.
        def held():
            for s in scenarios:
                status, _, body = http(port, f"/v1/cards/{s['card_ref']}", token)
                if status == 200:
                    countries = {e["country"] for e in json.loads(body)["events"]}
                    if set(s["countries"]) <= countries:
                        return s
            return None
        scenario = wait_for("a defrauded card in state", held, 90, service)
        scenario["card"] = card_of_tx.get(scenario["tx_ids"][0])
        if not scenario["card"]:
            fail("the file run did not repeat the broker run (no card for the scenario's tx_id)")
        wait_for("recent alerts", lambda: json.loads(
            http(port, "/v1/alerts/recent", token)[2] or b"{}").get("alerts"), 60, service)
        check_headers(port)
        browser = cdp.Browser(chromium, os.path.join(work, "profile"))
        check_page(browser, port, token, scenario, args.screenshots)
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


def check_headers(port):
    status, headers, body = http(port, "/ui/")
    if status != 200 or b"console.js" not in body:
        fail(f"/ui/ answered {status} without the page")
    csp = {k.lower(): v for k, v in headers.items()}.get("content-security-policy", "")
    for directive in ("default-src 'self'", "frame-ancestors 'none'", "script-src 'self'"):
        if directive not in csp:
            fail(f"/ui/ CSP lacks {directive!r}: {csp!r}")
    if "unsafe-inline" in csp or "unsafe-eval" in csp:
        fail(f"/ui/ CSP allows inline code: {csp!r}")
    print(f"ok: CSP {csp}")
    status, _, _ = http(port, "/v1/alerts/recent")
    if status != 401:
        fail(f"/v1/alerts/recent without the token answered {status}")


def check_page(browser, port, token, scenario, screenshots):
    browser.call("Runtime.enable")
    browser.call("Log.enable")
    browser.call("Network.enable")
    browser.call("Page.enable")
    browser.call("Page.navigate", url=f"http://127.0.0.1:{port}/ui/")
    check_without_token(browser)
    browser.evaluate(f"document.getElementById('token').value = {json.dumps(token)}; "
                     "document.getElementById('login-form').requestSubmit(); true")
    browser.wait_for("the console after the token", "!document.getElementById('nav').hidden")
    check_card(browser, scenario, screenshots)
    check_partitions_and_alerts(browser, screenshots)
    check_no_errors(browser)


def check_without_token(browser):
    """Before the token: the form alone, nothing fetched, the page's CSP seen by the browser."""
    browser.wait_for("the token form", "document.readyState === 'complete' && "
                     "!document.getElementById('login').hidden")
    time.sleep(1)  # anything the page would fetch unasked would go now
    shown = browser.evaluate(
        "['view-card','view-partitions','view-alerts','nav'].filter(id => "
        "!document.getElementById(id).hidden)")
    if shown:
        fail(f"without a token the page shows {shown}")
    asked = [e["params"]["request"]["url"] for e in browser.events
             if e["method"] == "Network.requestWillBeSent" and "/v1/" in e["params"]["request"]["url"]]
    if asked:
        fail(f"without a token the page asked {asked}")
    document = [e for e in browser.events if e["method"] == "Network.responseReceived"
                and e["params"]["response"]["url"].endswith("/ui/")]
    if not document or not any(k.lower() == "content-security-policy"
                               for k in document[0]["params"]["response"]["headers"]):
        fail("the browser saw no Content-Security-Policy on /ui/")
    print("ok: nothing shown or asked without the token")


def check_card(browser, scenario, screenshots):
    """A fraud scenario's card looked up by number: its card_ref shown, never the number; its
    timeline with the scenario's countries and its alerts' keys."""
    ref = scenario["card_ref"]
    # By number (a POST body), then it stays on the card by its card_ref.
    browser.evaluate("document.getElementById('card-number').value = "
                     f"{json.dumps(scenario['card'])}; "
                     "document.getElementById('card-form').requestSubmit(); true")
    browser.wait_for("the card looked up by number", "document.getElementById('card-facts')"
                     f".textContent.includes('{ref}') && location.hash === '#card/{ref}'")
    if scenario["card"] in browser.evaluate("document.body.textContent + location.href"):
        fail("the card number is still on the page or in its URL")
    print("ok: looked up by number; the page shows its card_ref only")
    drawn = browser.wait_for("the card's timeline", "(() => { const s = "
                             "document.getElementById('timeline'); const c = "
                             "s.getAttribute('data-countries'); return c && "
                             "s.querySelectorAll('circle.event').length ? c : null; })()")
    missing = set(scenario["countries"]) - set(drawn.split(","))
    if missing:
        fail(f"the timeline of {ref} lacks {missing} (drawn: {drawn})")
    keys = browser.wait_for("the card's idempotency keys", "Array.from(document.querySelectorAll("
                            "'#timeline text.idempotency-key')).map(t => t.textContent)", 20)
    print(f"ok: card {ref[:12]}… timeline shows {drawn}; alert keys {keys}")
    if screenshots:
        os.makedirs(screenshots, exist_ok=True)
        browser.screenshot(os.path.join(screenshots, "console-card.png"))


def check_partitions_and_alerts(browser, screenshots):
    """Every partition with its lateness and its count of misrouted records (none: the loadgen
    keys by card with the service's partitioner), the lateness summary, recent alerts linking to
    their cards."""
    browser.evaluate("location.hash = '#partitions'; true")
    rows = browser.wait_for("the partitions table", "(() => { const r = Array.from("
                            "document.querySelectorAll('#partitions tbody tr')); return r.length "
                            f">= {PARTITIONS} && r.every(x => /ms|s|min/.test(x.cells[7].textContent)"
                            " && x.cells[10].textContent === '0')"
                            " ? r.length : 0; })()")
    summary = browser.wait_for("the lateness summary",
                               "document.getElementById('lateness-summary').textContent")
    print(f"ok: {rows} partitions with lateness; {summary}")
    if screenshots:
        browser.screenshot(os.path.join(screenshots, "console-partitions.png"))

    browser.evaluate("location.hash = '#alerts'; true")
    linked = browser.wait_for("recent alerts", "(() => { const a = document.querySelectorAll("
                              "'#alerts tbody tr a[href^=\"#card/\"]'); return a.length; })()")
    print(f"ok: {linked} recent alerts linking to their cards")
    if screenshots:
        browser.screenshot(os.path.join(screenshots, "console-alerts.png"))


def check_no_errors(browser):
    browser.call("Runtime.evaluate", expression="1")  # drain the events sent meanwhile
    errors = []
    for e in browser.events:
        if e["method"] == "Runtime.exceptionThrown":
            errors.append(e["params"]["exceptionDetails"].get("text"))
        elif e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"):
            errors.append(str(e["params"]["args"]))
        elif e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error":
            errors.append(e["params"]["entry"]["text"])
    if errors:
        fail(f"the page logged errors: {errors}")
    print("ok: no console errors")


if __name__ == "__main__":
    main()
