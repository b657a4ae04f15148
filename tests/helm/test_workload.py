"""Render-and-assert tests of the pods: secrets by reference, probes, hardening, the StatefulSet,
its Services, disruption budget and placement, names and labels."""
import re

import yaml

from conftest import ALL_SECRETS, LOADGEN, MONITORING, configmap_env, container, pod_spec, render, render_error


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
