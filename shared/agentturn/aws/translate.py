"""The port boundary: botocore's errors become the core's storage errors on the way out of an adapter.

Nothing above the adapters knows botocore. A request that may succeed later (throttling, contention, a
5xx, a lost connection or a timeout: :mod:`agentturn.aws.transient`) is
:class:`~agentturn.errors.StorageUnavailableError` (``retryable=True``); anything else (a missing table,
access denied, a malformed request, no credentials) is a plain :class:`~agentturn.errors.StorageError`.
The SDK's error stays attached as ``__cause__`` for the logs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError, ConnectionError, HTTPClientError

from agentturn.aws.transient import error_code, is_transient
from agentturn.errors import StorageError, StorageUnavailableError

C = TypeVar("C", bound=type)

#: botocore's errors for a request that never got an answer: the connection failed, broke or timed out.
_LOST: tuple[type[BotoCoreError], ...] = (ConnectionError, HTTPClientError)


def storage_error(exc: ClientError | BotoCoreError, operation: str) -> StorageError:
    """The core's error for ``exc``, raised by ``operation`` (a name for the message, like ``"TurnStore.load"``)."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        message = str(exc.response.get("Error", {}).get("Message", "")) or str(exc)
        detail = f"{operation} failed: {code or 'error'}: {message}"
        if is_transient(exc):
            return StorageUnavailableError(detail, code=code or None)
        return StorageError(detail, code=code or None)
    detail = f"{operation} failed: {type(exc).__name__}: {exc}"
    if isinstance(exc, _LOST):
        return StorageUnavailableError(detail)
    return StorageError(detail)


def _translating(method: Callable[..., Any], operation: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise storage_error(exc, operation) from exc

    return call


def translates_errors(cls: C) -> C:
    """Class decorator: every public method of ``cls`` raises the core's storage errors, never botocore's."""
    for name, value in list(vars(cls).items()):
        if name.startswith("_") or not callable(value) or isinstance(value, staticmethod | classmethod):
            continue
        setattr(cls, name, _translating(value, f"{cls.__name__}.{name}"))
    return cls
