"""Render-and-assert tests of the monitoring objects: the ServiceMonitor, the PrometheusRule and
the Grafana dashboard, against the metrics the service registers."""
import glob
import json
import os
import re

from conftest import ALL_SECRETS, MONITORING, REPO, notes, render, render_text


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


# --- monitoring ---------------------------------------------------------------------------------

def test_monitoring_objects_need_the_prometheus_operator_api():
    assert {"ServiceMonitor", "PrometheusRule"} <= set(render(MONITORING).kinds())
    without = render(MONITORING, api_versions=())
    assert not {"ServiceMonitor", "PrometheusRule"} & set(without.kinds())
    assert "no monitoring.coreos.com/v1 API" in notes(MONITORING)


def test_a_monitoring_object_requested_but_skipped_says_so_in_the_rendered_output():
    # helm template prints no NOTES.txt: the skipped objects leave a comment in their place.
    skipped = render_text(MONITORING, api_versions=())
    assert "no ServiceMonitor. To render it offline: helm template" in skipped
    assert "no PrometheusRule. To render it offline: helm template" in skipped
    assert "--api-versions monitoring.coreos.com/v1" in skipped
    assert "no ServiceMonitor" not in render_text(MONITORING)
    assert "no ServiceMonitor" not in render_text({}, api_versions=())


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


def test_prometheus_rule_has_the_five_alerts_on_known_metrics():
    rule = render(MONITORING).one("PrometheusRule")
    rules = rule["spec"]["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == [
        "FraudDetectorConsumerLagHigh", "FraudDetectorEventTimeLagHigh",
        "FraudDetectorLateDropRateHigh", "FraudDetectorRestoreStuck",
        "FraudDetectorMisroutedRecords"]
    for r in rules:
        assert metric_names(r["expr"]) <= METRICS, r["expr"]
        assert 'service="fraud-fraud-detector-headless"' in r["expr"]
    late = next(r for r in rules if r["alert"] == "FraudDetectorLateDropRateHigh")
    assert 'outcome="late_dropped"' in late["expr"]
    off = render({"metrics": {"prometheusRule": {"enabled": True, "restoreStuck": {"enabled": False, "for": "1m",
                                                                                    "severity": "info"}}}})
    assert "FraudDetectorRestoreStuck" not in [r["alert"] for r in off.one("PrometheusRule")["spec"]["groups"][0]["rules"]]


def test_misrouted_records_alert_per_topic_partition_over_its_window():
    def misrouted(values):
        rules = render(values).one("PrometheusRule")["spec"]["groups"][0]["rules"]
        return [r for r in rules if r["alert"] == "FraudDetectorMisroutedRecords"]

    [rule] = misrouted(MONITORING)
    assert metric_names(rule["expr"]) == {"fraud_misrouted_records_total"}
    assert rule["expr"].startswith("sum by (namespace, service, topic, partition) (increase(")
    assert "[15m]" in rule["expr"] and rule["expr"].endswith("> 0")
    assert rule["for"] == "0m" and rule["labels"]["severity"] == "warning"
    assert "crc32 partitioner" in rule["annotations"]["description"]
    [java] = misrouted({"kafka": {"partitioner": "murmur2"},
                        "metrics": {"prometheusRule": {"enabled": True, "misroutedRecords": {
                            "enabled": True, "window": "1h", "for": "5m", "severity": "critical"}}}})
    assert "[1h]" in java["expr"] and java["for"] == "5m" and java["labels"]["severity"] == "critical"
    assert "murmur2 partitioner" in java["annotations"]["description"]
    assert not misrouted({"metrics": {"prometheusRule": {"enabled": True, "misroutedRecords": {
        "enabled": False, "for": "0m", "severity": "warning"}}}})


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
