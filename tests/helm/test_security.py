"""Render-and-assert tests of the chart's security defaults: the NetworkPolicy, the API token,
TLS (an existing Secret or cert-manager), the Pod Security "restricted" profile, and the load
generator's guard on the production input topic."""
import glob
import os

import pytest
import yaml

from conftest import CHART, container, notes, pod_spec, render, render_error

SCENARIOS = [None] + sorted(os.path.relpath(p, CHART) for p in glob.glob(os.path.join(CHART, "ci", "*-values.yaml")))
NO_AUTH = {"api": {"auth": {"required": False}}, "secrets": {"apiToken": {"existingSecret": "", "key": "token"}}}
CERT_MANAGER = {"certManager": {"enabled": True, "issuerRef": {"name": "internal-ca", "kind": "ClusterIssuer",
                                                               "group": "cert-manager.io"}}}


def env_of(m):
    cm = next(c for c in m.all("ConfigMap") if not c["metadata"]["name"].endswith("-dashboard"))
    return cm["data"]


def matches(selector, labels):
    """Whether a LabelSelector (matchLabels and In/NotIn/Exists/DoesNotExist expressions) selects
    an object with these labels."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values", [])
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def admitted(policy, port, pod_labels, namespace, policy_namespace="payments", ip=None):
    """Whether the NetworkPolicy admits a connection to `port` from a pod (labels, namespace) or
    from an IP address, by the API's semantics: rules are ORed; within a rule, `from` peers are
    ORed and `ports` restrict it; a peer with a podSelector only means the policy's namespace."""
    import ipaddress

    for rule in policy["spec"].get("ingress") or []:
        ports = rule.get("ports")
        if ports is not None and not any(p.get("port") == port for p in ports):
            continue
        peers = rule.get("from")
        if peers is None:
            return True  # no `from`: everyone
        for peer in peers:
            if "ipBlock" in peer:
                if ip is not None and ipaddress.ip_address(ip) in ipaddress.ip_network(peer["ipBlock"]["cidr"]):
                    return True
                continue
            if ip is not None and pod_labels is None:
                continue
            ns_sel, pod_sel = peer.get("namespaceSelector"), peer.get("podSelector")
            ns_labels = {"kubernetes.io/metadata.name": namespace}
            ns_ok = matches(ns_sel, ns_labels) if ns_sel is not None else namespace == policy_namespace
            pod_ok = matches(pod_sel, pod_labels) if pod_sel is not None else True
            if ns_ok and pod_ok:
                return True
    return False


# --- NetworkPolicy ------------------------------------------------------------------------------

def test_network_policy_is_on_by_default_and_selects_only_detector_pods():
    m = render({"loadgen": {"enabled": True, "allowInputTopic": True}})
    np = m.one("NetworkPolicy")
    assert np["spec"]["policyTypes"] == ["Ingress"]
    sts_labels = m.one("StatefulSet")["spec"]["template"]["metadata"]["labels"]
    assert matches(np["spec"]["podSelector"], sts_labels)
    assert not matches(np["spec"]["podSelector"], m.one("Job")["spec"]["template"]["metadata"]["labels"])
    assert not matches(np["spec"]["podSelector"], m.one("Pod")["metadata"]["labels"])
    # Every rule names its ports and its sources: nothing is open to all.
    for rule in np["spec"]["ingress"]:
        assert rule.get("ports") and rule.get("from"), rule


def test_api_port_only_from_labelled_clients_in_the_release_namespace():
    m = render()
    np = m.one("NetworkPolicy")
    client = {"fraud-detector/client": "true", "app": "console"}
    assert admitted(np, 8080, client, "payments")
    assert not admitted(np, 8080, {"app": "console"}, "payments"), "unlabelled pod reaches the API"
    assert not admitted(np, 8080, client, "other"), "labelled pod of another namespace reaches the API"
    assert not admitted(np, 8080, {}, "monitoring"), "monitoring reaches the API"
    assert not admitted(np, 8080, m.one("Pod")["metadata"]["labels"], "payments"), "helm test pod reaches the API"
    assert not admitted(np, 8080, None, "payments", ip="10.0.0.5")
    # Another port of the pod is closed to everyone, labelled or not.
    assert not admitted(np, 9999, client, "payments")


def test_api_clients_from_named_namespaces_with_their_own_labels():
    # Helm merges maps with the defaults: null drops the default label.
    labels = {"fraud-detector/client": None, "team": "risk"}
    np = render({"networkPolicy": {"api": {"clientLabels": labels, "clientNamespaces": ["risk", "ops"]}}}) \
        .one("NetworkPolicy")
    assert admitted(np, 8080, {"team": "risk"}, "risk")
    assert admitted(np, 8080, {"team": "risk"}, "ops")
    assert not admitted(np, 8080, {"team": "risk"}, "payments"), "only the named namespaces"
    assert not admitted(np, 8080, {"fraud-detector/client": "true"}, "risk")


def test_probe_port_from_monitoring_nodes_and_the_helm_test_pod_only():
    m = render({"networkPolicy": {"probe": {"monitoringNamespaces": ["monitoring"], "nodeCidrs": ["10.0.0.0/20"]}}})
    np = m.one("NetworkPolicy")
    assert admitted(np, 8081, {"app.kubernetes.io/name": "prometheus"}, "monitoring")
    assert admitted(np, 8081, None, "kube-system", ip="10.0.3.7"), "kubelet on a node"
    assert admitted(np, 8081, m.one("Pod")["metadata"]["labels"], "payments"), "helm test pod"
    assert not admitted(np, 8081, None, "kube-system", ip="10.1.0.1")
    assert not admitted(np, 8081, {"fraud-detector/client": "true"}, "payments"), "API clients get no metrics"
    assert not admitted(np, 8081, {}, "default")
    # By default there is no node CIDR (most CNIs admit a pod's own node anyway).
    assert not any("ipBlock" in peer for rule in render().one("NetworkPolicy")["spec"]["ingress"]
                   for peer in rule["from"])


def test_network_policy_ports_follow_the_container_ports():
    m = render({"http": {"port": 9443}, "probe": {"port": 9100, "scheme": "HTTP"}})
    np = m.one("NetworkPolicy")
    ports = {p["name"]: p["containerPort"] for p in container(m.one("StatefulSet"))["ports"]}
    assert ports == {"http": 9443, "probe": 9100}
    assert admitted(np, 9443, {"fraud-detector/client": "true"}, "payments")
    assert admitted(np, 9100, {}, "monitoring")
    assert not admitted(np, 8080, {"fraud-detector/client": "true"}, "payments")


def test_egress_is_restricted_only_on_request_and_keeps_dns():
    assert "egress" not in render().one("NetworkPolicy")["spec"]
    rule = {"to": [{"ipBlock": {"cidr": "10.0.8.0/24"}}], "ports": [{"port": 9093, "protocol": "TCP"}]}
    np = render({"networkPolicy": {"egress": {"enabled": True, "to": [rule]}}}).one("NetworkPolicy")
    assert np["spec"]["policyTypes"] == ["Ingress", "Egress"]
    dns, brokers = np["spec"]["egress"]
    assert {(p["port"], p["protocol"]) for p in dns["ports"]} == {(53, "UDP"), (53, "TCP")}
    assert brokers == rule


def test_extra_ingress_rules_are_appended():
    extra = {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}],
             "ports": [{"port": 8080, "protocol": "TCP"}]}
    np = render({"networkPolicy": {"extraIngress": [extra]}}).one("NetworkPolicy")
    assert np["spec"]["ingress"][-1] == extra
    assert admitted(np, 8080, {}, "ingress-nginx")


def test_notes_say_who_the_network_policy_admits():
    text = notes({"networkPolicy": {"api": {"clientNamespaces": ["risk"]}, "probe": {"nodeCidrs": ["10.0.0.0/20"]}}})
    assert "to the API port (8080) only from pods labelled fraud-detector/client=true in namespace(s) risk" in text
    assert "to the probe port (8081) only from namespace(s) monitoring, the node CIDRs 10.0.0.0/20" in text


def test_network_policy_can_be_turned_off_with_a_warning():
    assert render({"networkPolicy": {"enabled": False}}).all("NetworkPolicy") == []
    assert "networkPolicy.enabled is false" in notes({"networkPolicy": {"enabled": False}})
    assert "networkPolicy.enabled is false" not in notes()


def test_schema_rejects_a_misspelt_network_policy_key():
    assert "additional properties 'enable'" in render_error({"networkPolicy": {"enable": False}})
    # No label at all would admit every pod of the namespace: refused.
    assert "clientLabels" in render_error({"networkPolicy": {"api": {"clientLabels": {"fraud-detector/client": None}}}})


def test_schema_rejects_bad_probe_and_security_values():
    assert "scheme" in render_error({"probe": {"port": 8081, "scheme": "h2c"}})
    assert "additional properties 'requred'" in render_error({"api": {"auth": {"requred": False}}})
    assert "additional properties 'issuer'" in render_error({"certManager": {"issuer": "x"}})
    assert "nodeCidrs" in render_error({"networkPolicy": {"probe": {"nodeCidrs": ["10.0.0.0"]}}})
    assert "clientNamespaces" in render_error({"networkPolicy": {"api": {"clientNamespaces": ["Not_A_Namespace"]}}})
    assert "allowInputTopic" in render_error({"loadgen": {"allowInputTopic": "yes"}})


# --- the API token ------------------------------------------------------------------------------

def test_token_is_required_by_default():
    m = render()
    env = env_of(m)
    assert env["FRAUD_API_TOKEN_FILE"] == "/etc/fraud-detector/api-token/token"
    volume = next(v for v in pod_spec(m.one("StatefulSet"))["volumes"] if v["name"] == "api-token")
    assert volume["secret"]["secretName"] == "fraud-detector-api-token"
    assert "optional" not in volume["secret"], "a missing token Secret must keep the pod from starting"


def test_no_token_secret_while_auth_is_required_is_refused():
    err = render_error({"secrets": {"apiToken": {"existingSecret": "", "key": "token"}}})
    assert "api.auth.required is true but secrets.apiToken.existingSecret is empty" in err
    assert "openssl rand -hex 32" in err and "api.auth.required=false" in err


def test_auth_off_on_purpose_renders_without_token_and_warns_loudly():
    m = render(NO_AUTH)
    assert "FRAUD_API_TOKEN_FILE" not in env_of(m)
    assert "api-token" not in {v["name"] for v in pod_spec(m.one("StatefulSet"))["volumes"]}
    text = notes(NO_AUTH)
    assert text.lstrip().startswith("#####")
    assert "WARNING: /v1/* HAS NO TOKEN" in text
    assert "no bearer token" in text
    assert "HAS NO TOKEN" not in notes()


def test_auth_off_with_a_token_still_uses_the_token():
    m = render({"api": {"auth": {"required": False}}})
    assert env_of(m)["FRAUD_API_TOKEN_FILE"].startswith("/etc/fraud-detector/api-token/")


# --- TLS ----------------------------------------------------------------------------------------

def test_tls_from_an_existing_secret():
    m = render({"secrets": {"tls": {"existingSecret": "api-tls", "certKey": "c.pem", "keyKey": "k.pem"}}})
    volume = next(v for v in pod_spec(m.one("StatefulSet"))["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == "api-tls"
    assert volume["secret"]["items"] == [{"key": "c.pem", "path": "tls.crt"}, {"key": "k.pem", "path": "tls.key"}]
    env = env_of(m)
    assert env["FRAUD_TLS_CERT_FILE"] == "/etc/fraud-detector/tls/tls.crt"
    assert env["FRAUD_PEER_URL_TEMPLATE"].startswith("https://")
    assert m.all("Certificate") == []


def test_tls_from_cert_manager():
    m = render(CERT_MANAGER | {"certManager": CERT_MANAGER["certManager"] | {"extraDnsNames": ["fraud.example.com"]}})
    cert = m.one("Certificate")
    assert cert["apiVersion"] == "cert-manager.io/v1"
    spec = cert["spec"]
    volume = next(v for v in pod_spec(m.one("StatefulSet"))["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == spec["secretName"] == "fraud-fraud-detector-tls"
    assert volume["secret"]["items"] == [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]
    assert spec["issuerRef"] == {"name": "internal-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    assert spec["privateKey"] == {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}
    assert "key encipherment" not in spec["usages"] and "server auth" in spec["usages"]
    # The names clients use: the Service, and each pod behind the headless Service (redirects).
    assert {"fraud-fraud-detector", "fraud-fraud-detector.payments.svc",
            "fraud-fraud-detector.payments.svc.cluster.local",
            "*.fraud-fraud-detector-headless.payments.svc.cluster.local", "fraud.example.com"} <= set(spec["dnsNames"])
    peer = env_of(m)["FRAUD_PEER_URL_TEMPLATE"]
    assert peer == "https://{member}.fraud-fraud-detector-headless.payments.svc.cluster.local:8080"
    # A pod's name in a redirect is covered by a wildcard of exactly one label.
    host = peer.split("//")[1].split(":")[0].replace("{member}", "fraud-fraud-detector-0")
    assert "*." + host.split(".", 1)[1] in spec["dnsNames"]
    assert "plain HTTP" not in notes(CERT_MANAGER, api_versions=("cert-manager.io/v1",))


def test_cert_manager_rsa_keys_get_key_encipherment():
    values = {"certManager": CERT_MANAGER["certManager"] | {"privateKey": {"algorithm": "RSA", "size": 3072}}}
    spec = render(values).one("Certificate")["spec"]
    assert spec["privateKey"]["size"] == 3072 and "key encipherment" in spec["usages"]


def test_cert_manager_misconfigurations_are_refused():
    both = CERT_MANAGER | {"secrets": {"tls": {"existingSecret": "api-tls", "certKey": "tls.crt", "keyKey": "tls.key"}}}
    assert "both give the API's certificate: choose one" in render_error(both)
    no_issuer = {"certManager": {"enabled": True, "issuerRef": {"name": "", "kind": "Issuer", "group": "cert-manager.io"}}}
    assert "needs certManager.issuerRef.name" in render_error(no_issuer)
    assert "needs the cert-manager.io/v1 API" in render_error(CERT_MANAGER, api_versions=())
    assert "issuerRef" in render_error({"certManager": {"enabled": True, "issuerRef": {"name": "x", "kind": "Vault",
                                                                                      "group": "cert-manager.io"}}})


# --- Pod Security "restricted" ------------------------------------------------------------------

ALLOWED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
                   "secret"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}


def restricted_violations(pod, where):
    """The checks of the Kubernetes Pod Security Standards, "restricted" profile (v1.30), which
    includes "baseline", applied to a pod spec; one message per violation."""
    out = []
    psc = pod.get("securityContext") or {}
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(host):
            out.append(f"{where}: {host}")
    for v in pod.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            out.append(f"{where}: volume {v['name']} of type {kinds - ALLOWED_VOLUMES}")
    for s in psc.get("sysctls") or []:
        if s["name"] not in SAFE_SYSCTLS:
            out.append(f"{where}: sysctl {s['name']}")
    if (psc.get("seLinuxOptions") or {}).get("type") not in (None, "", "container_t", "container_init_t", "container_kvm_t"):
        out.append(f"{where}: SELinux type")
    if (psc.get("appArmorProfile") or {}).get("type") == "Unconfined":
        out.append(f"{where}: AppArmor unconfined")
    if psc.get("runAsUser") == 0:
        out.append(f"{where}: pod runAsUser 0")
    containers = (pod.get("initContainers") or []) + pod["containers"] + (pod.get("ephemeralContainers") or [])
    for c in containers:
        sc = c.get("securityContext") or {}
        cw = f"{where}/{c['name']}"
        if sc.get("privileged"):
            out.append(f"{cw}: privileged")
        if (sc.get("windowsOptions") or {}).get("hostProcess") or (psc.get("windowsOptions") or {}).get("hostProcess"):
            out.append(f"{cw}: hostProcess")
        if sc.get("procMount") not in (None, "Default"):
            out.append(f"{cw}: procMount")
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                out.append(f"{cw}: hostPort")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{cw}: allowPrivilegeEscalation must be false")
        non_root = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
        if non_root is not True:
            out.append(f"{cw}: runAsNonRoot must be true")
        if sc.get("runAsUser") == 0:
            out.append(f"{cw}: runAsUser 0")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{cw}: seccompProfile {seccomp}")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append(f"{cw}: capabilities must drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append(f"{cw}: adds capabilities {caps.get('add')}")
        if (sc.get("seLinuxOptions") or {}).get("type") not in (None, "", "container_t", "container_init_t",
                                                                 "container_kvm_t"):
            out.append(f"{cw}: SELinux type")
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            out.append(f"{cw}: AppArmor unconfined")
        # Not part of the profile, but part of this chart's promise.
        if sc.get("readOnlyRootFilesystem") is not True:
            out.append(f"{cw}: readOnlyRootFilesystem must be true")
    return out


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s or "defaults")
def test_every_pod_meets_the_restricted_pod_security_profile(scenario):
    files = [scenario] if scenario else []
    m = render({"loadgen": {"enabled": True, "allowInputTopic": True}}, files=files)
    owners = m.all("StatefulSet") + m.all("Job") + m.all("Pod")
    assert {o["kind"] for o in owners} == {"StatefulSet", "Job", "Pod"}
    problems = []
    for owner in owners:
        problems += restricted_violations(pod_spec(owner), f"{owner['kind']}/{owner['metadata']['name']}")
    assert problems == []


def test_the_restricted_check_itself_catches_violations():
    # Each weakening of the defaults must be caught, or the test above proves nothing.
    weakened = [
        ({"containerSecurityContext": {"allowPrivilegeEscalation": True, "readOnlyRootFilesystem": True,
                                       "capabilities": {"drop": ["ALL"]}}}, "allowPrivilegeEscalation"),
        ({"containerSecurityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                       "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]}}}, "adds capabilities"),
        ({"containerSecurityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                       "capabilities": {"drop": ["NET_RAW"]}}}, "drop ALL"),
        ({"podSecurityContext": {"runAsNonRoot": False}}, "runAsNonRoot"),
        ({"podSecurityContext": {"seccompProfile": None}}, "seccompProfile"),
        ({"containerSecurityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": False,
                                       "capabilities": {"drop": ["ALL"]}}}, "readOnlyRootFilesystem"),
    ]
    for values, expected in weakened:
        pod = pod_spec(render(values).one("StatefulSet"))
        problems = restricted_violations(pod, "sts")
        assert any(expected in p for p in problems), (values, problems)
    host = {"spec": {"hostNetwork": True, "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
                     "containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 1}]}]}}
    problems = restricted_violations(host["spec"], "pod")
    assert any("hostNetwork" in p for p in problems) and any("hostPath" in p for p in problems)
    assert any("hostPort" in p for p in problems)


# --- the load generator -------------------------------------------------------------------------

def test_loadgen_refuses_the_input_topic_by_default():
    err = render_error({"loadgen": {"enabled": True}})
    assert 'loadgen.enabled would write synthetic transactions into kafka.inputTopic "transactions"' in err
    assert "loadgen.topic" in err and "loadgen.allowInputTopic=true" in err
    # Naming the input topic explicitly is the same thing.
    assert "would write synthetic transactions" in render_error(
        {"loadgen": {"enabled": True, "topic": "transactions"}})


def test_loadgen_to_another_topic_measures_no_latency():
    m = render({"loadgen": {"enabled": True, "topic": "transactions-synthetic"}})
    args = container(m.one("Job"))["args"]
    assert args[args.index("--topic") + 1] == "transactions-synthetic"
    assert "--no-latency" in args
    assert env_of(m)["FRAUD_INPUT_TOPIC"] == "transactions"
    assert 'to topic "transactions-synthetic"' in notes({"loadgen": {"enabled": True, "topic": "transactions-synthetic"}})


def test_loadgen_writes_the_input_topic_only_when_told():
    m = render({"loadgen": {"enabled": True, "allowInputTopic": True}, "kafka": {"inputTopic": "tx-staging"}})
    args = container(m.one("Job"))["args"]
    assert args[args.index("--topic") + 1] == "tx-staging"
    assert "--no-latency" not in args


def test_ci_loadgen_scenario_writes_a_test_topic():
    with open(os.path.join(CHART, "ci", "loadgen-values.yaml")) as f:
        values = yaml.safe_load(f)
    assert values["loadgen"]["allowInputTopic"] is True
    assert values["kafka"]["inputTopic"] != "transactions"
