"""How long ``simulate --cluster`` takes to load a big dump (default: 5000 nodes, 50k pods).

Not a test: writes a dump shaped like ``ksched snapshot`` / ``kubectl get -o json`` output
(full pod objects: status, container statuses, tolerations, volumes, owner references)
as JSON and as YAML, then times ``load_cluster`` on each (parse + decode into the
scheduler's objects), best of ``--repeat`` runs.

Run: ``python bench/cluster_load.py [--nodes N] [--pods N] [--repeat N] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from ksched.sim.cluster_file import load_cluster

TS = "2026-11-01T10:00:00Z"


def node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    alloc = {"cpu": "15890m", "memory": "62Gi", "pods": "110", "ephemeral-storage": "95Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "creationTimestamp": TS,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "m5.4xlarge",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
                "topology.kubernetes.io/region": "region-1",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": f"10.{i // 256}.{i % 256}.0/24", "providerID": f"aws:///{name}"},
        "status": {
            "capacity": {**alloc, "cpu": "16", "memory": "64Gi"},
            "allocatable": alloc,
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t == "Ready" else "False",
                    "lastHeartbeatTime": TS,
                    "lastTransitionTime": TS,
                    "reason": f"Kubelet{t}",
                    "message": f"kubelet reports {t}",
                }
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{i // 256}.{i % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.36.3",
                "osImage": "Ubuntu 24.04 LTS",
                "containerRuntimeVersion": "containerd://2.0.0",
                "kernelVersion": "6.8.0",
                "architecture": "amd64",
                "operatingSystem": "linux",
            },
            "images": [
                {"names": [f"registry.example.com/app-{k}:1.{k}"], "sizeBytes": 50_000_000 + k}
                for k in range(5)
            ],
        },
    }


def pod(i: int, nodes: int, pending: bool) -> dict[str, Any]:
    app = f"app-{i % 200}"
    name = f"{app}-{i:06d}"
    node_name = f"node-{i % nodes:05d}"
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": f"registry.example.com/{app}:1.{i % 5}",
                "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
                "env": [{"name": "APP", "value": app}, {"name": "LOG_LEVEL", "value": "info"}],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "128Mi"},
                    "limits": {"memory": "256Mi"},
                },
                "volumeMounts": [
                    {
                        "name": "kube-api-access",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "readOnly": True,
                    }
                ],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {
                "key": f"node.kubernetes.io/{k}",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
            for k in ("not-ready", "unreachable")
        ],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "volumes": [
            {
                "name": "kube-api-access",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt"}},
                    ],
                    "defaultMode": 420,
                },
            }
        ],
    }
    status: dict[str, Any] = {"phase": "Pending", "qosClass": "Burstable"}
    if not pending:
        spec["nodeName"] = node_name
        status.update(
            phase="Running",
            hostIP=f"10.0.{(i % nodes) // 256}.{i % 256}",
            podIP=f"10.{i // 65536}.{(i // 256) % 256}.{i % 256}",
            startTime=TS,
            conditions=[
                {"type": t, "status": "True", "lastTransitionTime": TS}
                for t in (
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],
            containerStatuses=[
                {
                    "name": "main",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "image": f"registry.example.com/{app}:1.{i % 5}",
                    "imageID": f"registry.example.com/{app}@sha256:{i:064x}",
                    "containerID": f"containerd://{i:064x}",
                    "state": {"running": {"startedAt": TS}},
                }
            ],
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{app}-",
            "namespace": f"ns-{i % 20}",
            "uid": f"10000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(100_000 + i),
            "creationTimestamp": TS,
            "labels": {"app": app, "pod-template-hash": "5d8f7c9b6", "tier": "backend"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-5d8f7c9b6",
                    "uid": f"20000000-0000-0000-0000-{i % 200:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def dump(nodes: int, pods: int, pending: int) -> dict[str, Any]:
    items = [node(i) for i in range(nodes)]
    items += [pod(i, nodes, i >= pods - pending) for i in range(pods)]
    return {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}


def best(path: Path, repeat: int) -> tuple[float, float]:
    """Best wall-clock and CPU seconds (CPU time is the steadier figure on a busy host)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        cf = load_cluster(str(path))
        times.append((time.perf_counter() - t0, time.process_time() - c0))
        del cf
    return min(t for t, _ in times), min(c for _, c in times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50_000)
    ap.add_argument("--pending", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="write the dumps here (default: a temporary directory)")
    ap.add_argument("--formats", default="json,yaml")
    args = ap.parse_args()
    doc = dump(args.nodes, args.pods, args.pending)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.keep or tmp)
        out.mkdir(parents=True, exist_ok=True)
        for fmt in args.formats.split(","):
            path = out / f"cluster.{fmt}"
            if fmt == "json":
                path.write_text(json.dumps(doc))
            else:
                dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
                path.write_text(yaml.dump(doc, Dumper=dumper))
            mb = path.stat().st_size / 1e6
            secs, cpu = best(path, args.repeat)
            print(
                f"{fmt:>4}: {args.nodes} nodes, {args.pods} pods, {mb:.0f} MB: "
                f"load_cluster {secs:.2f} s wall, {cpu:.2f} s CPU (best of {args.repeat})"
            )


if __name__ == "__main__":
    main()
