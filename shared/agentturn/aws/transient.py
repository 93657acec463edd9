"""AWS answers that a later try of the same request may not get (throttling, contention, a service error).

One list for every place that decides "retry later" versus "this request is wrong": the HTTP layer answers
503 for them, the SQS worker fails only that record so SQS delivers it again.
"""

from __future__ import annotations

from typing import Final

from botocore.exceptions import ClientError

TRANSIENT_ERROR_CODES: Final = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "ThrottledException",
        "TransactionConflictException",
        "ServiceUnavailable",
        "InternalServerError",
        "SlowDown",
    }
)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def is_transient(exc: ClientError) -> bool:
    """A throttling or contention code, or any 5xx the SDK gave up retrying."""
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return error_code(exc) in TRANSIENT_ERROR_CODES or int(status or 0) >= 500
