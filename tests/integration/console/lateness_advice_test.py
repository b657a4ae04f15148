#!/usr/bin/env python3
"""The service's grace advice against the lateness the load generator knows it produced.

Runs `fraud-detector run` (on $FRAUD_TEST_BROKERS when set, else its embedded cluster), sends
traffic whose lateness follows the loadgen's mixture model (on time, a log-normal body, a tail of
stragglers), whose summary reports the generated lateness's quantiles ("lateness"); then
compares `GET /v1/lateness`'s advice with them:

- advice.grace_p99_ms within [0.9, 1.15] x the generated p99 (the service reads log buckets, at
  most 6.25 % high; its lateness is against stream time, a few ms behind the generator's clock);
- the same for p99.9 with [0.85, 1.2] (fewer samples decide it);
- no record dropped (the grace is above every generated lateness).

  lateness_advice_test.py --loadgen BIN --detector BIN --kafka-script scripts/kafka
"""
import argparse
import json
import os
import secrets
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import console_browser_test as stack  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--detector", required=True)
    parser.add_argument("--kafka-script", required=True)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="lateness-advice-")
    service = None
    try:
        token = secrets.token_urlsafe(24)
        key = os.path.join(work, "card-hash.key")
        with open(key, "w") as f:
            f.write(secrets.token_hex(32))
        service, brokers, topics, port, _ = stack.start_service(args, work, token, key)
        produced = stack.run([args.loadgen, "--brokers", brokers, "--topic", topics["input"], "--rate",
                   "2000", "--duration", "15", "--seed", "21", "--cards", "20000",
                   "--fraud-rate", "1", "--duplicate-fraction", "0", "--malformed-fraction", "0",
                   "--beyond-grace-fraction", "0", "--lateness-model", "mixture",
                   "--late-body-fraction", "0.3", "--late-body-median-ms", "3000",
                   "--late-body-sigma", "0.8", "--straggler-fraction", "0.004",
                   "--max-lateness", "100s", "--card-hash-key-file", key, "--no-progress"])
        truth = json.loads(produced.stdout)["lateness"]

        def measured():
            status, _, body = stack.http(port, "/v1/lateness", token)
            if status != 200:
                return None
            report = json.loads(body)
            return report if report["records"] >= truth["count"] else None
        report = stack.wait_for("every generated record measured", measured, 120, service)
        advice = report["advice"]
        print(f"generated: {truth}")
        print(f"measured: vs_stream_time {report['vs_stream_time']}, advice {advice}, "
              f"late_dropped {report['late_dropped']}")
        for name, want, low, high in (("p99", truth["p99_ms"], 0.9, 1.15),
                                      ("p999", truth["p999_ms"], 0.85, 1.2)):
            got = advice[f"grace_{name}_ms"]
            if not low * want <= got <= high * want:
                stack.fail(f"advised grace {name} {got} ms is not within [{low}, {high}] x the "
                           f"generated {want} ms")
            print(f"ok: advised grace {name} {got} ms vs generated {want} ms "
                  f"({got / want:.3f} x)")
        if report["late_dropped"] != 0:
            stack.fail(f"{report['late_dropped']} records dropped under a grace above every "
                       "generated lateness")
        print("PASS")
    finally:
        if service is not None:
            service.terminate()
            service.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
