"""The example Grafana dashboard (deploy/grafana/strata.json) is a valid dashboard on a
Prometheus data-source variable, and every metric its panels' expressions name is one the
endpoint really serves: a leader with the write-back tier and a replica are scraped, so the
replica-only and tier-only series count too."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest

from harness import free_port, redis_is_strata
from replication_helpers import wait_for

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "strata.json"
METRIC = re.compile(r"\b(?:redis|strata)_[A-Za-z0-9_]+")


def load() -> dict:
    return json.loads(DASHBOARD.read_text())


def expressions(dash: dict) -> list[tuple[str, str]]:
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    return out


def test_dashboard_is_valid_and_uses_a_prometheus_datasource_variable():
    dash = load()
    assert dash["title"] and dash["uid"] and dash["schemaVersion"] >= 30
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, p["title"]
        assert p["targets"], p["title"]
    titles = {p["title"] for p in dash["panels"]}
    for wanted in ("Ops/s by command", "Latency percentiles by command", "Clients", "Keys per database",
                   "Memory", "Replication lag (seconds)", "Block cache hit rate",
                   "Pending compaction bytes", "Write stalls"):
        assert wanted in titles, wanted


def _served_names(port: int) -> set[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            names.add(name)
            if kind == "histogram":
                names.update({name + "_bucket", name + "_sum", name + "_count"})
            if kind == "summary":
                names.update({name + "_sum", name + "_count"})
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


@pytest.mark.skipif(redis_is_strata(), reason="a Strata endpoint (redis-server has none)")
def test_every_panel_names_metrics_the_endpoint_serves(start_strata):
    leader_port, replica_port = free_port(), free_port()
    leader = start_strata(**{"metrics-port": str(leader_port), "memory-tier": "write-back"})
    replica = start_strata(**{"metrics-port": str(replica_port), "replicaof": f"127.0.0.1 {leader.port}"})
    leader.client().set("k", "v")
    wait_for("the replica to attach", lambda: leader.client().info("replication")["connected_slaves"] == 1, 20)
    served = _served_names(leader_port) | _served_names(replica_port)
    missing = []
    for title, expr in expressions(load()):
        for name in METRIC.findall(expr):
            if name not in served:
                missing.append((title, name))
    assert not missing, missing
    assert replica.running
