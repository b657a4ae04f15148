"""Render-and-assert tests of the chart's security defaults: the API token, TLS (an existing
Secret or cert-manager), and the load generator's guard on the production input topic. The
NetworkPolicy is in test_network_policy.py, the Pod Security profile in test_pod_security.py."""
import os

import yaml

from conftest import CHART, container, notes, pod_spec, render, render_error

NO_AUTH = {"api": {"auth": {"required": False}}, "secrets": {"apiToken": {"existingSecret": "", "key": "token"}}}
CERT_MANAGER = {"certManager": {"enabled": True, "issuerRef": {"name": "internal-ca", "kind": "ClusterIssuer",
                                                               "group": "cert-manager.io"}}}


def env_of(m):
    cm = next(c for c in m.all("ConfigMap") if not c["metadata"]["name"].endswith("-dashboard"))
    return cm["data"]


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
