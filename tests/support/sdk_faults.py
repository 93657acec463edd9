"""Faults injected inside the AWS SDK: botocore event hooks on the clients the adapters use.

Port-level injectors (tests/reliability/faults.py) fail a whole adapter call. Real failures happen one HTTP
attempt at a time, *inside* botocore's retries: a response that times out after the service applied the
request makes botocore send the very same request again, and a conditional write then fails its condition
because of its own first attempt. Only hooks inside the SDK reproduce that.

For each API call (``before-call``) a plan names at most one fault; each HTTP attempt of the call
(``before-send``, registered first, so it runs before anything else could send) then applies it:

``before``              attempt 1 fails before it is sent (a connection error); botocore retries.
``after``               attempt 1 is sent here, applied by the service, and its response is lost (a read
                        timeout); botocore sends the same request again.
``throttle``            attempt 1 is answered with the service's throttling error; botocore retries.
``before_exhausted``    every attempt fails before it is sent: the caller gets the connection error.
``after_exhausted``     attempt 1 is applied and its response lost, every later attempt fails before it
                        is sent: the caller gets an error for a request that took effect.
``throttle_exhausted``  every attempt is throttled: the caller gets the throttling ``ClientError``.

Everything else is botocore's own behaviour (its retry rules, its error parsing). Backoff delays should be
zeroed in tests (:func:`no_backoff`): retries then cost no wall time, and nothing sleeps.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

FaultKind = Literal["before", "after", "throttle", "before_exhausted", "after_exhausted", "throttle_exhausted"]
FAULT_KINDS: Final[tuple[FaultKind, ...]] = get_args(FaultKind)
#: A plan: the fault (or ``None``) for the next call of ``"service.Operation"`` (e.g. ``"dynamodb.PutItem"``).
Plan = Callable[[str], "FaultKind | None"]

# What each service answers when it throttles (status, body, headers), as botocore parses it.
_THROTTLE: Final[dict[str, tuple[int, bytes, dict[str, str]]]] = {
    "dynamodb": (
        400,
        b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds '
        b'the allowed throughput."}',
        {"Content-Type": "application/x-amz-json-1.0"},
    ),
    "sqs": (
        400,
        b'{"__type":"com.amazonaws.sqs#ThrottlingException","message":"Rate exceeded"}',
        {"Content-Type": "application/x-amz-json-1.0", "x-amzn-query-error": "ThrottlingException;Sender"},
    ),
    "s3": (
        503,
        b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your '
        b"request rate.</Message></Error>",
        {"Content-Type": "application/xml"},
    ),
}


class _RawBody:
    """What AWSResponse reads a body from (urllib3's ``stream()``)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


@dataclass
class _Call:
    name: str
    fault: FaultKind | None
    attempts: int = 0


@dataclass
class SdkFaultInjector:
    """Hooks ``plan`` into botocore clients; counts what it did in :attr:`fired` (by ``"op:kind"``)."""

    plan: Plan
    fired: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    #: ``"service.Operation:kind"`` of every fault, in order (a failure report names them).
    log: list[str] = field(default_factory=list)
    enabled: bool = True
    _local: threading.local = field(default_factory=threading.local)

    def attach(self, client: Any) -> Any:
        """Inject into ``client`` (returned, for chaining)."""
        service = client.meta.service_model.endpoint_prefix
        http = client._endpoint.http_session  # sends "after" attempts itself, exactly as botocore would
        events = client.meta.events
        events.register_first(f"before-call.{client.meta.service_model.service_id.hyphenize()}", self._on_call)
        events.register_first(
            f"before-send.{client.meta.service_model.service_id.hyphenize()}",
            lambda request, **kwargs: self._on_send(service, http, request, **kwargs),
        )
        return client

    def _on_call(self, model: Any, **_: Any) -> None:
        name = f"{model.service_model.endpoint_prefix}.{model.name}"
        self.calls[name] += 1
        fault = self.plan(name) if self.enabled else None
        if fault is not None:
            self.fired[f"{name}:{fault}"] += 1
            self.log.append(f"{name}:{fault}")
        self._local.call = _Call(name, fault)

    def _on_send(self, service: str, http: Any, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        call: _Call | None = getattr(self._local, "call", None)
        if call is None or call.fault is None:
            return None
        call.attempts += 1
        first = call.attempts == 1
        fault = call.fault
        if (fault == "before" and first) or fault == "before_exhausted":
            raise EndpointConnectionError(endpoint_url=request.url)
        if fault in ("after", "after_exhausted"):
            if first:
                # The request reaches the service and is applied; only its answer is lost.
                response = http.send(request)
                response.content  # noqa: B018 - read it all, so the connection goes back to the pool
                raise ReadTimeoutError(endpoint_url=request.url)
            if fault == "after_exhausted":
                raise EndpointConnectionError(endpoint_url=request.url)
            return None
        if (fault == "throttle" and first) or fault == "throttle_exhausted":
            status, body, headers = _THROTTLE[service]
            return AWSResponse(request.url, status, headers, _RawBody(body))
        return None


class SeededPlan:
    """Each call fails with probability ``rate`` (at most ``max_faults`` per plan), its kind drawn from
    ``kinds``; a pure function of the seed and the sequence of calls. ``only`` limits it to some calls."""

    def __init__(
        self,
        seed: int,
        *,
        rate: float = 0.1,
        max_faults: int = 3,
        kinds: tuple[FaultKind, ...] = FAULT_KINDS,
        only: Callable[[str], bool] | None = None,
    ) -> None:
        self.rng = random.Random(seed)
        self.rate = rate
        self.max_faults = max_faults
        self.kinds = kinds
        self.only = only
        self.count = 0

    def __call__(self, name: str) -> FaultKind | None:
        # One draw per call whatever happens, so the plan of later calls does not depend on ``only``.
        draw, kind = self.rng.random(), self.rng.choice(self.kinds)
        if self.count >= self.max_faults or draw >= self.rate or (self.only is not None and not self.only(name)):
            return None
        self.count += 1
        return kind


class Scripted:
    """A plan that fails the ``n``-th call of one operation with one kind (1-based), and nothing else."""

    def __init__(self, name: str, kind: FaultKind, n: int = 1) -> None:
        self.name, self.kind, self.n = name, kind, n
        self.seen = 0

    def __call__(self, name: str) -> FaultKind | None:
        if name != self.name:
            return None
        self.seen += 1
        return self.kind if self.seen == self.n else None


@contextmanager
def no_backoff() -> Iterator[None]:
    """botocore's retries without their (jittered, growing) delays: the retries happen, nothing sleeps."""
    from botocore.retries import standard

    original = standard.ExponentialBackoff.delay_amount
    standard.ExponentialBackoff.delay_amount = lambda self, context: 0.0  # type: ignore[method-assign]
    try:
        yield
    finally:
        standard.ExponentialBackoff.delay_amount = original  # type: ignore[method-assign]
