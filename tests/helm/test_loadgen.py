"""Render-and-assert tests of the load-generator Job."""
from conftest import ALL_SECRETS, LOADGEN, configmap_env, container, pod_spec, render, render_error


def flag_values(args):
    """{flag: value} of an argument list; a flag without a value maps to None."""
    out = {}
    for i, a in enumerate(args):
        if a.startswith("--"):
            nxt = args[i + 1] if i + 1 < len(args) else None
            out[a] = None if nxt is None or nxt.startswith("--") else nxt
    return out


# --- load generator -----------------------------------------------------------------------------

def test_loadgen_is_an_indexed_job_splitting_the_rate():
    m = render({"loadgen": LOADGEN | {"parallelism": 4, "rate": 40000, "count": 1000000, "seed": 7,
                                      "truthClaim": "truth"},
                "kafka": {"brokers": "b1:9092,b2:9092", "inputTopic": "tx"}})
    job = m.one("Job")
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 4
    c = container(job)
    assert c["command"] == ["fraud-loadgen"]
    args = flag_values(c["args"])
    env = configmap_env(m)
    # The same Kafka, topics, partitioner and detector settings as the service.
    assert args["--brokers"] == "b1:9092,b2:9092" == env["FRAUD_BROKERS"]
    assert args["--topic"] == "tx" == env["FRAUD_INPUT_TOPIC"]
    assert args["--alerts-topic"] == env["FRAUD_ALERTS_TOPIC"]
    assert args["--partitioner"] == env["FRAUD_PARTITIONER"]
    for flag in ("--window-ms", "--grace-ms", "--threshold", "--max-events", "--max-future-skew-ms"):
        assert args[flag] == env["FRAUD_" + flag[2:].replace("-", "_").upper()], flag
    assert args["--rate"] == "10000"
    assert args["--count"] == "250000"
    assert args["--seed"] == "7$(LOADGEN_INDEX)"
    assert args["--truth"] == "/var/lib/fraud-loadgen/truth-$(LOADGEN_INDEX).jsonl"
    assert args["--card-hash-key-file"].startswith("/etc/fraud-detector/card-hash-key/")
    assert "--no-progress" in args
    assert "--no-latency" not in args
    env = {e["name"]: e for e in c["env"]}
    assert env["LOADGEN_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert pod_spec(job)["restartPolicy"] == "Never"


def test_loadgen_reads_the_kafka_properties_secret_like_the_service():
    values = {"loadgen": LOADGEN, "secrets": ALL_SECRETS["secrets"]}
    m = render(values)
    job_args = flag_values(container(m.one("Job"))["args"])
    service_env = configmap_env(m) | {e["name"]: e.get("value") for e in container(m.one("StatefulSet")).get("env", [])}
    assert job_args["--kafka-config"].startswith("/etc/fraud-detector/kafka/")
    assert job_args["--kafka-config"] == service_env["FRAUD_KAFKA_CONFIG"]
    assert "--kafka-config" not in flag_values(container(render({"loadgen": LOADGEN}).one("Job"))["args"])


def test_loadgen_is_off_by_default_and_refuses_a_rate_below_one_per_pod():
    assert render().all("Job") == []
    assert "loadgen.rate (3) is below loadgen.parallelism (4)" in render_error(
        {"loadgen": {"enabled": True, "parallelism": 4, "rate": 3}})
