"""The API server's errors as ksched sees them: a non-2xx answer (``APIError``) or none at
all (``APIConnectionError``), and the Retry-After header both HTTP paths honour.

Its own module so the two HTTP paths (``client`` through aiohttp, ``pipeline`` over
ksched's keep-alive connections) share it without importing each other.
"""

from __future__ import annotations

import msgspec

from ..util.errors import EXIT_FAILURE, KschedError

__all__ = ["APIConnectionError", "APIError", "retry_after_seconds"]


class APIError(KschedError):
    """A non-2xx answer; ``status``/``reason``/``message`` come from the returned Status."""

    exit_code = EXIT_FAILURE  # the cluster refused: not the user's input

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        body: bytes = b"",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after

    @property
    def is_expired(self) -> bool:
        """410 Gone/Expired: the resourceVersion asked for is no longer in the watch window."""
        return self.status == 410 or self.reason in ("Expired", "Gone")

    @property
    def is_too_large_resource_version(self) -> bool:
        """client-go's isTooLargeResourceVersionError: the server (its watch cache, just
        restarted) has not yet seen the resourceVersion asked for. A Status cause
        ``ResourceVersionTooLarge``, or an older server's 504 "Too large resource version"."""
        if _has_cause(self.body, "ResourceVersionTooLarge"):
            return True
        return self.status == 504 and "Too large resource version" in self.message

    @classmethod
    def from_response(cls, status: int, body: bytes, retry_after: float | None = None) -> APIError:
        reason, message = _status_text(status, body)
        return cls(status, reason, message, body=body, retry_after=retry_after)


class APIConnectionError(APIError):
    """No HTTP answer at all (refused, reset, timed out): status 0, always retriable."""

    def __init__(self, message: str, *, reason: str = "ConnectionError") -> None:
        super().__init__(0, reason, message)


class _Cause(msgspec.Struct):
    reason: str = ""
    message: str = ""


class _Details(msgspec.Struct):
    causes: list[_Cause] = msgspec.field(default_factory=list)


class _Status(msgspec.Struct):
    reason: str = ""
    message: str = ""
    code: int = 0
    details: _Details | None = None


def _has_cause(body: bytes, reason: str) -> bool:
    if not body or reason.encode() not in body:
        return False
    try:
        st = msgspec.json.decode(body, type=_Status)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return st.details is not None and any(c.reason == reason for c in st.details.causes)


def _status_text(status: int, body: bytes) -> tuple[str, str]:
    try:
        st = msgspec.json.decode(body, type=_Status)
    except (msgspec.DecodeError, msgspec.ValidationError):
        text = body.decode("utf-8", "replace").strip()
        return _default_reason(status), text[:512] or f"HTTP {status}"
    return st.reason or _default_reason(status), st.message or f"HTTP {status}"


def _default_reason(status: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        405: "MethodNotAllowed",
        409: "Conflict",
        410: "Gone",
        415: "UnsupportedMediaType",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(status, "Unknown")


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header in seconds (None: absent or not whole seconds)."""
    if not value:
        return None
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        return None
