"""The port boundary: which botocore errors become a retryable storage error, and which a plain one."""

from __future__ import annotations

import pytest
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)

from agentturn.aws.transient import TRANSIENT_ERROR_CODES
from agentturn.aws.translate import storage_error, translates_errors
from agentturn.errors import StorageError, StorageUnavailableError


def _client_error(code: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")


@pytest.mark.parametrize("code", sorted(TRANSIENT_ERROR_CODES))
def test_every_transient_code_is_retryable(code: str) -> None:
    # GIVEN an AWS error with a code of the transient list / WHEN translated
    error = storage_error(_client_error(code), "TurnStore.save")

    # THEN it is a retryable StorageUnavailableError carrying the code
    assert isinstance(error, StorageUnavailableError)
    assert (error.retryable, error.code) == (True, code)
    assert "TurnStore.save" in str(error)


@pytest.mark.parametrize(
    "error",
    [
        _client_error("InternalFailure", 500),
        _client_error("", 503),
        EndpointConnectionError(endpoint_url="http://x"),
        ConnectTimeoutError(endpoint_url="http://x"),
        ReadTimeoutError(endpoint_url="http://x"),
    ],
    ids=["5xx-code", "5xx-no-code", "endpoint", "connect-timeout", "read-timeout"],
)
def test_a_5xx_or_a_lost_connection_is_retryable(error: ClientError | BotoCoreError) -> None:
    # GIVEN / WHEN a 5xx or a connection that failed, broke or timed out is translated / THEN it is retryable
    assert storage_error(error, "op").retryable is True


@pytest.mark.parametrize(
    "error",
    [
        _client_error("AccessDeniedException"),
        _client_error("ResourceNotFoundException"),
        _client_error("ValidationException"),
        NoCredentialsError(),
        ParamValidationError(report="bad"),
    ],
    ids=["access-denied", "no-table", "validation", "no-credentials", "param-validation"],
)
def test_anything_else_is_a_plain_non_retryable_storage_error(error: ClientError | BotoCoreError) -> None:
    # GIVEN / WHEN an error a retry will not cure is translated
    translated = storage_error(error, "op")

    # THEN it is a StorageError that says it is not retryable
    assert type(translated) is StorageError
    assert translated.retryable is False


def test_the_class_decorator_translates_public_methods_only() -> None:
    # GIVEN an adapter whose public and private methods both raise botocore's error
    @translates_errors
    class Adapter:
        def load(self) -> None:
            raise _client_error("ThrottlingException")

        def _helper(self) -> None:
            raise _client_error("ThrottlingException")

    adapter = Adapter()

    # WHEN each is called
    # THEN the public one raises the core's error with the SDK's as its cause; the private one is left alone
    with pytest.raises(StorageUnavailableError, match=r"Adapter\.load failed: ThrottlingException") as failure:
        adapter.load()
    assert isinstance(failure.value.__cause__, ClientError)
    with pytest.raises(ClientError):
        adapter._helper()
