"""Many form cycles at once through the production path on DynamoDB Local (SQS on moto): no error, no turn run
twice, none lost; and a sweep's requests grow with the turns that are due, not with the turns that wait.

The suite runs it small. The full size (1,000 conversations, 16 worker threads; 10,000 waiting turns for the
sweeper) and its table:

    AGENTTURN_LOAD_FULL=1 bash scripts/test tests/integration/test_load.py -s
"""

from __future__ import annotations

import json
import os
from typing import Any, Final

import boto3
import pytest
from botocore.config import Config

from tests.contract.aws_adapters import CLIENT_CONFIG, aws_session
from tests.functional.harness import DEFAULT_SUB, http_event
from tests.support.cycle_cost import TICKET_INPUT
from tests.support.emulators import Emulator, boto3_session_kwargs
from tests.support.load import clone_waiting, run_load, services_for, sweep_requests, table

pytestmark = pytest.mark.integration

FULL: Final = os.environ.get("AGENTTURN_LOAD_FULL") == "1"
CONVERSATIONS: Final = 1000 if FULL else 24
THREADS: Final = 16 if FULL else 4
WAITING: Final = 10_000 if FULL else 500


def _clients(dynamodb_local: Emulator, moto_server: Emulator) -> dict[str, Any]:
    kwargs = boto3_session_kwargs()
    pool = CLIENT_CONFIG.merge(Config(max_pool_connections=THREADS * 2))
    return {
        "dynamodb": boto3.client("dynamodb", endpoint_url=dynamodb_local.endpoint_url, config=pool, **kwargs),
        "sqs": boto3.client("sqs", endpoint_url=moto_server.endpoint_url, config=pool, **kwargs),
        "s3": boto3.client("s3", endpoint_url=moto_server.endpoint_url, config=pool, **kwargs),
    }


# The full size takes minutes on a shared machine; the small one stays within the suite's per-test timeout.
@pytest.mark.timeout(3000 if FULL else 300)
def test_many_cycles_at_once_run_each_turn_once_and_lose_none(dynamodb_local: Emulator, moto_server: Emulator) -> None:
    # GIVEN the production wiring on the emulators
    session = aws_session(dynamodb_local, moto_server)
    clients = _clients(dynamodb_local, moto_server)
    # WHEN conversations start at once, every form is answered, and worker threads drain the queue (some
    # messages delivered twice, as SQS may)
    report = run_load(
        **clients,
        turns_table=session.fresh_turns_table(),
        conversations_table=session.fresh_conversations_table(),
        bucket=session.bucket,
        conversations=CONVERSATIONS,
        threads=THREADS,
    )
    print("\n" + table(report))
    # THEN nothing failed, no turn made a second ticket (replays of its idempotent tool are counted apart), and
    # every turn completed
    assert report.errors == []
    assert report.double_runs == []
    assert report.lost == []
    assert report.redelivered >= CONVERSATIONS // 7
    assert report.routes["start"]["count"] == report.routes["submit"]["count"] == CONVERSATIONS


def test_a_sweep_reads_only_what_is_due_however_many_turns_wait(
    dynamodb_local: Emulator, moto_server: Emulator
) -> None:
    # GIVEN one turn waiting for its form, through the run route
    session = aws_session(dynamodb_local, moto_server)
    clients = _clients(dynamodb_local, moto_server)
    turns_table = session.fresh_turns_table()
    services, run_api = services_for(
        **clients, turns_table=turns_table, conversations_table=session.fresh_conversations_table(),
        bucket=session.bucket,
    )  # fmt: skip
    event = http_event(
        "http_start_turn.json",
        path="/conversations/sweep-1/turns",
        body={"input": TICKET_INPUT, "agentId": "support-agent"},
        sub=DEFAULT_SUB,
    )
    answer = run_api.handle(event, None)
    assert answer["statusCode"] == 200, answer
    turn_id = json.loads(answer["body"])["turnId"]
    before, result = sweep_requests(services, clients["dynamodb"])
    # WHEN many more turns wait the same way (none of them due)
    clone_waiting(clients["dynamodb"], turns_table, turn_id, WAITING)
    after, result_after = sweep_requests(services, clients["dynamodb"])
    print(f"\nsweep: {before} DynamoDB requests with 1 waiting turn, {after} with {WAITING + 1}")
    # THEN a sweep sends as many requests as before, and enqueues and expires nothing
    assert after == before
    assert result_after == result
