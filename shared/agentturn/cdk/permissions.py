"""Least privilege, written down per function: which API calls each one makes, on which resource.

Derived from the adapters' code (``agentturn.aws``), operation by operation:

==============================  ====================================================================
``DynamoDBTurnStore``           ``create`` PutItem · ``load`` GetItem · ``save`` / ``claim`` / ``renew`` /
                                ``release`` / ``request_cancel`` UpdateItem · ``delete`` DeleteItem
                                (only the loser of a conversation race, in ``Runner.start``) ·
                                ``find_runnable`` / ``find_overdue`` Query on the sparse ``runnable`` /
                                ``overdue`` index, and ``find_runnable`` BatchGetItem of the candidates'
                                items (the keys-only ``runnable`` index holds no lease) (the sweeper)
``DynamoDBChatMemory``          ``append_all`` (groups of messages) / ``append`` / card replace PutItem ·
                                ``get_message`` / ``get_active_turn`` GetItem · ``set_active_turn``
                                UpdateItem · timeline reads Query on the table (it has no index)
``BlobStore`` (S3 spill-over)   GetObject / PutObject under ``turns/`` (snapshots) and ``conversations/``
                                (timeline bodies); DeleteObject under ``turns/`` only (a save discards the
                                body it replaced; the chat memory never deletes a timeline body, they leave
                                with their turn through retention); never List, never the bucket itself
``SqsResumeQueue``              SendMessage
``BedrockConverseModel``        bedrock:InvokeModel (Converse) and bedrock:InvokeModelWithResponseStream
                                (ConverseStream), on the configured models only
``AppSyncEventsPublisher``      appsync:EventPublish on the ``agentturn`` channel namespace only
``EventBridgeNotifier``         events:PutEvents on the system's own notice bus only
==============================  ====================================================================

Which function uses what:

- **run** starts turns (create, run synchronously under a lease, hand off to the queue when out of
  time), and serves the reads (the conversations list: Query on the sparse ``byOwner`` index). It never
  reads the queue, and has no access to the dead-letter queue.
- **agui** (the streamed AG-UI function) does for AG-UI requests what run does for them: starts turns, applies
  ``resume`` answers and runs the turn on in the request, hands it to the queue when out of time. It lists no
  conversations and reads no handoff key.
- **submit** applies answers and cancellations (load, one conditional save, cards) and enqueues. It never
  creates or deletes a turn.
- **worker** claims and advances turns; it consumes the resume queue (through its event source mapping)
  and re-enqueues a turn it had to yield.
- **retention** reads the turns table's stream (only TTL removals reach it) and deletes what the removed
  turn left: its timeline entries, its objects under ``turns/`` and ``conversations/``, the conversation's
  hold on it. It reads no snapshot of a live turn and writes nothing else.
- **run**, **submit**, **worker** and **sweeper** run turns, so each publishes their progress on the live
  timeline and puts their notices (a suspension, an end) on the notice bus.
- **sweeper** queries the sparse ``runnable`` index and enqueues what it finds, and queries the sparse
  ``overdue`` index for blocked turns that are due: a cancel whose process died before it finished (always:
  a person asked for it, and the turn holds its conversation) and, where ``expireOverdueWaits`` is on, a
  wait whose input timeout passed. Those it loads, saves and projects, like submit.

No statement uses ``dynamodb:*``, a ``*`` resource or a wildcard action for data. Scan, DescribeTable,
Query on the turns table itself and every management call are granted to nobody; BatchGetItem only to
the sweeper, on the turns table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from agentturn.aws import tables
from agentturn.listeners.notifications import TurnNotices

#: The turn store's write and read calls, by what they are for.
TURN_CREATE: Final = ("dynamodb:PutItem",)
TURN_READ: Final = ("dynamodb:GetItem",)
TURN_UPDATE: Final = ("dynamodb:UpdateItem",)
TURN_DELETE: Final = ("dynamodb:DeleteItem",)
#: The sweeper's read of its candidates (what decides whether a runnable turn is idle and unleased).
TURN_BATCH_READ: Final = ("dynamodb:BatchGetItem",)
#: Everything the chat memory (timeline) does, reads and writes: each function that runs the Runner
#: projects the snapshot onto the timeline (cards included), so they all need the whole set.
TIMELINE: Final = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
INDEX_QUERY: Final = ("dynamodb:Query",)
#: The turn store's S3 bodies: read, written, and the replaced one discarded (``BodyCodec.discard``).
TURN_BLOBS: Final = ("s3:DeleteObject", "s3:GetObject", "s3:PutObject")
#: The chat memory's S3 bodies: read and written, never deleted by the functions that run turns.
TIMELINE_BLOBS: Final = ("s3:GetObject", "s3:PutObject")
#: The S3 prefixes the adapters write (their ``key_prefix`` defaults).
TURN_BLOB_PREFIX: Final = "turns/"
TIMELINE_BLOB_PREFIX: Final = "conversations/"
BLOB_PREFIXES: Final = (TURN_BLOB_PREFIX, TIMELINE_BLOB_PREFIX)
SEND: Final = ("sqs:SendMessage",)
#: What Lambda's SQS event source mapping needs on the queue (granted by CDK's SqsEventSource).
CONSUME: Final = (
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ReceiveMessage",
)
INVOKE_MODEL: Final = ("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")
#: The handoff key's secret, read once per process by the functions that seal or check a carried snapshot.
READ_SECRET: Final = ("secretsmanager:GetSecretValue",)
#: The live timeline (AppSync Events HTTP publish) and the notices (EventBridge).
LIVE_PUBLISH: Final = ("appsync:EventPublish",)
PUT_NOTICES: Final = ("events:PutEvents",)
#: The retention consumer (``agentturn.aws.retention``): finds a removed turn's timeline entries (Query on
#: the table), deletes them one by one (DeleteItem: BatchWriteItem would also grant puts, and IAM has no
#: condition that limits it to deletes), releases the conversation's hold and clears its listing
#: (UpdateItem, DeleteItem on the head), reads the turn's body (GetObject under ``turns/`` only: the timeline's
#: prefix is in it) and deletes the turn's objects (listed under its prefixes, deleted in batches).
PURGE_TIMELINE: Final = ("dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:UpdateItem")
PURGE_BLOBS: Final = ("s3:DeleteObject",)
PURGE_READ_BLOBS: Final = ("s3:GetObject",)
LIST_BLOBS: Final = ("s3:ListBucket",)
#: Writing to the function's own log group (the group exists: the stack creates it).
LOGS: Final = ("logs:CreateLogStream", "logs:PutLogEvents")


@dataclass(frozen=True)
class FunctionAccess:
    turn_actions: tuple[str, ...] = ()
    #: Indexes of the turns table this function queries (Query on the table itself is granted to nobody).
    turn_indexes: tuple[str, ...] = ()
    timeline: bool = False
    blobs: bool = False
    send: bool = False
    consume: bool = False
    invoke_model: bool = False
    #: Delete what a removed turn left (the retention consumer); the stream read is its event source's.
    purge: bool = False
    #: Runs turns, so publishes their progress (live timeline) and puts their notices (suspended, ended) where
    #: the deployment sends those (``TurnNotices.ALL``).
    live: bool = False
    #: Puts the notices a wait asks for itself (reminders, escalations: the sweeper finds them due) unless the
    #: deployment sends no notices at all.
    people_notices: bool = False
    #: ``GET /conversations`` and ``GET /inbox``: Query on the conversations table's sparse ``byOwner`` and
    #: ``byAssignee`` indexes (nothing else).
    list_conversations: bool = False
    #: Reads the key that seals the snapshot a resume message carries (submit seals, worker checks):
    #: ``secretsmanager:GetSecretValue`` on that one secret.
    handoff_key: bool = False


ACCESS: Final = {
    "run": FunctionAccess(
        turn_actions=(*TURN_CREATE, *TURN_READ, *TURN_UPDATE, *TURN_DELETE),
        timeline=True,
        blobs=True,
        send=True,
        invoke_model=True,
        live=True,
        list_conversations=True,
    ),
    # The streamed AG-UI function runs what run runs for an AG-UI request (start, resume in the request, hand off
    # to the queue when out of time) and serves no other route: no conversations list, no handoff key (it sends
    # the turn id, never a carried snapshot).
    "agui": FunctionAccess(
        turn_actions=(*TURN_CREATE, *TURN_READ, *TURN_UPDATE, *TURN_DELETE),
        timeline=True,
        blobs=True,
        send=True,
        invoke_model=True,
        live=True,
    ),
    "submit": FunctionAccess(
        turn_actions=(*TURN_READ, *TURN_UPDATE), timeline=True, blobs=True, send=True, live=True, handoff_key=True
    ),
    "worker": FunctionAccess(
        turn_actions=(*TURN_READ, *TURN_UPDATE),
        timeline=True,
        blobs=True,
        send=True,
        consume=True,
        invoke_model=True,
        live=True,
        handoff_key=True,
    ),
    "sweeper": FunctionAccess(
        turn_actions=(*TURN_READ, *TURN_BATCH_READ, *TURN_UPDATE),
        turn_indexes=(tables.RUNNABLE_INDEX, tables.OVERDUE_INDEX),
        timeline=True,
        blobs=True,
        send=True,
        live=True,
        people_notices=True,
    ),
    "retention": FunctionAccess(purge=True),
}


def access(function: str) -> FunctionAccess:
    return ACCESS[function]


def puts_notices(function: str, notices: TurnNotices) -> bool:
    """Whether ``function`` is told of the notice bus and may put on it, in a deployment sending ``notices``."""
    granted = access(function)
    if notices is TurnNotices.ALL:
        return granted.live or granted.people_notices
    return notices is TurnNotices.PEOPLE and granted.people_notices
