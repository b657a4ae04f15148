"""Render-and-assert tests of helm/fraud-detector: each renders the chart with chosen values
(`helm template`, no cluster) and checks the YAML. Here: the configuration's wiring, the scaling
guards, the schema, `helm test`, the notes and the README's table; the other test_*.py files
hold the rest."""
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import (ALL_SECRETS, CHART, REPO, configmap_env, container, notes, pod_spec, render,
                      render_error, render_text)


def documented_env_vars():
    """FRAUD_* variables of the env column of docs/configuration.md."""
    with open(os.path.join(REPO, "docs", "configuration.md"), encoding="utf-8") as f:
        text = f.read()
    names = set()
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and line.startswith("|"):
            names.update(re.findall(r"FRAUD_[A-Z0-9_]+", cells[1]))
    assert names, "no FRAUD_* variables found in docs/configuration.md"
    return names


# --- configuration wiring --------------------------------------------------------------------

def test_every_rendered_variable_is_a_documented_fraud_variable():
    documented = documented_env_vars()
    for values in ({}, ALL_SECRETS | {"kafka": {"staticMembership": True, "changelogTopic": "c"}}):
        m = render(values)
        env = set(configmap_env(m))
        sts_env = {e["name"] for e in container(m.one("StatefulSet"))["env"]}
        assert env | sts_env <= documented, (env | sts_env) - documented


def test_every_config_value_reaches_the_configmap():
    with open(os.path.join(CHART, "values.yaml")) as f:
        config = yaml.safe_load(f)["config"]
    env = configmap_env(render())
    for key, value in config.items():
        name = "FRAUD_" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).upper()
        assert env[name] == str(value), name


def test_alert_delivery_is_transactional_unless_asked_and_only_one_of_two_modes():
    assert configmap_env(render())["FRAUD_ALERT_DELIVERY"] == "transactional"
    immediate = configmap_env(render({"config": {"alertDelivery": "immediate"}}))
    assert immediate["FRAUD_ALERT_DELIVERY"] == "immediate"
    assert "alertDelivery" in render_error({"config": {"alertDelivery": "eventually"}})


def test_standby_replicas_are_off_by_default_and_passed_through_when_set():
    assert configmap_env(render())["FRAUD_STANDBY_REPLICAS"] == "0"
    two = configmap_env(render({"config": {"standbyReplicas": 2, "standbyIntervalMs": 500}}))
    assert two["FRAUD_STANDBY_REPLICAS"] == "2"
    assert two["FRAUD_STANDBY_INTERVAL_MS"] == "500"
    assert "standbyReplicas" in render_error({"config": {"standbyReplicas": -1}})


def test_large_numbers_are_rendered_as_integers():
    env = configmap_env(render({"config": {"windowMs": 86400000, "graceMs": 12000000}}))
    assert env["FRAUD_WINDOW_MS"] == "86400000"
    assert env["FRAUD_GRACE_MS"] == "12000000"


def test_state_dir_is_the_pvc_mount():
    m = render()
    sts = m.one("StatefulSet")
    mounts = {v["name"]: v["mountPath"] for v in container(sts)["volumeMounts"]}
    assert mounts["state"] == "/var/lib/fraud-detector"
    assert configmap_env(m)["FRAUD_STATE_DIR"] == "/var/lib/fraud-detector"
    [claim] = sts["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "state"
    assert claim["spec"]["resources"]["requests"]["storage"] == "20Gi"


def test_instance_id_comes_from_the_pod_name():
    env = {e["name"]: e for e in container(render().one("StatefulSet"))["env"]}
    assert env["FRAUD_INSTANCE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_static_membership_is_on_by_default_and_can_be_turned_off():
    # A crashed pod comes back under its name and resumes its partitions without a rebalance.
    assert configmap_env(render())["FRAUD_STATIC_MEMBERSHIP"] == "true"
    assert "FRAUD_STATIC_MEMBERSHIP" not in configmap_env(render({"kafka": {"staticMembership": False}}))


def test_peer_url_template_names_the_headless_service():
    m = render()
    headless = next(s for s in m.all("Service") if s["spec"].get("clusterIP") == "None")
    assert configmap_env(m)["FRAUD_PEER_URL_TEMPLATE"] == (
        f"http://{{member}}.{headless['metadata']['name']}.payments.svc.cluster.local:8080")
    tls = configmap_env(render(ALL_SECRETS))
    assert tls["FRAUD_PEER_URL_TEMPLATE"].startswith("https://{member}.")


def test_kafka_properties_become_kafka_flags():
    args = container(render({"kafka": {"properties": {"session.timeout.ms": 45000, "client.rack": "a"}}})
                     .one("StatefulSet"))["args"]
    assert args[0] == "run"
    pairs = [args[i + 1] for i, a in enumerate(args) if a == "--kafka"]
    assert sorted(pairs) == ["client.rack=a", "session.timeout.ms=45000"]


def test_service_links_are_off_so_no_stray_fraud_variables_appear():
    # A Service named fraud-... would otherwise inject FRAUD_..._PORT variables into every pod.
    assert pod_spec(render().one("StatefulSet"))["enableServiceLinks"] is False


def test_config_change_changes_the_pod_template_checksum():
    def checksum(values):
        return render(values).one("StatefulSet")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum({}) == checksum({})
    assert checksum({}) != checksum({"config": {"threshold": 4}})


# --- scaling guards ---------------------------------------------------------------------------

def test_replicas_up_to_the_partition_count_are_accepted():
    sts = render({"replicaCount": 12, "kafka": {"inputPartitions": 12}}).one("StatefulSet")
    assert sts["spec"]["replicas"] == 12


def test_replicas_above_the_partition_count_are_refused():
    err = render_error({"replicaCount": 13, "kafka": {"inputPartitions": 12}})
    assert "replicaCount (13) exceeds kafka.inputPartitions (12)" in err


def test_keda_maximum_above_the_partition_count_is_refused():
    err = render_error({"keda": {"enabled": True, "maxReplicas": 13}, "kafka": {"inputPartitions": 12}})
    assert "keda.maxReplicas (13) exceeds kafka.inputPartitions (12)" in err


def test_keda_minimum_above_its_maximum_is_refused():
    err = render_error({"keda": {"enabled": True, "minReplicas": 5, "maxReplicas": 4}})
    assert "keda.minReplicas (5) exceeds keda.maxReplicas (4)" in err


def test_keda_owns_replicas_only_when_its_api_is_served():
    values = {"keda": {"enabled": True, "minReplicas": 2, "maxReplicas": 12}}
    m = render(values)
    assert "replicas" not in m.one("StatefulSet")["spec"]
    so = m.one("ScaledObject")
    assert so["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "name": m.one("StatefulSet")["metadata"]["name"]}
    assert so["spec"]["maxReplicaCount"] == 12 and so["spec"]["minReplicaCount"] == 2
    [trigger] = so["spec"]["triggers"]
    assert trigger["type"] == "kafka"
    assert trigger["metadata"]["consumerGroup"] == "fraud-detector"
    assert trigger["metadata"]["topic"] == "transactions"
    assert trigger["metadata"]["lagThreshold"] == "10000"
    without_api = render(values, api_versions=())
    assert without_api.all("ScaledObject") == []
    assert without_api.one("StatefulSet")["spec"]["replicas"] == 3
    assert "no keda.sh/v1alpha1 API" in notes(values)
    skipped = render_text(values, api_versions=())
    assert "no\n# ScaledObject, and replicaCount sets the pod count" in skipped
    assert "--api-versions keda.sh/v1alpha1" in skipped
    assert "ScaledObject" not in render_text({}, api_versions=())


def test_grace_period_must_exceed_the_shutdown_deadline():
    err = render_error({"terminationGracePeriodSeconds": 20, "config": {"shutdownTimeoutMs": 20000}})
    assert "terminationGracePeriodSeconds (20 s) must exceed config.shutdownTimeoutMs (20000 ms)" in err
    sts = render({"terminationGracePeriodSeconds": 21}).one("StatefulSet")
    assert pod_spec(sts)["terminationGracePeriodSeconds"] == 21


def test_default_grace_period_exceeds_the_default_shutdown_deadline():
    m = render()
    grace = pod_spec(m.one("StatefulSet"))["terminationGracePeriodSeconds"]
    assert grace * 1000 > int(configmap_env(m)["FRAUD_SHUTDOWN_TIMEOUT_MS"])


# --- schema -----------------------------------------------------------------------------------

@pytest.mark.parametrize("values, where", [
    ({"replicas": 3}, "additional properties 'replicas'"),
    ({"kafka": {"partitions": 3}}, "additional properties 'partitions'"),
    ({"metrics": {"serviceMonitor": {"enable": True}}}, "additional properties 'enable'"),
    ({"config": {"windowMS": 1}}, "additional properties 'windowMS'"),
    ({"probes": {"liveness": {"httpGet": {"pth": "/x"}}}}, "additional properties 'pth'"),
])
def test_schema_rejects_unknown_keys(values, where):
    assert where in render_error(values)


def test_schema_rejects_wrong_types_and_values():
    assert "replicaCount" in render_error({"replicaCount": "3"})
    assert "autoOffsetReset" in render_error({"kafka": {"autoOffsetReset": "smallest"}})
    assert "podAntiAffinity" in render_error({"podAntiAffinity": "maybe"})


# --- helm test, notes, README --------------------------------------------------------------------

def test_helm_test_pod_checks_readyz_and_metrics_on_every_pod():
    pod = render().one("Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    script = container(pod)["args"][0]
    assert '"$base/readyz"' in script and '"$base/metrics"' in script
    assert "fraud_state_bytes" in script
    assert "http://fraud-fraud-detector:8081 " in script
    for i in range(3):
        assert f"http://fraud-fraud-detector-{i}.fraud-fraud-detector-headless:8081" in script
    assert "https://" not in container(render(ALL_SECRETS).one("Pod"))["args"][0]
    assert "https://" in container(render({"probe": {"port": 8081, "scheme": "HTTPS"}}).one("Pod"))["args"][0]


def test_notes_give_port_forward_commands_and_warn():
    text = notes()
    assert "kubectl -n payments port-forward svc/fraud-fraud-detector 8081:8081" in text
    assert "kubectl -n payments port-forward pod/fraud-fraud-detector-0 8080:8080" in text
    assert "create secret generic fraud-detector-card-hash-key" in text
    assert "create secret generic fraud-detector-api-token --from-literal=token=$(openssl rand -hex 32)" in text
    assert 'Authorization: Bearer $TOKEN' in text
    assert "no bearer token" not in text and "HAS NO TOKEN" not in text
    assert "plain HTTP" in text and "plain HTTP" not in notes(ALL_SECRETS)


def test_readme_values_table_is_up_to_date():
    proc = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "values_table.py"), CHART, "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
