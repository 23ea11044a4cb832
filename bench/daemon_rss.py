"""The daemon's memory at scale: ``ksched run`` over 5,000 nodes and 50,000 bound pods as a
kubelet-managed cluster has them (node images and conditions, pods with managedFields,
probes, env, owner references), served by the in-process test API server.

Not a test: prints the time to ready and the daemon's RSS and peak RSS once synced.
Run: ``NODES=5000 PODS=50000 python bench/daemon_rss.py`` (about 3 minutes on 2 cores).
``WHERE=FILE``: the daemon runs under tracemalloc and, once synced, writes to FILE where
its memory is: the top allocation sites, and the live objects' count and (shallow) size
by type; tracemalloc's own cost makes that run's RSS higher than a plain one's.
"""

import collections
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import msgspec

from ksched.testing.apiserver import TestAPIServer


def node(i: int) -> dict:
    name = f"ip-10-0-{i // 250}-{i % 250}.ec2.internal"
    images = [
        {
            "names": [
                f"registry.example.com/team-{k}/service-{k}@sha256:{'%064x' % (k * 131)}",
                f"registry.example.com/team-{k}/service-{k}:v1.{k}",
            ],
            "sizeBytes": 100_000_000 + k * 1_000_003,
        }
        for k in ((i * 7 + j * 13) % 400 for j in range(40))
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"{i:08d}-1111-2222-3333-444455556666",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": f"us-east-1{'abc'[i % 3]}",
                "topology.kubernetes.io/region": "us-east-1",
                "node.kubernetes.io/instance-type": "m5.2xlarge",
                "eks.amazonaws.com/nodegroup": "workers",
                "karpenter.sh/capacity-type": "on-demand",
                "team": f"t{i % 10}",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": f"i-{i:017x}"}),
            },
        },
        "spec": {
            "providerID": f"aws:///us-east-1a/i-{i:017x}",
            "podCIDR": f"10.{i // 256}.{i % 256}.0/24",
        },
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "allocatable": {
                "cpu": "7910m",
                "memory": "31Gi",
                "pods": "110",
                "ephemeral-storage": "95Gi",
            },
            "conditions": [
                {
                    "type": t,
                    "status": "False" if t != "Ready" else "True",
                    "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "reason": f"Kubelet{t}",
                    "message": f"kubelet reports {t} fine",
                }
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{i // 250}.{i % 250}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "machineID": f"{i:032x}",
                "systemUUID": f"{i:032x}",
                "bootID": f"{i:032x}",
                "kernelVersion": "6.1.0",
                "osImage": "Amazon Linux 2023",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kubeletVersion": "v1.36.3",
                "kubeProxyVersion": "v1.36.3",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }


def pod(i: int, node_name: str) -> dict:
    """A Deployment-managed pod as the API server stores it: managedFields, owner, probes, env."""
    app = f"svc-{i % 200}"
    name = f"{app}-7d9f8b{i % 97:02d}c-{i:05x}"
    mf = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {
                    "f:generateName": {},
                    "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                    "f:ownerReferences": {".": {}, 'k:{"uid":"abc"}': {}},
                },
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"app"}': {
                            ".": {},
                            "f:env": {},
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:livenessProbe": {},
                            "f:name": {},
                            "f:ports": {},
                            "f:readinessProbe": {},
                            "f:resources": {},
                        }
                    },
                    "f:dnsPolicy": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                },
            },
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "subresource": "status",
            "fieldsV1": {
                "f:status": {
                    "f:conditions": {
                        'k:{"type":"Ready"}': {
                            ".": {},
                            "f:lastProbeTime": {},
                            "f:status": {},
                            "f:type": {},
                        }
                    },
                    "f:containerStatuses": {},
                    "f:hostIP": {},
                    "f:phase": {},
                    "f:podIP": {},
                    "f:podIPs": {},
                    "f:startTime": {},
                }
            },
        },
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": f"team-{i % 20}",
            "uid": f"{i:08x}-aaaa-bbbb-cccc-dddddddddddd",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "generateName": f"{app}-7d9f8b{i % 97:02d}c-",
            "labels": {
                "app": app,
                "pod-template-hash": f"7d9f8b{i % 97:02d}c",
                "team": f"t{i % 20}",
                "version": "v3",
            },
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z",
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-7d9f8b{i % 97:02d}c",
                    "uid": "abc",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": mf,
        },
        "spec": {
            "nodeName": node_name,
            "schedulerName": "default-scheduler",
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "priority": 0,
            "enableServiceLinks": True,
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "volumes": [
                {
                    "name": "kube-api-access-x",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                }
            ],
            "containers": [
                {
                    "name": "app",
                    "image": f"registry.example.com/team-{i % 20}/{app}:v1.{i % 9}",
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [
                        {"containerPort": 8080, "protocol": "TCP", "name": "http"},
                        {"containerPort": 9090, "protocol": "TCP", "name": "metrics"},
                    ],
                    "env": [{"name": f"ENV_{k}", "value": f"value-{k}-{i % 13}"} for k in range(8)],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"cpu": "500m", "memory": "512Mi"},
                    },
                    "livenessProbe": {
                        "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                        "periodSeconds": 10,
                        "timeoutSeconds": 1,
                        "successThreshold": 1,
                        "failureThreshold": 3,
                    },
                    "readinessProbe": {
                        "httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
                        "periodSeconds": 5,
                        "timeoutSeconds": 1,
                        "successThreshold": 1,
                        "failureThreshold": 3,
                    },
                    "volumeMounts": [
                        {
                            "name": "kube-api-access-x",
                            "readOnly": True,
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        }
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ],
        },
        "status": {
            "phase": "Running",
            "hostIP": "10.0.0.1",
            "podIP": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}",
            "qosClass": "Burstable",
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": True,
                    "restartCount": 0,
                    "image": f"registry.example.com/team-{i % 20}/{app}:v1.{i % 9}",
                    "imageID": "registry.example.com/x@sha256:" + f"{i:064x}",
                    "containerID": "containerd://" + f"{i:064x}",
                    "started": True,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
            ],
        },
    }


def _status_mb(pid: int, key: str) -> float:
    with open(f"/proc/{pid}/status") as f:
        return int(f.read().split(key + ":")[1].split()[0]) / 1024


def where(out: str) -> None:
    """Write the top allocation sites and the live objects by type to ``out``."""
    import tracemalloc

    snap = tracemalloc.take_snapshot()
    tracemalloc.stop()  # the census below need not be traced (much faster)
    lines = [f"traced {sum(s.size for s in snap.statistics('filename')) / 1e6:.0f} MB"]
    lines += ["", "top files:"]
    lines += [str(s) for s in snap.statistics("filename")[:15]]
    lines += ["", "top lines:"]
    lines += [str(s) for s in snap.statistics("lineno")[:40]]
    del snap  # its traces would count as live tuples
    gc.unfreeze()  # the daemon froze what it synced; get_objects leaves frozen ones out
    count: collections.Counter[str] = collections.Counter()
    size: collections.Counter[str] = collections.Counter()
    # everything reachable from the gc-tracked objects: msgspec Structs (often untracked,
    # gc=False) by their fields, containers by their items, the rest as gc sees them
    seen: set[int] = set()
    todo = list(gc.get_objects())
    # not this census's own structures (nor, through them, the ids it collects)
    seen.update((id(seen), id(todo), id(count), id(size)))
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        t = type(x)
        count[t.__qualname__] += 1
        # msgspec.Raw's __sizeof__ is garbage: its length (the bytes it keeps) instead
        size[t.__qualname__] += len(x) if t is msgspec.Raw else sys.getsizeof(x)
        if isinstance(x, type | str | bytes | int | float):
            continue
        fields = getattr(t, "__struct_fields__", None)
        if fields is not None:
            todo.extend(getattr(x, f) for f in fields)
        elif isinstance(x, dict):
            todo.extend(x.keys())
            todo.extend(x.values())
        else:
            todo.extend(gc.get_referents(x))
    lines += ["", "live objects by type (count, shallow MB):"]
    lines += [f"{t:40} {count[t]:>10} {size[t] / 1e6:>9.1f}" for t, _ in size.most_common(40)]
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(out + ".tmp", out)  # whole, once there


def daemon(argv: list[str]) -> None:
    """``ksched run`` under tracemalloc, writing ``where`` to $WHERE on SIGUSR1."""
    import tracemalloc

    tracemalloc.start()
    signal.signal(signal.SIGUSR1, lambda *_: where(os.environ["WHERE"]))
    from ksched.cli import main as ksched_main

    sys.exit(ksched_main(argv))


def main() -> None:
    nodes, pods = int(os.environ.get("NODES", 5000)), int(os.environ.get("PODS", 50000))
    srv = TestAPIServer("127.0.0.1", 0, history=10)
    with srv.run_in_thread(), tempfile.TemporaryDirectory() as d:
        t = time.time()
        for k in range(20):
            srv.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{k}"}})
        names = []
        for i in range(nodes):
            n = node(i)
            srv.create(n)
            names.append(n["metadata"]["name"])
        for i in range(pods):
            p = pod(i, names[i % nodes])
            srv.create(p, p["metadata"]["namespace"])
        print(f"{nodes} nodes, {pods} pods seeded in {time.time() - t:.0f}s", flush=True)
        kubeconfig = srv.write_kubeconfig(os.path.join(d, "kubeconfig"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        traced = os.environ.get("WHERE")
        run = [__file__, "--daemon"] if traced else ["-m", "ksched"]
        cmd = [sys.executable, *run, "run", "--kubeconfig", str(kubeconfig)]
        cmd += ["--no-leader-elect", "--secure-port", "0", "--port", str(port)]
        with open(os.path.join(d, "log"), "w") as log:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        try:
            t = time.time()
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5):
                        break
                except OSError:
                    if proc.poll() is not None:
                        with open(os.path.join(d, "log")) as f:
                            sys.exit(f.read()[-2000:])
                    time.sleep(0.5)
            print(f"ready in {time.time() - t:.0f}s", flush=True)
            time.sleep(5)
            rss, peak = _status_mb(proc.pid, "VmRSS"), _status_mb(proc.pid, "VmHWM")
            print(f"RSS {rss:.0f} MB, peak {peak:.0f} MB", flush=True)
            if traced:
                os.kill(proc.pid, signal.SIGUSR1)
                while not os.path.exists(traced):
                    time.sleep(1)
                print(f"where the memory is: {traced}", flush=True)
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--daemon"]:
        daemon(sys.argv[2:])
    else:
        main()
