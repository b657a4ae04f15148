#!/usr/bin/env bash
# The whole stack at a target rate: fresh topics on the scripts/kafka cluster, one
# `fraud-detector run` instance, `fraud-loadgen` paced at RATE for DURATION measuring end-to-end
# alert latency and the service group's lag, then `fraud-loadgen verify`. Prints one JSON line of
# figures (with the CPU-seconds the service and the broker spent while the loadgen ran:
# service_cpu_s, broker_cpu_s); the full summary, verify report and service log stay in OUT.
#
# Usage: loadgen/bench/stack_bench.sh [--rate N|max] [--duration S] [--partitions P]
#                                     [--cards N] [--out DIR] [--kafka-dir DIR] [--build DIR]
#                                     [--alert-delivery transactional|immediate]
#                                     [--start-broker [--broker-port PORT]]
# --start-broker starts a single-node broker of its own (scripts/kafka, in a temporary folder,
# stopped at the end) instead of using the one running in --kafka-dir: on --broker-port PORT
# (its controller on PORT+100; taken, the script stops at once naming it), by default on a free
# port it picks. The service's API and probes listen on ports the kernel picks (--http-port 0
# --probe-port 0; the probe port is read back from the service's log).
# --alert-delivery runs the service in that mode and verifies accordingly (immediate: exact
# repeats of an idempotency key are accepted and counted).
# Exit: 0 when the stack kept up (rate held, no errors, lag drained, verify passed), 1 when it
# did not, 77 when no cluster is running (ctest skips).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../scripts/lib/ports.sh
. "$root/scripts/lib/ports.sh"
rate=20000 duration=60 partitions=12 cards=1000000 delivery=transactional
start_broker=0 broker_port=
build=${FRAUD_BUILD_DIR:-$root/build}
out=
kafka_dir=${FRAUD_KAFKA_DIR:-/tmp/fraud-kafka}
while [ $# -gt 0 ]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --partitions) partitions=$2; shift 2 ;;
    --cards) cards=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --kafka-dir) kafka_dir=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --alert-delivery) delivery=$2; shift 2 ;;
    --start-broker) start_broker=1; shift ;;
    --broker-port) broker_port=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
    *) echo "stack_bench: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ "$start_broker" = 1 ]; then
  if [ -n "$broker_port" ]; then
    # shellcheck disable=SC2046 # one port a word
    require_free_ports stack_bench "--broker-port $broker_port: broker on PORT, controller on PORT+100" \
      $(kafka_ports "$broker_port" 1)
  else
    broker_port=$(free_kafka_base)
  fi
fi

own_broker_dir=
service_pid=
cleanup() {
  if [ -n "$service_pid" ] && kill -0 "$service_pid" 2>/dev/null; then
    kill -TERM "$service_pid"
    wait "$service_pid" || true
  fi
  if [ -n "$own_broker_dir" ]; then
    "$root/scripts/kafka" --dir "$own_broker_dir" stop >/dev/null 2>&1 || true
    rm -rf "$own_broker_dir"
  fi
}
trap cleanup EXIT
if [ "$start_broker" = 1 ]; then
  own_broker_dir=$(mktemp -d /tmp/fraud-stack-bench-kafka.XXXXXX)
  kafka_dir=$own_broker_dir
  echo "stack_bench: starting a broker of its own on port $broker_port" >&2
  "$root/scripts/kafka" --dir "$kafka_dir" start --port "$broker_port" >/dev/null
fi
kafka() { "$root/scripts/kafka" --dir "$kafka_dir" "$@"; }
if ! status=$(kafka status 2>/dev/null); then
  echo "stack_bench: no running cluster in $kafka_dir (scripts/kafka start --dir $kafka_dir)" >&2
  exit 77
fi
brokers=$(sed -n 's/^bootstrap=//p' <<<"$status")

# The flag only when it is not the default: an older build (a before/after comparison) runs too.
delivery_flag=()
[ "$delivery" = transactional ] || delivery_flag=(--alert-delivery "$delivery")
run_id=bench-$(date +%s)-$$
out=${out:-$(mktemp -d "/tmp/fraud-$run_id.XXXX")}
mkdir -p "$out"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$out/card-hash.key"  # 64 hex characters: keys under 32 bytes are refused
kafka create-topic "$run_id-tx" "$partitions" >/dev/null
kafka create-topic "$run_id-alerts" 3 >/dev/null
kafka create-topic "$run_id-dlq" 3 >/dev/null


"$build/service/fraud-detector" run --brokers "$brokers" --input-topic "$run_id-tx" \
  --alerts-topic "$run_id-alerts" --dlq-topic "$run_id-dlq" --group-id "$run_id" \
  --instance-id "$run_id-1" --state-dir "$out/state" --card-hash-key-file "$out/card-hash.key" \
  --http-port 0 --probe-port 0 "${delivery_flag[@]}" >"$out/service.log" 2>&1 &
service_pid=$!
# Ready once every partition is assigned and restored.
for _ in $(seq 120); do
  [ "$(grep -c 'restored' "$out/service.log" || true)" -ge "$partitions" ] && break
  kill -0 "$service_pid" 2>/dev/null || { tail "$out/service.log" >&2; exit 1; }
  sleep 0.5
done

# CPU-seconds (utime + stime) of a process so far; 0 when it is not ours to read.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
broker_pid=$(cat "$kafka_dir/node-1.pid" 2>/dev/null || echo 0)
cpu_before="$(cpu_of "$service_pid") $(cpu_of "$broker_pid")"
loadgen_status=0
"$build/loadgen/fraud-loadgen" --brokers "$brokers" --topic "$run_id-tx" \
  --alerts-topic "$run_id-alerts" --rate "$rate" --duration "$duration" --cards "$cards" \
  --seed 1 --card-hash-key-file "$out/card-hash.key" --truth "$out/truth.jsonl" \
  --lag-group "$run_id" >"$out/summary.json" 2>"$out/progress.txt" || loadgen_status=$?
cpu_after="$(cpu_of "$service_pid") $(cpu_of "$broker_pid")"

# The service's own view of where the time went (docs/performance.md): its stage histograms.
probe_port=$(service_port "$out/service.log" "$service_pid" probes)
curl -sf "http://127.0.0.1:$probe_port/metrics" >"$out/metrics.txt" 2>/dev/null || : >"$out/metrics.txt"

verify_status=0
"$build/loadgen/fraud-loadgen" verify --brokers "$brokers" --topic "$run_id-tx" \
  --alerts-topic "$run_id-alerts" --dlq-topic "$run_id-dlq" --group "$run_id" \
  --truth "$out/truth.jsonl" --card-hash-key-file "$out/card-hash.key" --wait-seconds 300 \
  --alert-delivery "$delivery" \
  >"$out/verify.json" || verify_status=$?

python3 - "$out" "$rate" "$loadgen_status" "$verify_status" "$delivery" "$cpu_before" "$cpu_after" <<'PY'
import json, sys
out, rate, loadgen_status, verify_status = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
delivery = sys.argv[5]
# CPU-seconds the service and the broker (node 1 of the cluster) spent while the loadgen ran.
cpu_spent = [round(b - a, 2) for a, b in zip(map(float, sys.argv[6].split()), map(float, sys.argv[7].split()))]
s = json.load(open(f"{out}/summary.json"))
v = json.load(open(f"{out}/verify.json"))
lag = s.get("consumer_lag", {})
lat = s.get("latency", {}) if isinstance(s.get("latency"), dict) else {}
achieved = s["achieved_rate"]
target = achieved if rate == "max" else float(rate)
# Kept up: the rate held, nothing failed, the lag when production ended was under 2 s of
# traffic, and the audit passed once the group caught up.
def stage_quantiles(path):
    # histogram_quantile() over the service's fraud_stage_seconds buckets, in ms.
    buckets = {}
    for line in open(path):
        if not line.startswith("fraud_stage_seconds_bucket{"):
            continue
        labels, value = line.rsplit(" ", 1)
        stage = labels.split('stage="')[1].split('"')[0]
        le = labels.split('le="')[1].split('"')[0]
        buckets.setdefault(stage, []).append((float("inf") if le == "+Inf" else float(le), float(value)))
    result = {}
    for stage, bs in buckets.items():
        bs.sort()
        total = bs[-1][1]
        if total == 0:
            continue
        def q(phi):
            rank, lower, below = phi * total, 0.0, 0.0
            for upper, count in bs:
                if count >= rank:
                    if upper == float("inf"):
                        return lower * 1000
                    return (lower + (upper - lower) * (rank - below) / max(count - below, 1e-12)) * 1000
                lower, below = upper, count
            return lower * 1000
        result[stage] = {"count": int(total), "p50_ms": round(q(0.5), 3), "p99_ms": round(q(0.99), 3)}
    return result
kept_up = (loadgen_status == 0 and verify_status == 0 and s["errors"] == 0
           and achieved >= 0.98 * target
           and (lag.get("at_production_end") or 0) <= 2 * achieved)
print(json.dumps({
    "alert_delivery": delivery, "rate": rate, "achieved_rate": round(achieved), "records": s["records"],
    "rate_max_deviation_10s": s.get("rate_max_deviation_10s"), "errors": s["errors"],
    "latency_ms": {k: lat.get(k) for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms")},
    "alerts_matched": f'{lat.get("matched")}/{lat.get("expected_alerts")}',
    "lag": {k: lag.get(k) for k in ("p50", "p99", "max", "at_production_end")},
    "verify": v.get("verdict"), "group_wait_s": v.get("group", {}).get("waited_s"),
    "truth": f'{v.get("truth", {}).get("recalled")}/{v.get("truth", {}).get("scenarios")}',
    "alert_repeats": v.get("alerts", {}).get("repeats", {}).get("extra_records", 0),
    "stages": stage_quantiles(f"{out}/metrics.txt"),
    "service_cpu_s": cpu_spent[0], "broker_cpu_s": cpu_spent[1],
    "kept_up": kept_up, "out": out}))
sys.exit(0 if kept_up else 1)
PY
