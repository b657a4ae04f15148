"""Every pod template of every scenario against each rule of the Pod Security "restricted"
profile, and a check that the check itself catches violations."""
import glob
import os

import pytest

from conftest import CHART, pod_spec, render

SCENARIOS = [None] + sorted(os.path.relpath(p, CHART) for p in glob.glob(os.path.join(CHART, "ci", "*-values.yaml")))


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
