"""Renders the chart with chosen values for the tests in this folder.

HELM names the helm binary (scripts/chart-check sets it; default: `helm` on PATH) and
KUBE_VERSION the Kubernetes version rendered for (default 1.30.0).
"""
import atexit
import functools
import os
import shutil
import subprocess
import tempfile

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHART = os.path.join(REPO, "helm", "fraud-detector")
HELM = os.environ.get("HELM", "helm")
KUBE_VERSION = os.environ.get("KUBE_VERSION", "1.30.0")
CRD_APIS = ("monitoring.coreos.com/v1", "keda.sh/v1alpha1", "cert-manager.io/v1")


class RenderError(Exception):
    pass


class Manifests(list):
    """The rendered objects, with look-ups by kind."""

    def all(self, kind):
        return [d for d in self if d["kind"] == kind]

    def one(self, kind):
        found = self.all(kind)
        assert len(found) == 1, f"expected one {kind}, found {len(found)}"
        return found[0]

    def kinds(self):
        return sorted(d["kind"] for d in self)


def _helm(args, values, files, chart=CHART):
    cmd = [HELM, *args, chart, "--kube-version", KUBE_VERSION]
    for f in files:
        cmd += ["-f", os.path.join(CHART, f)]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as vf:
        yaml.safe_dump(values or {}, vf)
        vf.flush()
        cmd += ["-f", vf.name]
        return subprocess.run(cmd, capture_output=True, text=True)


def render(values=None, files=(), api_versions=CRD_APIS, release="fraud", namespace="payments"):
    """`helm template` with the values (a dict, applied last) and values files (relative to
    the chart); raises RenderError with helm's message when rendering fails."""
    args = ["template", release, "--namespace", namespace]
    for api in api_versions:
        args += ["--api-versions", api]
    proc = _helm(args, values, files)
    if proc.returncode != 0:
        raise RenderError(proc.stderr.strip())
    return Manifests(d for d in yaml.safe_load_all(proc.stdout) if d)


def render_text(values=None, files=(), api_versions=CRD_APIS):
    """What `helm template` prints, comments included (render() parses them away)."""
    args = ["template", "fraud", "--namespace", "payments"]
    for api in api_versions:
        args += ["--api-versions", api]
    proc = _helm(args, values, files)
    if proc.returncode != 0:
        raise RenderError(proc.stderr.strip())
    return proc.stdout


def render_error(values=None, files=(), **kw):
    """The error message of a render that must fail."""
    with pytest.raises(RenderError) as err:
        render(values, files, **kw)
    return str(err.value)


NOTES_PROBE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: notes-under-test
data:
  notes: {{ tpl (.Files.Get "notes-under-test.txt") . | quote }}
"""


@functools.lru_cache(maxsize=1)
def _chart_with_notes_probe():
    # `helm template` never renders NOTES.txt and `helm install --dry-run` needs a cluster, so
    # a copy of the chart renders it through tpl into a ConfigMap.
    base = tempfile.mkdtemp(prefix="chart-notes-")
    atexit.register(shutil.rmtree, base, ignore_errors=True)  # no folder left in /tmp
    copy = os.path.join(base, "fraud-detector")
    shutil.copytree(CHART, copy)
    shutil.copy(os.path.join(CHART, "templates", "NOTES.txt"), os.path.join(copy, "notes-under-test.txt"))
    with open(os.path.join(copy, "templates", "zz-notes-under-test.yaml"), "w") as f:
        f.write(NOTES_PROBE)
    return copy


def notes(values=None, files=(), api_versions=()):
    """The text of NOTES.txt for these values."""
    args = ["template", "fraud", "--namespace", "payments", "--show-only", "templates/zz-notes-under-test.yaml"]
    for api in api_versions:
        args += ["--api-versions", api]
    proc = _helm(args, values, files, chart=_chart_with_notes_probe())
    if proc.returncode != 0:
        raise RenderError(proc.stderr.strip())
    return yaml.safe_load(proc.stdout)["data"]["notes"]


def container(pod_owner, name=None):
    spec = pod_owner["spec"]
    pod = spec["template"]["spec"] if "template" in spec else spec
    containers = pod["containers"]
    if name is None:
        assert len(containers) == 1
        return containers[0]
    return next(c for c in containers if c["name"] == name)


def pod_spec(owner):
    spec = owner["spec"]
    return spec["template"]["spec"] if "template" in spec else spec



# Values the tests of several files render with.
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

MONITORING = {"metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True},
                          "grafanaDashboard": {"enabled": True}}}


def configmap_env(m):
    return m.one("ConfigMap")["data"] if len(m.all("ConfigMap")) == 1 else next(
        c for c in m.all("ConfigMap") if not c["metadata"]["name"].endswith("-dashboard"))["data"]
