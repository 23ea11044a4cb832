"""Authentication and authorization for the test API server: kube-apiserver's
``--token-auth-file``, TokenReview and SubjectAccessReview, with a fixed policy.

With a token file the server authenticates every request as kube-apiserver does with one:
``Authorization: Bearer <token>`` of a listed token is its user (and ``system:authenticated``),
any other token gets 401, and a request without one is ``system:anonymous``. The policy:

* members of ``system:masters`` may do everything;
* anyone else (``system:anonymous`` included) may do nothing but get ``/healthz``,
  ``/livez``, ``/readyz`` and ``/version`` (kube's ``system:public-info-viewer``): 403.

SubjectAccessReviews are answered by the same policy (``status.allowed`` for a
``system:masters`` member, for anyone on the public paths); TokenReviews by the token file.
Without a token file nothing is authenticated or refused (the server's historic behaviour):
every request is allowed, a TokenReview authenticates no token, and SubjectAccessReviews
still follow the policy.

The file is kube's CSV: ``token,user,uid,"group1,group2"`` per line (the groups column is
optional; blank lines are skipped).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._store import JSON, APIStatusError, status_body

__all__ = ["MASTERS", "PUBLIC_PATHS", "TokenAuth", "TokenUser", "read_token_file"]

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
ANONYMOUS = ("system:anonymous", ("system:unauthenticated",))
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})


@dataclass(frozen=True)
class TokenUser:
    token: str
    name: str
    uid: str
    groups: tuple[str, ...] = ()

    @property
    def all_groups(self) -> tuple[str, ...]:
        return self.groups if AUTHENTICATED in self.groups else (*self.groups, AUTHENTICATED)


def parse_tokens(text: str, source: str = "token file") -> list[TokenUser]:
    """kube-apiserver's token file (``ValueError`` naming the record for a bad one)."""
    users: list[TokenUser] = []
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    for n, record in enumerate(reader, 1):
        if not record or record == [""]:
            continue
        if len(record) < 3:
            raise ValueError(
                f"{source}: record {n} must have at least 3 columns (token, user name, user "
                f"uid), found {len(record)}"
            )
        token, name, uid = record[0], record[1], record[2]
        if not token:
            raise ValueError(f"{source}: record {n}: empty token")
        groups = tuple(g.strip() for g in record[3].split(",") if g.strip()) if record[3:] else ()
        users.append(TokenUser(token, name, uid, groups))
    return users


def read_token_file(path: str | Path) -> list[TokenUser]:
    return parse_tokens(Path(path).read_text(), str(path))


class TokenAuth:
    """The server's authenticator and authorizer (see the module doc)."""

    def __init__(self, users: list[TokenUser] | None = None) -> None:
        self.users = list(users or [])
        self._by_token: dict[str, TokenUser] = {}
        for u in self.users:  # kube keeps the last of duplicate tokens
            self._by_token[u.token] = u

    @property
    def enabled(self) -> bool:
        return bool(self.users)

    @property
    def first_token(self) -> str | None:
        return self.users[0].token if self.users else None

    def lookup(self, token: str) -> TokenUser | None:
        return self._by_token.get(token)

    # -- requests to the server itself ---------------------------------------------------
    def authenticate(self, authorization: str | None) -> tuple[str, tuple[str, ...]]:
        """(user, groups) of a request; ``APIStatusError`` 401 for a token not in the file."""
        auth = (authorization or "").strip()
        parts = auth.split(" ", 2)
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return ANONYMOUS
        user = self.lookup(parts[1])
        if user is None:
            raise APIStatusError(status_body(401, "Unauthorized"))
        return user.name, user.all_groups

    @staticmethod
    def allowed(groups: tuple[str, ...] | list[str], path: str | None) -> bool:
        return MASTERS in groups or (path is not None and path in PUBLIC_PATHS)

    # -- the reviews -----------------------------------------------------------------------
    def token_review(self, body: JSON) -> JSON:
        spec = body.get("spec") or {}
        token = spec.get("token") if isinstance(spec, dict) else None
        if not isinstance(token, str) or not token:
            raise _invalid("TokenReview", "authentication.k8s.io", "spec.token", "Required value")
        user = self.lookup(token)
        status: JSON
        if user is None:
            status = {"user": {}, "error": "invalid bearer token"}
        else:
            u: JSON = {"username": user.name, "uid": user.uid, "groups": list(user.all_groups)}
            status = {"authenticated": True, "user": u}
        return _review("authentication.k8s.io/v1", "TokenReview", spec, status)

    def access_review(self, body: JSON) -> JSON:
        spec = body.get("spec") or {}
        if not isinstance(spec, dict):
            raise _invalid("SubjectAccessReview", "authorization.k8s.io", "spec", "Invalid value")
        res, non_res = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if (res is None) == (non_res is None):
            raise _invalid(
                "SubjectAccessReview",
                "authorization.k8s.io",
                "spec.resourceAttributes",
                "Invalid value: exactly one of nonResourceAttributes or resourceAttributes "
                "must be specified",
            )
        groups = spec.get("groups") or []
        if not spec.get("user") and not groups:
            raise _invalid(
                "SubjectAccessReview",
                "authorization.k8s.io",
                "spec.user",
                "Invalid value: at least one of user or group must be specified",
            )
        path = non_res.get("path") if isinstance(non_res, dict) else None
        allowed = self.allowed(list(groups), path)
        return _review("authorization.k8s.io/v1", "SubjectAccessReview", spec, {"allowed": allowed})


def _review(api_version: str, kind: str, spec: Any, status: JSON) -> JSON:
    return {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def _invalid(kind: str, group: str, field: str, message: str) -> APIStatusError:
    return APIStatusError.make(
        422,
        f'{kind}.{group} "" is invalid: {field}: {message}',
        details={
            "group": group,
            "kind": kind,
            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}],
        },
    )
