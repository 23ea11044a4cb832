"""envtest for ksched: the real etcd + kube-apiserver (optionally kube-controller-manager
and kube-scheduler) built from upstream Go modules, on loopback ports, for tests and for a
person who wants a throw-away cluster in one command.

Identities (``--token-auth-file``): ``admin`` (group ``system:masters``) and
``system:kube-scheduler``, which has exactly the stock bootstrap RBAC kube-apiserver
creates for kube-scheduler, so a test run with it finds any permission ksched needs beyond
what kube-scheduler's own role grants.

No kubelet runs. Two consequences are handled here instead of by one:

* kube-apiserver's ``TaintNodesByCondition`` admission taints every new Node
  ``node.kubernetes.io/not-ready:NoSchedule`` for the kubelet to clear; it is disabled, and
  no node lifecycle controller runs, so Node objects created through the API stay
  schedulable as created;
* a deleted pod bound to a node stays Terminating until its kubelet finishes it; a small
  reaper (``PodReaper``, kwok's role) force-deletes such pods, so preemption victims go.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from ...features import FeatureGates
from ._build import (
    ASSETS_ENV,
    BINARIES,
    DEFAULT_VERSION,
    Assets,
    BuildError,
    build,
    find_assets,
)
from ._pki import ClientCA
from ._process import Component, ControlPlaneError, free_port, wait_until
from ._proxy import TCPProxy
from ._reaper import PodReaper

__all__ = [
    "ASSETS_ENV",
    "BINARIES",
    "DEFAULT_VERSION",
    "Assets",
    "BuildError",
    "ControlPlane",
    "ControlPlaneError",
    "KubeScheduler",
    "PodReaper",
    "TCPProxy",
    "build",
    "find_assets",
]

JSON = dict[str, Any]

#: Controllers kube-controller-manager runs when asked for (no node lifecycle: kubelet-less
#: nodes would be tainted unreachable).
CONTROLLERS = (
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "namespace-controller",
    "garbage-collector-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "resourceclaim-controller",
)


class Identity:
    def __init__(self, name: str, user: str, groups: Sequence[str] = ()) -> None:
        self.name = name
        self.user = user
        self.groups = tuple(groups)
        self.token = uuid.uuid4().hex


class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager, + kube-scheduler) on loopback.

    Use as a context manager, sync or async (``async with ControlPlane() as cp``); every
    process is stopped on exit, on any exception, and (Linux) when this process dies.
    After start: ``url``, ``addresses()``, ``admin_kubeconfig``, ``scheduler_kubeconfig``,
    ``certificate_kubeconfig()``, ``request()``, ``kubectl()``, ``kube_scheduler()``.
    Any time: ``emulated_version`` and ``features``, the ksched emulation of its release.
    """

    def __init__(
        self,
        *,
        assets: Assets | None = None,
        with_controller_manager: bool = False,
        with_scheduler: bool | Mapping[str, Any] = False,
        reaper: bool = True,
        workdir: str | Path | None = None,
        apiserver_args: Sequence[str] = (),
        controller_manager_args: Sequence[str] = (),
        start_timeout: float = 60.0,
        cpus: Collection[int] | None = None,
    ) -> None:
        """``cpus``: the CPUs etcd, kube-apiserver and kube-controller-manager may run on
        (all when None), e.g. to keep them off a scheduler's cores in a benchmark."""
        self._assets = assets
        self.cpus = cpus
        self.with_controller_manager = with_controller_manager
        self.with_scheduler = with_scheduler
        self.reaper_enabled = reaper
        self._workdir_arg = Path(workdir) if workdir else None
        self.apiserver_args = list(apiserver_args)
        self.controller_manager_args = list(controller_manager_args)
        self.start_timeout = start_timeout
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.dir = Path()
        self.components: list[Component] = []
        self.schedulers: list[KubeScheduler] = []
        self.reaper: PodReaper | None = None
        self.admin = Identity("admin", "admin", ["system:masters"])
        self.scheduler_identity = Identity("kube-scheduler", "system:kube-scheduler")
        self.controller_manager_identity = Identity(
            "kube-controller-manager", "system:kube-controller-manager"
        )
        self.port = 0
        self.etcd_url = ""
        self.controller_manager_port = 0
        self._client_ca: ClientCA | None = None
        self._ssl: ssl.SSLContext | None = None
        self.started = False

    # -- paths -------------------------------------------------------------------------------
    @property
    def assets(self) -> Assets:
        if self._assets is None:
            self._assets = find_assets() or build()
        return self._assets

    @property
    def emulated_version(self) -> str:
        """ksched's ``--emulated-version`` matching this control plane's kube-scheduler
        ("1.36" for v1.36.x): tests run ksched at it, so both schedulers follow one
        release whichever version ``KSCHED_KUBE_VERSION`` built."""
        return self.assets.emulated_version

    @property
    def features(self) -> FeatureGates:
        """The default feature gates at ``emulated_version``: what an in-process ksched
        (``load_config_data(..., features=cp.features)``) runs with here."""
        return FeatureGates(self.emulated_version)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        """The CA that verifies kube-apiserver's serving certificate."""
        return self.dir / "pki" / "apiserver.crt"

    @property
    def client_ca_file(self) -> Path:
        """The cluster CA kube-apiserver trusts for client certificates
        (``--client-ca-file``; kubeadm's ``/etc/kubernetes/pki/ca.crt``)."""
        return self.dir / "pki" / "ca.crt"

    def addresses(self) -> dict[str, str]:
        """Each running component's address: etcd's client URL, the API server's, and the
        secure ports of kube-controller-manager and of every kube-scheduler (``/healthz``,
        ``/metrics``)."""
        out = {"etcd": self.etcd_url, "kube-apiserver": self.url}
        if self.controller_manager_port:
            out["kube-controller-manager"] = f"https://127.0.0.1:{self.controller_manager_port}"
        for s in self.schedulers:
            out[s.name] = s.url
        return out

    @property
    def admin_kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def scheduler_kubeconfig(self) -> Path:
        return self.dir / "scheduler.kubeconfig"

    def kubeconfig_for(
        self, identity: Identity, path: Path | None = None, *, server: str | None = None
    ) -> Path:
        """Write (and return) a kubeconfig for ``identity`` (``server``: another address
        that reaches the API server, a ``TCPProxy``'s say)."""
        out = path or self.dir / f"{identity.name}.kubeconfig"
        out.write_text(yaml.safe_dump(self._kubeconfig(identity.user, identity.token, server)))
        return out

    def token_kubeconfig(self, user: str, token: str, path: Path) -> Path:
        """A kubeconfig with any bearer token (a ServiceAccount's, say)."""
        path.write_text(yaml.safe_dump(self._kubeconfig(user, token)))
        return path

    def certificate_kubeconfig(
        self, user: str, groups: Sequence[str] = (), path: Path | None = None
    ) -> Path:
        """Write (and return) a kubeconfig shaped like kubeadm's ``scheduler.conf``: a client
        certificate for ``user`` (CN) in ``groups`` (O), signed by the cluster CA
        (``client_ca_file``), embedded as data; no token."""
        if self._client_ca is None:
            raise ControlPlaneError("start the control plane before asking for certificates")
        cert, key = self._client_ca.issue(user, groups)
        b64 = base64.b64encode
        cluster = "kubernetes"
        context = f"{user}@{cluster}"
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": cluster,
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": b64(self.ca_file.read_bytes()).decode(),
                    },
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": b64(cert).decode(),
                        "client-key-data": b64(key).decode(),
                    },
                }
            ],
            "contexts": [{"name": context, "context": {"cluster": cluster, "user": user}}],
            "current-context": context,
            "preferences": {},
        }
        out = path or self.dir / f"{user.replace(':', '-')}.cert.kubeconfig"
        out.write_text(yaml.safe_dump(kubeconfig))
        out.chmod(0o600)
        return out

    def _kubeconfig(self, user: str, token: str, server: str | None = None) -> JSON:
        ca = base64.b64encode(self.ca_file.read_bytes()).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "ksched-controlplane",
                    "cluster": {"server": server or self.url, "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [
                {"name": "default", "context": {"cluster": "ksched-controlplane", "user": user}}
            ],
            "current-context": "default",
        }

    # -- lifecycle -----------------------------------------------------------------------------
    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> ControlPlane:
        # Started from this (the event loop's) thread: it outlives the processes, which
        # the kernel kills when the thread that forked them exits.
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        assets = self.assets
        try:
            self._start(assets)
        except BaseException:
            self.stop()
            raise
        self.started = True

    def _start(self, assets: Assets) -> None:
        if self._workdir_arg is not None:
            self.dir = self._workdir_arg
            self.dir.mkdir(parents=True, exist_ok=True)
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix="ksched-cp-")
            self.dir = Path(self._tmp.name)
        pki = self.dir / "pki"
        pki.mkdir(exist_ok=True)
        _write_service_account_key(pki / "sa.key", pki / "sa.pub")
        self._client_ca = ClientCA.create(self.client_ca_file, pki / "ca.key")
        tokens = self.dir / "tokens.csv"
        idents = [self.admin, self.scheduler_identity, self.controller_manager_identity]
        tokens.write_text(
            "".join(f'{i.token},{i.user},{i.user}-uid,"{",".join(i.groups)}"\n' for i in idents)
        )
        client_port, peer_port = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client_port}"
        etcd = Component(
            "etcd",
            [
                str(assets.path("etcd")),
                "--data-dir",
                str(self.dir / "etcd"),
                "--listen-client-urls",
                self.etcd_url,
                "--advertise-client-urls",
                self.etcd_url,
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ],
            self.dir / "logs" / "etcd.log",
            self.cpus,
        )
        self._launch(etcd)
        wait_until(lambda: _http_ok(f"{self.etcd_url}/health"), self.start_timeout, etcd, "healthy")
        self.port = free_port()
        # ServiceAccount admission would reject a pod created in a namespace before the
        # serviceaccount controller made its default account; no kubelet mounts tokens.
        disabled = ["TaintNodesByCondition", "ServiceAccount"]
        apiserver = Component(
            "kube-apiserver",
            [
                str(assets.path("kube-apiserver")),
                f"--etcd-servers={self.etcd_url}",
                f"--secure-port={self.port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--cert-dir={pki}",
                f"--token-auth-file={tokens}",
                f"--client-ca-file={self.client_ca_file}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-cluster-ip-range=10.0.0.0/24",
                f"--disable-admission-plugins={','.join(disabled)}",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                *self.apiserver_args,
            ],
            self.dir / "logs" / "kube-apiserver.log",
            self.cpus,
        )
        self._launch(apiserver)
        wait_until(lambda: self._probe("/readyz") == 200, self.start_timeout, apiserver, "ready")
        self.kubeconfig_for(self.admin, self.admin_kubeconfig)
        self.kubeconfig_for(self.scheduler_identity, self.scheduler_kubeconfig)
        # the stock RBAC is reconciled by a post-start hook; /readyz waits for it, but be
        # explicit: the scheduler's ClusterRoleBinding must exist before anyone uses it
        wait_until(
            lambda: (
                self.request(
                    "GET",
                    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:kube-scheduler",
                )[0]
                == 200
            ),
            self.start_timeout,
            apiserver,
            "serving the stock RBAC",
        )
        wait_until(
            lambda: self.request("GET", "/api/v1/namespaces/default")[0] == 200,
            self.start_timeout,
            apiserver,
            "serving the default namespace",
        )
        if self.with_controller_manager:
            self._start_controller_manager(assets)
        if self.reaper_enabled:
            self.reaper = PodReaper(self)
            self.reaper.start()
        if self.with_scheduler is not False:
            cfg = None if self.with_scheduler is True else self.with_scheduler
            self.kube_scheduler(cfg).start()

    def _start_controller_manager(self, assets: Assets) -> None:
        kcm_kubeconfig = self.kubeconfig_for(self.admin, self.dir / "controller-manager.kubeconfig")
        self.controller_manager_port = free_port()
        pki = self.dir / "pki"
        kcm = Component(
            "kube-controller-manager",
            [
                str(assets.path("kube-controller-manager")),
                f"--kubeconfig={kcm_kubeconfig}",
                f"--authentication-kubeconfig={kcm_kubeconfig}",
                f"--authorization-kubeconfig={kcm_kubeconfig}",
                f"--controllers={','.join(CONTROLLERS)}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={self.ca_file}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.controller_manager_port}",
                "--use-service-account-credentials=false",
                *self.controller_manager_args,
            ],
            self.dir / "logs" / "kube-controller-manager.log",
            self.cpus,
        )
        self._launch(kcm)
        # ready once its serviceaccount controller made the default namespace's account
        wait_until(
            lambda: (
                self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200
            ),
            self.start_timeout,
            kcm,
            "creating the default ServiceAccount",
        )

    def _launch(self, component: Component) -> None:
        self.components.append(component)
        component.start()

    def stop(self) -> None:
        """Stop everything, newest first; idempotent."""
        if self.reaper is not None:
            self.reaper.stop()
            self.reaper = None
        for s in list(self.schedulers):
            s.stop()
        for c in reversed(self.components):
            c.stop()
        self.components.clear()
        self.controller_manager_port = 0
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                self._tmp.cleanup()
            self._tmp = None
        self.started = False

    def component(self, name: str) -> Component:
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(name)

    # -- clients -----------------------------------------------------------------------------
    @property
    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context(cafile=str(self.ca_file))
        return self._ssl

    def _probe(self, path: str) -> int:
        return self.request("GET", path, timeout=2)[0]

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        """One API request as admin (or ``token``): (status, decoded JSON or text)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token or self.admin.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.ssl_context) as r:
                return r.status, _decode(r.read())
        except urllib.error.HTTPError as e:
            return e.code, _decode(e.read())

    def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        status, data = self.request(method, path, body, **kw)
        if status >= 300:
            raise ControlPlaneError(f"{method} {path}: {status} {data}")
        return data

    def kubectl(
        self,
        *args: str,
        kubeconfig: Path | None = None,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60.0,
    ) -> subprocess.CompletedProcess[str]:
        """The built kubectl against this cluster (admin unless ``kubeconfig``)."""
        cmd = [
            str(self.assets.path("kubectl")),
            f"--kubeconfig={kubeconfig or self.admin_kubeconfig}",
            *args,
        ]
        proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise ControlPlaneError(
                f"kubectl {' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()}"
            )
        return proc

    def kube_scheduler(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        name: str = "kube-scheduler",
        args: Sequence[str] = (),
        kubeconfig: Path | None = None,
        cpus: Collection[int] | None = None,
    ) -> KubeScheduler:
        """A real kube-scheduler with ``config`` (a KubeSchedulerConfiguration; default
        profile when None), running as ``system:kube-scheduler`` (on ``cpus`` when given).
        Start it with ``start()`` or as a context manager."""
        return KubeScheduler(self, config, name=name, args=args, kubeconfig=kubeconfig, cpus=cpus)


class KubeScheduler:
    """A real kube-scheduler process on a ControlPlane."""

    def __init__(
        self,
        cp: ControlPlane,
        config: Mapping[str, Any] | None,
        *,
        name: str,
        args: Sequence[str],
        kubeconfig: Path | None,
        cpus: Collection[int] | None = None,
    ) -> None:
        self.cp = cp
        self.cpus = cpus
        self.name = name
        self.port = 0
        self.kubeconfig = kubeconfig or cp.scheduler_kubeconfig
        cfg: JSON = (
            dict(config)
            if config is not None
            else {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
            }
        )
        cfg.setdefault("leaderElection", {"leaderElect": False})
        conn = dict(cfg.get("clientConnection") or {})
        conn.setdefault("kubeconfig", str(self.kubeconfig))
        cfg["clientConnection"] = conn
        self.config = cfg
        self.args = list(args)
        self.component: Component | None = None

    def __enter__(self) -> KubeScheduler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        uid = uuid.uuid4().hex[:6]
        cfg_path = self.cp.dir / f"{self.name}-{uid}.yaml"
        cfg_path.write_text(yaml.safe_dump(self.config))
        self.port = free_port()
        self.component = Component(
            self.name,
            [
                str(self.cp.assets.path("kube-scheduler")),
                f"--config={cfg_path}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={self.cp.dir / f'{self.name}-{uid}-pki'}",
                *self.args,
            ],
            self.cp.dir / "logs" / f"{self.name}-{uid}.log",
            self.cpus,
        )
        self.cp.schedulers.append(self)
        self.component.start()
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        wait_until(lambda: _http_ok(self.url + "/readyz", ctx), timeout, self.component, "ready")

    def get(self, path: str) -> str:
        """GET ``path`` (``/metrics``, ``/configz``, ``/flagz``...) on the secure port, as
        admin (delegated authentication and authorization)."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(self.url + path)
        req.add_header("Authorization", f"Bearer {self.cp.admin.token}")
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return str(r.read().decode())

    def metrics(self) -> str:
        """``/metrics``, read as admin."""
        return self.get("/metrics")

    def log(self) -> str:
        assert self.component is not None
        return self.component.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.component is not None:
            self.component.stop()
        if self in self.cp.schedulers:
            self.cp.schedulers.remove(self)


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def _http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _write_service_account_key(key: Path, pub: Path) -> None:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
    except ImportError as e:  # pragma: no cover - the test extra brings it
        raise ControlPlaneError(
            "the control plane needs the 'cryptography' package for its service-account "
            "key (pip install 'ksched[test]')"
        ) from e
    k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key.write_bytes(
        k.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    pub.write_bytes(
        k.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


@contextlib.contextmanager
def running(**kw: Any) -> Iterator[ControlPlane]:
    """``with running() as cp``: the same as ``with ControlPlane(**kw) as cp``."""
    with ControlPlane(**kw) as cp:
        yield cp
