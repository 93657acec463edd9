"""AWS adapters: DynamoDB turn store and chat memory, SQS resume queue, table definitions.

The storage errors they raise are the core's (:mod:`agentturn.errors`): ``StorageError``,
``StorageUnavailableError`` (retryable), ``BodyTooLargeError``, ``BodyMissingError``.

This is the only package that talks to boto3. Names are imported lazily, so ``import agentturn.aws`` (or
``agentturn.aws.tables``, which the CDK app reads) costs no boto3 import; the first use of an adapter does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentturn.aws.chat_memory import DynamoDBChatMemory, TimelineWriteError
    from agentturn.aws.resume_queue import InvalidResumeMessageError, SqsResumeQueue, parse_resume_message
    from agentturn.aws.tables import TableDefinition, TableNames, create_tables
    from agentturn.aws.turn_store import DynamoDBTurnStore

_EXPORTS = {
    "DynamoDBChatMemory": "agentturn.aws.chat_memory",
    "TimelineWriteError": "agentturn.aws.chat_memory",
    "InvalidResumeMessageError": "agentturn.aws.resume_queue",
    "SqsResumeQueue": "agentturn.aws.resume_queue",
    "parse_resume_message": "agentturn.aws.resume_queue",
    "TableDefinition": "agentturn.aws.tables",
    "TableNames": "agentturn.aws.tables",
    "create_tables": "agentturn.aws.tables",
    "DynamoDBTurnStore": "agentturn.aws.turn_store",
}

__all__ = [
    "DynamoDBChatMemory",
    "DynamoDBTurnStore",
    "InvalidResumeMessageError",
    "SqsResumeQueue",
    "TableDefinition",
    "TableNames",
    "TimelineWriteError",
    "create_tables",
    "parse_resume_message",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentturn.aws' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
