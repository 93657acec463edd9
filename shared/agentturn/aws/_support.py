"""Helpers shared by the AWS adapters: clients, error codes, numbers, the write nonce."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, cast

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

#: A low-level attribute value as the DynamoDB client sends and returns it: ``{"S": "..."}``, ``{"N": "1"}``.
AttributeValue = dict[str, Any]
#: An item (or a key) in the low-level shape.
Item = dict[str, AttributeValue]

#: A DynamoDB item is at most 400 KB, attribute names included: what a body may take, leaving room for
#: the keys and bookkeeping attributes next to it.
MAX_INLINE_BODY: Final = 380 * 1024

#: Codes for "the condition of a conditional write did not hold".
CONDITION_FAILED: Final = "ConditionalCheckFailedException"

#: A nonce every conditional write of a body stores with it. A write whose answer was lost is retried by the
#: SDK; the retry then fails its condition *because of its own first attempt*, and the item it sees
#: (``ReturnValuesOnConditionCheckFailure=ALL_OLD``) carrying this write's nonce is how the adapter tells
#: "my write landed" from "someone else's write won". Content cannot tell them apart: an identical body
#: written earlier by another call is not this call's write.
WRITE_ID: Final = "writeId"


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def new_write_id() -> str:
    """A fresh nonce for :data:`WRITE_ID` (64 random bits: collisions are not a concern at any scale)."""
    return uuid.uuid4().hex[:16]


def written_by(item: Item | None, write_id: str) -> bool:
    """Whether ``item`` (as a failed condition saw it) holds the write that carried ``write_id``."""
    return item is not None and as_str(item.get(WRITE_ID)) == write_id


def old_item(exc: ClientError) -> Item | None:
    """The item a failed conditional write saw (``ReturnValuesOnConditionCheckFailure=ALL_OLD``)."""
    # botocore puts it next to "Error" in the parsed response; the stubs do not declare it.
    item: Any = cast("Mapping[str, Any]", exc.response).get("Item")
    return dict(item) if item else None


def client_config() -> Any:
    from botocore.config import Config

    # "standard" retries throttling and transient errors with jittered backoff; connections are pooled for
    # the threads a worker may run.
    return Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=32)


def dynamodb_client() -> DynamoDBClient:
    import boto3

    return boto3.client("dynamodb", config=client_config())


def s3_client() -> S3Client:
    import boto3

    return boto3.client("s3", config=client_config())


def sqs_client() -> SQSClient:
    import boto3

    return boto3.client("sqs", config=client_config())


def number(value: float | int) -> str:
    """A DynamoDB number: times at microsecond precision, integers as they are."""
    if isinstance(value, int):
        return str(value)
    return format(Decimal(repr(value)).quantize(Decimal("0.000001")), "f")


def as_float(attribute: AttributeValue | None, default: float = 0.0) -> float:
    if attribute is None or "N" not in attribute:
        return default
    return float(attribute["N"])


def as_int(attribute: AttributeValue | None, default: int = 0) -> int:
    if attribute is None or "N" not in attribute:
        return default
    return int(attribute["N"])


def as_str(attribute: AttributeValue | None) -> str | None:
    if attribute is None or "S" not in attribute:
        return None
    return str(attribute["S"])
