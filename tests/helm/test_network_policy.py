"""Render-and-assert tests of the NetworkPolicy: who it admits to which port, evaluated with
the Kubernetes API's semantics."""
from conftest import container, notes, render, render_error

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
