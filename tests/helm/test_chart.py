"""Render-and-assert tests of helm/fraud-detector: each renders the chart with chosen values
(`helm template`, no cluster) and checks the YAML."""
import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import CHART, REPO, container, notes, pod_spec, render, render_error

def service_metrics():
    """{name: type} of the metrics the service registers (service/*.cc, api/*.cc): the
    dashboard and the alerts may use no others."""
    found = {}
    for path in glob.glob(os.path.join(REPO, "service", "*.cc")) + glob.glob(os.path.join(REPO, "api", "*.cc")):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for kind, name in re.findall(r'Build(Counter|Gauge|Histogram)\(\)\s*\.Name\("(fraud_[a-z0-9_]+)"\)', text):
            found[name] = kind
    assert found, "no metrics registered in service/*.cc or api/*.cc"
    return found


_REGISTERED = service_metrics()
METRICS = set(_REGISTERED)
HISTOGRAMS = {name for name, kind in _REGISTERED.items() if kind == "Histogram"}

ALL_SECRETS = {
    "secrets": {
        "cardHashKey": {"existingSecret": "card-key", "key": "k"},
        "apiToken": {"existingSecret": "api-token", "key": "t"},
        "tls": {"existingSecret": "api-tls", "certKey": "c.pem", "keyKey": "k.pem"},
        "kafka": {"existingSecret": "kafka-client", "configKey": "client.properties"},
    }
}


# A load-generator Job in a release whose input topic is a test topic.
LOADGEN = {"enabled": True, "allowInputTopic": True}


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


def configmap_env(m):
    return m.one("ConfigMap")["data"] if len(m.all("ConfigMap")) == 1 else next(
        c for c in m.all("ConfigMap") if not c["metadata"]["name"].endswith("-dashboard"))["data"]


def metric_names(expr):
    """The service metrics a PromQL expression reads; a histogram read without its _bucket,
    _sum or _count suffix (a series that does not exist) comes back marked as such."""
    base = set()
    for n in re.findall(r"\b(fraud_[a-z0-9_]+)", expr):
        stem = re.sub(r"_(bucket|sum|count)$", "", n)
        if stem != n and stem in HISTOGRAMS:
            base.add(stem)
        elif n in HISTOGRAMS:
            base.add(n + " (a histogram, read without _bucket/_sum/_count)")
        else:
            base.add(n)
    return base


def flag_values(args):
    """{flag: value} of an argument list; a flag without a value maps to None."""
    out = {}
    for i, a in enumerate(args):
        if a.startswith("--"):
            nxt = args[i + 1] if i + 1 < len(args) else None
            out[a] = None if nxt is None or nxt.startswith("--") else nxt
    return out


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


# --- secrets ----------------------------------------------------------------------------------

def test_secrets_are_never_inlined():
    m = render(ALL_SECRETS, files=["ci/production-values.yaml"])
    assert m.all("Secret") == []
    text = yaml.safe_dump_all(m)
    # The inline forms of the key and the token are never set, only the *_FILE forms.
    assert not re.search(r"FRAUD_(CARD_HASH_KEY|API_TOKEN)\b(?!_FILE)", text)
    for owner in m.all("StatefulSet") + m.all("Job"):
        for c in pod_spec(owner)["containers"]:
            for e in c.get("env", []):
                assert "secretKeyRef" not in e.get("valueFrom", {}), e


def test_schema_refuses_secret_values_and_requires_the_card_hash_key():
    assert "additional properties 'value'" in render_error({"secrets": {"apiToken": {"value": "s3cret"}}})
    assert "additional properties 'token'" in render_error({"secrets": {"apiToken": {"token": "s3cret"}}})
    assert "existingSecret" in render_error({"secrets": {"cardHashKey": {"existingSecret": ""}}})


def test_secrets_are_mounted_read_only_and_passed_as_files():
    m = render(ALL_SECRETS)
    sts = m.one("StatefulSet")
    volumes = {v["name"]: v for v in pod_spec(sts)["volumes"]}
    mounts = {v["name"]: v for v in container(sts)["volumeMounts"]}
    env = configmap_env(m)
    expected = {
        "card-hash-key": ("card-key", {"FRAUD_CARD_HASH_KEY_FILE": "/etc/fraud-detector/card-hash-key/card-hash-key"}),
        "api-token": ("api-token", {"FRAUD_API_TOKEN_FILE": "/etc/fraud-detector/api-token/token"}),
        "tls": ("api-tls", {"FRAUD_TLS_CERT_FILE": "/etc/fraud-detector/tls/tls.crt",
                            "FRAUD_TLS_KEY_FILE": "/etc/fraud-detector/tls/tls.key"}),
        "kafka-client": ("kafka-client", {"FRAUD_KAFKA_CONFIG": "/etc/fraud-detector/kafka/client.properties"}),
    }
    for volume, (secret, files) in expected.items():
        assert volumes[volume]["secret"]["secretName"] == secret
        assert mounts[volume]["readOnly"] is True
        for name, path in files.items():
            assert env[name] == path
            assert path.startswith(mounts[volume]["mountPath"] + "/")
    # Keys are projected under the names the paths use.
    assert volumes["card-hash-key"]["secret"]["items"] == [{"key": "k", "path": "card-hash-key"}]
    assert volumes["tls"]["secret"]["items"] == [{"key": "c.pem", "path": "tls.crt"}, {"key": "k.pem", "path": "tls.key"}]
    # The Kafka secret is mounted whole: certificates sit beside the properties file.
    assert "items" not in volumes["kafka-client"]["secret"]


def test_optional_secrets_are_absent_by_default():
    m = render()
    names = {v["name"] for v in pod_spec(m.one("StatefulSet"))["volumes"]}
    # The card-hash key and the API token are required; TLS and the Kafka client file are not.
    assert {"card-hash-key", "api-token"} <= names and not names & {"tls", "kafka-client"}
    assert not {"FRAUD_TLS_CERT_FILE", "FRAUD_KAFKA_CONFIG"} & set(configmap_env(m))


# --- probes -----------------------------------------------------------------------------------

def test_probes_are_wired_to_the_probe_port():
    m = render()
    c = container(m.one("StatefulSet"))
    assert c["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "probe", "scheme": "HTTP"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probe", "scheme": "HTTP"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probe", "scheme": "HTTP"}
    assert {"name": "http", "containerPort": 8080, "protocol": "TCP"} in c["ports"]
    assert {"name": "probe", "containerPort": 8081, "protocol": "TCP"} in c["ports"]
    assert configmap_env(m)["FRAUD_PROBE_PORT"] == "8081"
    moved = render({"probe": {"port": 9100}})
    assert {"name": "probe", "containerPort": 9100, "protocol": "TCP"} in container(moved.one("StatefulSet"))["ports"]
    assert configmap_env(moved)["FRAUD_PROBE_PORT"] == "9100"


def test_probes_follow_the_probe_scheme_not_the_api_tls():
    # TLS on the API port leaves the probe listener as probe.scheme says.
    c = container(render(ALL_SECRETS).one("StatefulSet"))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["scheme"] == "HTTP"
    c = container(render(ALL_SECRETS | {"probe": {"port": 8081, "scheme": "HTTPS"}}).one("StatefulSet"))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["scheme"] == "HTTPS"


def test_each_probe_is_overridable():
    c = container(render({"probes": {
        "liveness": {"periodSeconds": 30},
        "readiness": {"httpGet": {"path": "/readyz", "port": 9090}},
        "startup": {"httpGet": None, "tcpSocket": {"port": "http"}},
    }}).one("StatefulSet"))
    assert c["livenessProbe"]["periodSeconds"] == 30
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["port"] == 9090
    assert c["startupProbe"] == {"tcpSocket": {"port": "http"}, "periodSeconds": 2, "timeoutSeconds": 2,
                                 "failureThreshold": 30}


# --- pod hardening ----------------------------------------------------------------------------

def hardened(owner):
    pod = pod_spec(owner)
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in pod["containers"]:
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]


def test_every_pod_is_hardened():
    m = render({"loadgen": LOADGEN})
    owners = m.all("StatefulSet") + m.all("Job") + m.all("Pod")
    assert sorted(o["kind"] for o in owners) == ["Job", "Pod", "StatefulSet"]
    for owner in owners:
        hardened(owner)
    assert m.one("ServiceAccount")["automountServiceAccountToken"] is False


# --- StatefulSet, Services, disruption, placement ----------------------------------------------

def test_statefulset_keeps_state_per_pod_and_exposes_pvc_retention():
    spec = render({"persistence": {"retentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"}}}) \
        .one("StatefulSet")["spec"]
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Delete", "whenScaled": "Retain"}
    assert spec["volumeClaimTemplates"][0]["spec"]["accessModes"] == ["ReadWriteOnce"]


def test_without_persistence_state_is_an_emptydir():
    sts = render({"persistence": {"enabled": False}}).one("StatefulSet")
    assert "volumeClaimTemplates" not in sts["spec"]
    assert "persistentVolumeClaimRetentionPolicy" not in sts["spec"]
    state = next(v for v in pod_spec(sts)["volumes"] if v["name"] == "state")
    assert state["emptyDir"]["sizeLimit"] == "20Gi"


def test_headless_and_api_services_select_only_detector_pods():
    m = render({"loadgen": LOADGEN})
    sts = m.one("StatefulSet")
    services = {s["metadata"]["name"]: s for s in m.all("Service")}
    headless = services[sts["spec"]["serviceName"]]
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    api = next(s for s in services.values() if s is not headless)
    assert api["spec"]["type"] == "ClusterIP"
    pod_labels = sts["spec"]["template"]["metadata"]["labels"]
    loadgen_labels = m.one("Job")["spec"]["template"]["metadata"]["labels"]
    for svc in (headless, api):
        selector = svc["spec"]["selector"]
        assert selector.items() <= pod_labels.items()
        assert not selector.items() <= loadgen_labels.items()
        ports = {p["name"]: p for p in svc["spec"]["ports"]}
        assert ports["http"]["targetPort"] == "http"
        assert ports["probe"]["targetPort"] == "probe" and ports["probe"]["port"] == 8081


def test_pod_disruption_budget_is_on_and_selects_the_pods():
    m = render()
    pdb = m.one("PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == m.one("StatefulSet")["spec"]["selector"]["matchLabels"]
    assert render({"podDisruptionBudget": {"enabled": False}}).all("PodDisruptionBudget") == []


def test_soft_anti_affinity_and_topology_spread_by_default():
    pod = pod_spec(render().one("StatefulSet"))
    [term] = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    [spread] = pod["topologySpreadConstraints"]
    assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
    hard = pod_spec(render({"podAntiAffinity": "hard"}).one("StatefulSet"))
    assert "requiredDuringSchedulingIgnoredDuringExecution" in hard["affinity"]["podAntiAffinity"]
    none = pod_spec(render({"podAntiAffinity": "none", "topologySpread": {"enabled": False}}).one("StatefulSet"))
    assert "affinity" not in none and "topologySpreadConstraints" not in none


def test_standard_labels_on_every_object():
    m = render(files=["ci/production-values.yaml"])
    for obj in m:
        labels = obj["metadata"]["labels"]
        for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
                    "app.kubernetes.io/component", "app.kubernetes.io/managed-by", "helm.sh/chart"):
            assert key in labels, f"{obj['kind']}/{obj['metadata']['name']} lacks {key}"
        assert obj["metadata"]["namespace"] == "payments"


def test_long_release_names_keep_names_within_dns_limits():
    m = render({"loadgen": LOADGEN} | MONITORING, release="payments-production-eu-west-1-blue-green-canary-abcde")
    sts = m.one("StatefulSet")
    # StatefulSet pods carry controller-revision-hash=<name>-<10 chars>, at most 63.
    assert len(sts["metadata"]["name"]) + 11 <= 63
    for obj in m:
        assert len(obj["metadata"]["name"]) <= 63


# --- monitoring ---------------------------------------------------------------------------------

MONITORING = {"metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True},
                          "grafanaDashboard": {"enabled": True}}}


def test_monitoring_objects_need_the_prometheus_operator_api():
    assert {"ServiceMonitor", "PrometheusRule"} <= set(render(MONITORING).kinds())
    without = render(MONITORING, api_versions=())
    assert not {"ServiceMonitor", "PrometheusRule"} & set(without.kinds())
    assert "no monitoring.coreos.com/v1 API" in notes(MONITORING)


def test_service_monitor_scrapes_every_pod_through_the_headless_service():
    m = render(MONITORING)
    sm = m.one("ServiceMonitor")
    headless = next(s for s in m.all("Service") if s["spec"].get("clusterIP") == "None")
    api = next(s for s in m.all("Service") if s["spec"].get("clusterIP") != "None")
    selector = sm["spec"]["selector"]["matchLabels"]
    assert selector.items() <= headless["metadata"]["labels"].items()
    assert not selector.items() <= api["metadata"]["labels"].items()
    [endpoint] = sm["spec"]["endpoints"]
    assert endpoint["port"] == "probe" and endpoint["path"] == "/metrics" and endpoint["scheme"] == "http"
    assert "probe" in {p["name"] for p in headless["spec"]["ports"]}
    # TLS on the API port does not change how the probe listener is scraped; probe.scheme does.
    assert render(MONITORING | ALL_SECRETS).one("ServiceMonitor")["spec"]["endpoints"][0]["scheme"] == "http"
    https = render(MONITORING | {"probe": {"port": 8081, "scheme": "HTTPS"},
                                 "metrics": {"serviceMonitor": {"enabled": True, "tlsConfig": {"insecureSkipVerify": True}}}})
    [endpoint] = https.one("ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https" and endpoint["tlsConfig"] == {"insecureSkipVerify": True}


def test_prometheus_rule_has_the_four_alerts_on_known_metrics():
    rule = render(MONITORING).one("PrometheusRule")
    rules = rule["spec"]["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == [
        "FraudDetectorConsumerLagHigh", "FraudDetectorEventTimeLagHigh",
        "FraudDetectorLateDropRateHigh", "FraudDetectorRestoreStuck"]
    for r in rules:
        assert metric_names(r["expr"]) <= METRICS, r["expr"]
        assert 'service="fraud-fraud-detector-headless"' in r["expr"]
    late = next(r for r in rules if r["alert"] == "FraudDetectorLateDropRateHigh")
    assert 'outcome="late_dropped"' in late["expr"]
    off = render({"metrics": {"prometheusRule": {"enabled": True, "restoreStuck": {"enabled": False, "for": "1m",
                                                                                    "severity": "info"}}}})
    assert "FraudDetectorRestoreStuck" not in [r["alert"] for r in off.one("PrometheusRule")["spec"]["groups"][0]["rules"]]


def test_grafana_dashboard_covers_the_service_and_uses_known_metrics():
    m = render(MONITORING)
    cm = next(c for c in m.all("ConfigMap") if c["metadata"]["name"].endswith("-dashboard"))
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(cm["data"]["fraud-detector.json"])
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    used = set().union(*(metric_names(e) for e in exprs))
    assert used <= METRICS, used - METRICS
    # Throughput, alerts, lateness histogram, lag, state size, restore.
    assert {"fraud_records_total", "fraud_alerts_total", "fraud_event_lateness_seconds",
            "fraud_partition_offset_lag", "fraud_partition_event_time_lag_seconds", "fraud_state_bytes",
            "fraud_restore_progress_ratio"} <= used
    assert any(p["type"] == "heatmap" for p in dashboard["panels"])
    # The process_* families every exporter has: CPU, memory, descriptors.
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
            "process_max_fds"} <= {n for e in exprs for n in re.findall(r"\b(process_[a-z_]+)", e)}
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


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
