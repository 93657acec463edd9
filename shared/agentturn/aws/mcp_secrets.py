"""An MCP server's token from Secrets Manager or SSM Parameter Store, as ``MCPServer(headers=...)``.

Read on first use and again after ``ttl`` seconds (per process), never at import and never per tool lookup;
the value is never logged nor part of a repr. Least privilege is the deployment's: grant the functions that run
tools exactly the one secret or parameter (``AgentTurn.grant_tools`` with ``secretsmanager:GetSecretValue`` on
the secret's ARN, or ``ssm:GetParameter`` on the parameter's, plus ``kms:Decrypt`` on a customer key).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agentturn.errors import StorageUnavailableError


class SecretHeaders:
    """``headers=`` for :class:`~agentturn.MCPServer`: ``{header: prefix + value}`` of one secret or parameter."""

    def __init__(
        self,
        *,
        secret_id: str | None = None,
        parameter: str | None = None,
        header: str = "Authorization",
        prefix: str = "Bearer ",
        ttl: float = 300.0,
        client: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if (secret_id is None) == (parameter is None):
            raise ValueError("SecretHeaders takes exactly one of secret_id= or parameter=")
        self._secret_id, self._parameter = secret_id, parameter
        self._header, self._prefix, self._ttl = header, prefix, ttl
        self._client, self._clock = client, clock
        self._lock = threading.Lock()
        self._value: str | None = None
        self._read_at = 0.0

    def _boto_client(self) -> Any:
        if self._client is None:
            import boto3  # only when a server's token is first needed

            self._client = boto3.client("secretsmanager" if self._secret_id is not None else "ssm")
        return self._client

    def _read(self) -> str:
        client = self._boto_client()
        try:
            if self._secret_id is not None:
                return str(client.get_secret_value(SecretId=self._secret_id)["SecretString"])
            answer = client.get_parameter(Name=self._parameter, WithDecryption=True)
            return str(answer["Parameter"]["Value"])
        except (ClientError, BotoCoreError, KeyError) as exc:
            source = self._secret_id if self._secret_id is not None else self._parameter
            raise StorageUnavailableError(f"could not read the MCP token {source!r}: {type(exc).__name__}") from None

    def __call__(self) -> dict[str, str]:
        with self._lock:
            now = self._clock()
            if self._value is None or now - self._read_at >= self._ttl:
                self._value, self._read_at = self._read(), now
            return {self._header: f"{self._prefix}{self._value}"}

    def __repr__(self) -> str:
        source = f"secret_id={self._secret_id!r}" if self._secret_id is not None else f"parameter={self._parameter!r}"
        return f"SecretHeaders({source}, header={self._header!r})"
