#!/usr/bin/env python3
"""The load-test report in a real browser.

Runs the stack for a few seconds (`fraud-detector run --embedded-kafka`, `fraud-loadgen
--report --service-metrics`, `fraud-loadgen verify`, `fraud-loadgen report --verify`), then has
Debian's chromium, headless and offline, draw the page: a screenshot and the DOM after parsing.
Fails when the page is blank, a chart is missing or has no data points, a chart's colours were
never painted, or the verdict is absent; and when the lateness chart does not draw the run's
lateness (its bars against the summary's counts, split at the grace), or the dropped shares
(the share the loadgen stamped beyond the grace, the share the service counted as late-dropped
on its /metrics) are missing, not the run's, or far apart. Chromium must be installed
(scripts/setup installs it); its absence fails the test rather than skipping it.

  report_browser_test.py --loadgen BIN --detector BIN [--keep DIR]
  report_browser_test.py --page FILE.html [--keep DIR]

--keep DIR (or $FRAUD_REPORT_KEEP_DIR) copies the page, its screenshot and its DOM there.
--page checks an existing page instead of producing one (to see the checks fail on a broken
page, or to look at a demo's report).
"""
import argparse
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from report_page_reading import WINDOW, DomCharts, colour_counts, embedded_data, near  # noqa: E402
from script_steps import fail, read, run, wait_for  # noqa: E402

CHARTS = ["chart-rate", "chart-lag", "chart-latency-histogram", "chart-latency-percentiles",
          "chart-lateness"]
# The run stamps this share of its records beyond the grace (--beyond-grace-fraction): enough
# for the service's count to be compared with the loadgen's at a few thousand records.
BEYOND_GRACE_FRACTION = 0.02
# The service keeps a record beyond the grace only while its partition's stream time lags the
# send time (its first records): the two shares may differ by that much.
SHARE_TOLERANCE = 0.003
# Colours of the page's own palette that only charts paint (report_page.cc).
CHART_COLOURS = {"rate line": (0x25, 0x63, 0xEB), "lag line": (0xEA, 0x58, 0x0C),
                 "histogram bars": (0x0D, 0x94, 0x88), "p99 line": (0xDC, 0x26, 0x26)}




def ready(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False



def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--loadgen")
    parser.add_argument("--detector")
    parser.add_argument("--page")
    parser.add_argument("--keep", default=os.environ.get("FRAUD_REPORT_KEEP_DIR"))
    args = parser.parse_args()

    chromium = shutil.which("chromium")
    if chromium is None:
        fail("chromium is not installed: run scripts/setup (it installs Debian's chromium)")

    if args.page is None and (args.loadgen is None or args.detector is None):
        parser.error("give --loadgen and --detector, or --page")
    work = tempfile.mkdtemp(prefix="report-browser-")
    try:
        page = produce_page(args, work) if args.page is None else os.path.abspath(args.page)
        check_page(chromium, page, work, args.keep)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")


def produce_page(args, work):
    """Runs the stack for a few seconds; returns the path of its report, verdict included."""
    service = None
    try:
        key = os.path.join(work, "card-hash.key")
        with open(key, "w") as f:
            f.write(secrets.token_hex(32))
        out, log = os.path.join(work, "service.out"), os.path.join(work, "service.log")
        with open(out, "w") as so, open(log, "w") as se:
            service = subprocess.Popen(
                [args.detector, "run", "--embedded-kafka", "--embedded-partitions", "4",
                 "--state-dir", os.path.join(work, "state"), "--http-address", "127.0.0.1",
                 "--http-port", "0", "--probe-port", "0", "--card-hash-key-file", key],
                stdout=so, stderr=se)
        brokers = wait_for("the bootstrap line", lambda: (re.findall(
            r"^bootstrap=(\S+)", read(out), re.M) or [None])[0], 60, service)
        port = wait_for("the API port", lambda: (re.findall(
            r"API on http://127\.0\.0\.1:(\d+)", read(log)) or [None])[0], 60, service)
        probes = wait_for("the probe port", lambda: (re.findall(
            r"probes on http://127\.0\.0\.1:(\d+)", read(log)) or [None])[0], 60, service)
        wait_for("/readyz", lambda: ready(port), 120, service)

        page = os.path.join(work, "report.html")
        truth = os.path.join(work, "truth.jsonl")
        run([args.loadgen, "--brokers", brokers, "--rate", "2000", "--duration", "6",
             "--seed", "3", "--cards", "20000", "--fraud-rate", "20", "--truth", truth,
             "--card-hash-key-file", key, "--lag-group", "fraud-detector", "--report", page,
             "--no-progress", "--lateness-model", "mixture",
             "--beyond-grace-fraction", str(BEYOND_GRACE_FRACTION),
             "--service-metrics", f"http://127.0.0.1:{probes}/metrics"])
        verify = run([args.loadgen, "verify", "--brokers", brokers, "--truth", truth,
                      "--card-hash-key-file", key, "--wait-seconds", "60"])
        verify_file = os.path.join(work, "verify.json")
        with open(verify_file, "w") as f:
            f.write(verify.stdout)
        run([args.loadgen, "report", page, "--verify", verify_file])
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=60)
        service = None
        return page
    except BaseException:
        # A failure here is often the service's: show its log (it is in the temp folder).
        log_text = read(os.path.join(work, "service.log"))
        if log_text:
            print("--- the service's log (fraud-detector run) ---", file=sys.stderr)
            print(log_text[-20000:], file=sys.stderr)
        raise
    finally:
        if service is not None:
            service.kill()
            service.wait()


def check_page(chromium, page, work, keep):
    """Draws the page in chromium and fails unless every chart is there with its data."""
    profile = os.path.join(work, "profile")
    shot = os.path.join(work, "report.png")
    browser = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}"]
    url = "file://" + page
    run(browser + [f"--screenshot={shot}", url])
    dom = run(browser + ["--dump-dom", url]).stdout
    if keep:
        os.makedirs(keep, exist_ok=True)
        for f in (page, shot):
            shutil.copy(f, keep)
        with open(os.path.join(keep, "report.dom.html"), "w") as f:
            f.write(dom)

    charts = DomCharts()
    charts.feed(dom)
    if "Load test" not in dom or not charts.title:
        fail("the DOM holds no report (blank page?)")
    for chart in CHARTS:
        c = charts.charts.get(chart)
        if c is None:
            fail(f"chart {chart} is missing from the DOM")
        if c["data_points"] < 2 or (c["line_pairs"] < 2 and c["bars"] < 1):
            fail(f"chart {chart} has no data: {c}")
        print(f"ok: {chart}: {c}")
    if charts.verdict is None or charts.verdict.strip() not in ("verify: PASS", "verify: FAIL"):
        fail(f"no verdict on the page (found {charts.verdict!r})")
    print(f"ok: verdict {charts.verdict.strip()!r}")
    with open(page, encoding="utf-8") as f:
        check_lateness(charts, embedded_data(f.read()))

    colours, width, height = colour_counts(shot)
    top, top_count = max(colours.items(), key=lambda kv: kv[1])
    if len(colours) < 16 or top_count > 0.97 * width * height:
        fail(f"the screenshot is (nearly) one colour: {len(colours)} colours, {top} covers "
             f"{top_count / (width * height):.1%}")
    print(f"ok: screenshot {width}x{height}, {len(colours)} colours")

    # The charts' colours also paint their legend keys: count what the charts add, against the
    # same page with the charts hidden (same layout).
    with open(page, encoding="utf-8") as f:
        text = f.read()
    hidden_page = os.path.join(work, "charts-hidden.html")
    with open(hidden_page, "w", encoding="utf-8") as f:
        f.write(text.replace("</style>", "svg.chart { visibility: hidden; }</style>", 1))
    hidden_shot = os.path.join(work, "charts-hidden.png")
    run(browser + [f"--screenshot={hidden_shot}", "file://" + hidden_page])
    hidden, _, _ = colour_counts(hidden_shot)
    for name, rgb in CHART_COLOURS.items():
        added = near(colours, rgb) - near(hidden, rgb)
        if added < 100:
            fail(f"the {name} ({'#%02x%02x%02x' % rgb}) is not painted: {added} pixels")
        print(f"ok: {name} painted ({added} pixels)")


def check_lateness(charts, data):
    """The lateness chart draws the run's lateness split at the grace, and the two dropped shares
    are the run's: the one stamped beyond the grace, the one the service reported."""
    lateness = data["run"]["lateness"]
    summary = data["run"]["summary"]["lateness"]
    chart = charts.charts["chart-lateness"]
    if chart["count"] != lateness["count"] or lateness["count"] != summary["count"]:
        fail(f"the lateness chart draws {chart['count']} records, the run stamped "
             f"{summary['count']}")
    if chart["count_beyond"] != summary["beyond_grace"] or summary["beyond_grace"] == 0:
        fail(f"the lateness chart draws {chart['count_beyond']} records beyond the grace, the run "
             f"stamped {summary['beyond_grace']}")
    if chart["beyond_low"] != summary["grace_ms"] + 1:
        fail(f"the bars beyond the grace start at {chart['beyond_low']} ms, not just past the "
             f"grace {summary['grace_ms']} ms")
    print(f"ok: lateness chart: {chart['count']} records, {chart['count_beyond']} beyond the "
          f"grace of {summary['grace_ms']} ms")

    generated = charts.shares.get("dropped-share-generated")
    share = summary["beyond_grace_share"]
    if generated is None or float(generated["data_share"]) != share or \
            generated["text"].strip() != f"{share * 100:.3f} %":
        fail(f"the share beyond the grace on the page is {generated}, the run's is {share}")
    if abs(share - BEYOND_GRACE_FRACTION) > 0.01:
        fail(f"the run stamped {share:.4f} beyond the grace, asked {BEYOND_GRACE_FRACTION}")
    service = summary.get("service")
    if not isinstance(service, dict) or not service.get("counted_all"):
        fail(f"the service's count was not read in full: {service!r}")
    shown = charts.shares.get("dropped-share-service")
    dropped = service["late_dropped_share"]
    if shown is None or float(shown["data_share"]) != dropped or \
            shown["text"].strip() != f"{dropped * 100:.3f} %":
        fail(f"the share the service dropped on the page is {shown}, its summary says {dropped}")
    if dropped <= 0 or abs(share - dropped) > SHARE_TOLERANCE:
        fail(f"the service dropped {dropped:.5f} of the records, the run stamped {share:.5f} "
             f"beyond the grace")
    print(f"ok: dropped shares: stamped {share:.5f} beyond the grace, the service dropped "
          f"{dropped:.5f} ({service['late_dropped']:.0f} of {service['records']:.0f})")


if __name__ == "__main__":
    main()
