"""A secret string from AWS Secrets Manager, read once per process (the key that seals carried snapshots)."""

from __future__ import annotations

import functools
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agentturn.aws.translate import storage_error


@functools.cache
def read_secret(arn: str) -> str:
    """The secret's current string; the first call in a process makes the one request, later calls none."""
    import boto3

    client: Any = boto3.client("secretsmanager")
    try:
        return str(client.get_secret_value(SecretId=arn)["SecretString"])
    except (ClientError, BotoCoreError) as exc:
        raise storage_error(exc, f"reading secret {arn!r}") from exc
