"""kubectl (a client nobody here wrote) against the test API server."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ksched.testing import TestAPIServer

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")

MANIFEST = """\
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels:
    zone: a
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions:
  - {type: Ready, status: "True"}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: c
    image: nginx
"""

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def kubectl(apiserver: TestAPIServer, tmp_path: Path) -> Kubectl:
    config = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    base = [
        "kubectl",
        "--kubeconfig",
        str(config),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--request-timeout=10s",
    ]

    def run(
        *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*base, *args], capture_output=True, text=True, timeout=30, input=stdin
        )
        if check:
            assert proc.returncode == 0, proc.stderr
        return proc

    return run


def test_create_get_label_patch_delete(
    kubectl: Kubectl, apiserver: TestAPIServer, tmp_path: Path
) -> None:
    manifest = tmp_path / "objs.yaml"
    manifest.write_text(MANIFEST)
    created = kubectl("create", "-f", str(manifest))
    assert "node/node-a created" in created.stdout and "pod/web created" in created.stdout

    pods = json.loads(kubectl("get", "pods", "-o", "json").stdout)
    (web,) = pods["items"]
    assert web["metadata"]["name"] == "web" and web["spec"]["schedulerName"] == "default-scheduler"

    nodes = kubectl("get", "nodes").stdout.splitlines()
    assert nodes[0].split()[:2] == ["NAME", "STATUS"]
    assert nodes[1].split()[:2] == ["node-a", "Ready"]
    wide = kubectl("get", "pods", "-o", "wide").stdout
    assert "NODE" in wide and "Pending" in wide

    kubectl("label", "pod", "web", "tier=front")
    kubectl("patch", "pod", "web", "--type=merge", "-p", '{"metadata":{"annotations":{"a":"b"}}}')
    kubectl("patch", "pod", "web", "-p", '{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}')
    stored = apiserver.get("pods", "default", "web")
    assert stored["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert stored["metadata"]["annotations"] == {"a": "b"}
    assert stored["spec"]["containers"] == [{"name": "c", "image": "nginx:2"}]

    kubectl(
        "patch",
        "node",
        "node-a",
        "--subresource=status",
        "-p",
        '{"status":{"conditions":[{"type":"Ready","status":"False"}]}}',
    )
    assert "NotReady" in kubectl("get", "node", "node-a").stdout

    jsonpath = kubectl(
        "get", "pods", "-l", "tier=front", "-o", "jsonpath={.items[*].metadata.name}"
    )
    assert jsonpath.stdout == "web"

    refused = kubectl("create", "-f", str(manifest), check=False)
    assert refused.returncode != 0 and "AlreadyExists" in refused.stderr

    assert 'pod "web" deleted' in kubectl("delete", "pod", "web").stdout
    assert apiserver.try_get("pods", "default", "web") is None
    missing = kubectl("get", "pod", "web", check=False)
    assert missing.returncode != 0 and 'pods "web" not found' in missing.stderr


def test_apply_and_events(kubectl: Kubectl, apiserver: TestAPIServer) -> None:
    applied = kubectl("apply", "-f", "-", stdin=MANIFEST)
    assert "pod/web created" in applied.stdout
    again = kubectl("apply", "-f", "-", stdin=MANIFEST.replace("image: nginx", "image: nginx:3"))
    assert "pod/web configured" in again.stdout
    assert apiserver.get("pods", "default", "web")["spec"]["containers"][0]["image"] == "nginx:3"
    apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
            "reason": "Scheduled",
            "message": "assigned",
            "type": "Normal",
        }
    )
    events = json.loads(kubectl("get", "events", "-o", "json").stdout)
    assert [e["reason"] for e in events["items"]] == ["Scheduled"]


def test_get_pods_watch(kubectl: Kubectl, apiserver: TestAPIServer, tmp_path: Path) -> None:
    apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
    )
    config = apiserver.write_kubeconfig(tmp_path / "kc-watch")
    proc = subprocess.Popen(
        [
            "kubectl",
            "--kubeconfig",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache2"),
            "get",
            "pods",
            "--watch",
            "--output-watch-events",
            "--request-timeout=20s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        header = proc.stdout.readline()
        assert header.split()[:2] == ["EVENT", "NAME"]
        assert proc.stdout.readline().split()[:2] == ["ADDED", "a"]
        apiserver.wait_for_watchers(1, "pods")
        apiserver.bind("default", "a", "node-a")
        assert proc.stdout.readline().split()[:2] == ["MODIFIED", "a"]
        apiserver.delete("pods", "default", "a")
        assert proc.stdout.readline().split()[:2] == ["DELETED", "a"]
        apiserver.faults.drop_watches()  # kubectl ends when the server closes the watch
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


WORKLOADS = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {port: 80, targetPort: 8080}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: c, image: nginx}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - {name: c, image: postgres}
---
apiVersion: v1
kind: ReplicationController
metadata:
  name: old
spec:
  selector: {app: old}
  template:
    metadata:
      labels: {app: old}
    spec:
      containers:
      - {name: c, image: nginx}
"""


def test_apply_and_get_workloads_by_short_name(kubectl: Kubectl, apiserver: TestAPIServer) -> None:
    applied = kubectl("apply", "-f", "-", stdin=WORKLOADS).stdout
    for ref in ("service/web", "replicaset.apps/web", "statefulset.apps/db"):
        assert f"{ref} created" in applied
    assert "replicationcontroller/old created" in applied
    names = kubectl("get", "svc,rs,sts,rc", "-o", "name").stdout.split()
    assert names == [
        "service/web",
        "replicaset.apps/web",
        "statefulset.apps/db",
        "replicationcontroller/old",
    ]
    kubectl("apply", "-f", "-", stdin=WORKLOADS.replace("replicas: 2", "replicas: 4"))
    rs = apiserver.get("replicasets", "default", "web")
    assert rs["spec"]["replicas"] == 4 and rs["metadata"]["generation"] == 2
    assert 'service "web" deleted' in kubectl("delete", "svc", "web").stdout
    assert apiserver.try_get("services", "default", "web") is None


STORAGE = """\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-1
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  resources:
    requests: {storage: 10Gi}
"""


def test_apply_and_get_storage_by_short_name(kubectl: Kubectl, apiserver: TestAPIServer) -> None:
    applied = kubectl("apply", "-f", "-", stdin=STORAGE).stdout
    for ref in ("storageclass.storage.k8s.io/fast", "persistentvolume/pv-1"):
        assert f"{ref} created" in applied
    assert kubectl("get", "pvc", "-o", "name").stdout.split() == ["persistentvolumeclaim/data"]
    names = kubectl("get", "pv,sc", "-o", "name").stdout.split()
    assert names == ["persistentvolume/pv-1", "storageclass.storage.k8s.io/fast"]
    # what VolumeBinding does to a claim it picks a node for
    kubectl("annotate", "pvc", "data", "volume.kubernetes.io/selected-node=n1")
    pvc = apiserver.get("persistentvolumeclaims", "default", "data")
    assert pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "n1"
    assert pvc["status"]["phase"] == "Pending"
    assert 'persistentvolumeclaim "data" deleted' in kubectl("delete", "pvc", "data").stdout
