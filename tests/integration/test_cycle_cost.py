"""DynamoDB requests and write units of one complete form cycle on the production path (DESIGN: Performance
targets), counted by DynamoDB Local itself (``ReturnConsumedCapacity=INDEXES``), fresh and after 100 cycles.

Counts, not time: a request or a write unit more is a behaviour change (it is billed), so it is asserted.
``AGENTTURN_CYCLE_COST_TABLE=1 bash scripts/test tests/integration/test_cycle_cost.py -s`` prints the
request-by-request tables.
"""

from __future__ import annotations

import os
import uuid
from typing import Final

import boto3
import pytest

from tests.contract.aws_adapters import CLIENT_CONFIG, aws_session
from tests.functional.harness import DEFAULT_SUB, http_event
from tests.support.cycle_cost import MEETING_ROOM, ProductionCycle, Script, Tally
from tests.support.emulators import Emulator, boto3_session_kwargs

pytestmark = pytest.mark.integration

#: DESIGN's performance targets per complete cycle (issue 28: the seed's card write is back, and so is the
#: release of a completed turn's conversation).
TARGET_REQUESTS: Final = 14
TARGET_WRITE_UNITS: Final = 16
TARGET_DOLLARS_PER_MILLION: Final = 13.0
TARGET_DOLLARS_PER_MILLION_AFTER: Final = 15.0
#: What the cycle costs today, on the HTTP path of an owned conversation: start 6 (Query, PutItem turn, UpdateItem
#: head, UpdateItem turn, PutItem group, PutItem card), submit 3 (GetItem, UpdateItem turn, PutItem card), worker
#: 4 (Query, UpdateItem turn, PutItem group, UpdateItem head), the client's GetItem. A request more is a
#: regression; the write units sit near item size boundaries that random ids move by a unit, hence the margin.
MAX_REQUESTS: Final = 14
MAX_WRITE_UNITS: Final = 16
MAX_DOLLARS_PER_MILLION: Final = 15.0
#: Units a cycle may differ from another by, where only random ids differ (item sizes near a 1 KB boundary).
SIZE_JITTER_UNITS: Final = 2
EARLIER_CYCLES: Final = 100
PRINT: Final = os.environ.get("AGENTTURN_CYCLE_COST_TABLE") == "1"


@pytest.fixture(scope="module")
def cycle(dynamodb_local: Emulator, moto_server: Emulator) -> ProductionCycle:
    session = aws_session(dynamodb_local, moto_server)
    kwargs = boto3_session_kwargs()
    # Clients of its own: the meter's hooks must not reach other tests' clients.
    clients = {
        "dynamodb": boto3.client("dynamodb", endpoint_url=dynamodb_local.endpoint_url, config=CLIENT_CONFIG, **kwargs),
        "sqs": boto3.client("sqs", endpoint_url=moto_server.endpoint_url, config=CLIENT_CONFIG, **kwargs),
        "s3": boto3.client("s3", endpoint_url=moto_server.endpoint_url, config=CLIENT_CONFIG, **kwargs),
    }
    return ProductionCycle(
        **clients,
        turns_table=session.fresh_turns_table(),
        conversations_table=session.fresh_conversations_table(),
        bucket=session.bucket,
    )


def _measured(cycle: ProductionCycle, conversation_id: str, script: Script | None = None) -> Tally:
    cycle.meter.reset()
    view = cycle(conversation_id) if script is None else cycle(conversation_id, script)
    assert view["status"] == "COMPLETED", view
    return cycle.meter.reset()


def _show(title: str, tally: Tally, cycle: ProductionCycle) -> None:
    if PRINT:
        names = {
            cycle.services.store.table_name: "turns",  # type: ignore[attr-defined]
            cycle.services.chat_memory.table_name: "conversations",  # type: ignore[attr-defined]
        }
        print(f"\n{title}\n{tally.table(names)}")


def _assert_within_ceilings(tally: Tally) -> None:
    operations = [f"{r.operation}:{r.index}" if r.index else r.operation for r in tally.requests]
    assert len(tally.requests) <= MAX_REQUESTS, operations
    assert tally.write_units <= MAX_WRITE_UNITS, [
        (o, r.write_units) for o, r in zip(operations, tally.requests, strict=True)
    ]
    assert tally.dollars_per_million() <= MAX_DOLLARS_PER_MILLION


def test_a_fresh_conversation_cycle_stays_within_the_request_and_write_unit_targets(cycle: ProductionCycle) -> None:
    # GIVEN the production wiring on DynamoDB Local, and a conversation nobody used yet
    conversation = f"fresh-{uuid.uuid4().hex[:8]}"

    # WHEN one complete cycle runs: start (form asked), submit, the worker's resume, the client's GET
    tally = _measured(cycle, conversation)
    _show("fresh conversation", tally, cycle)

    # THEN DynamoDB billed at most DESIGN's targets of requests, write units and dollars per million cycles
    _assert_within_ceilings(tally)
    assert len(tally.requests) <= TARGET_REQUESTS
    assert tally.write_units <= TARGET_WRITE_UNITS
    assert tally.dollars_per_million() <= TARGET_DOLLARS_PER_MILLION
    # AND no turn write bills more than 2 units (no snapshot spilled or grew past its budget), and no index
    # is written but the runnable one's enter and leave (twice: run → wait, submit → done) and the
    # conversations list's entry, put by the conversation's first turn start
    turn_writes = [r for r in tally.requests if r.table == cycle.services.store.table_name and r.write_units]  # type: ignore[attr-defined]
    assert max(c.write_units for r in turn_writes for c in r.charges if not c.index) <= 2
    assert _index_units(tally) == [("byOwner", 1.0)] + [("runnable", 1.0)] * 4
    # AND the conversation's head is written twice: the start's take, and the completed turn's release
    head_writes = [r for r in tally.requests if r.operation == "UpdateItem" and r.table != turn_writes[0].table]
    assert len(head_writes) == 2


def test_a_cycle_after_a_hundred_earlier_ones_costs_what_a_fresh_one_costs(cycle: ProductionCycle) -> None:
    # GIVEN a conversation with 100 complete cycles behind it, and what the second cycle of a conversation
    # costs (its turn start moves the conversations list's entry, as every later one does; the first puts it)
    conversation = f"long-{uuid.uuid4().hex[:8]}"
    short = f"short-{uuid.uuid4().hex[:8]}"
    cycle(short)
    second = _measured(cycle, short)
    for _ in range(EARLIER_CYCLES - 1):
        cycle(conversation)
    _measured(cycle, conversation)

    # WHEN the 101st cycle runs
    tally = _measured(cycle, conversation)
    _show(f"after {EARLIER_CYCLES} earlier cycles", tally, cycle)

    # THEN it stays within the ceilings, and costs what the second cycle did: the same requests, the same index
    # writes, and table units that differ only by what random ids do to item sizes (flat in length)
    _assert_within_ceilings(tally)
    assert tally.dollars_per_million() <= TARGET_DOLLARS_PER_MILLION_AFTER
    assert [(r.operation, r.index) for r in tally.requests] == [(r.operation, r.index) for r in second.requests]
    assert _index_units(tally) == _index_units(second)
    assert abs(tally.write_units - second.write_units) <= SIZE_JITTER_UNITS


def _index_units(tally: Tally) -> list[tuple[str, float]]:
    return sorted((c.index, c.write_units) for r in tally.requests for c in r.charges if c.index and c.write_units)


def test_a_form_the_model_asks_for_is_saved_once_with_the_reply_that_asked(cycle: ProductionCycle) -> None:
    # GIVEN a fresh conversation with the meeting-room agent, whose model asks for the form itself
    conversation = f"meeting-{uuid.uuid4().hex[:8]}"

    # WHEN one complete cycle runs
    tally = _measured(cycle, conversation, MEETING_ROOM)
    _show("model-requested form (meeting room), fresh conversation", tally, cycle)

    # THEN the start wrote the turn twice: made, then the model's reply and the wait in one save (nothing acts
    # on the world in between, so no save sits between them); before it wrote anything it read the conversation's
    # history, and it took the conversation once the turn existed; the timeline got the reply and then the card
    turns = cycle.services.store.table_name  # type: ignore[attr-defined]
    start = [(r.operation, "turns" if r.table == turns else "conversations") for r in tally.requests[:6]]
    assert start == [
        ("Query", "conversations"),
        ("PutItem", "turns"),
        ("UpdateItem", "conversations"),
        ("UpdateItem", "turns"),
        ("PutItem", "conversations"),  # the reply and the input: one group
        ("PutItem", "conversations"),
    ]
    # AND the next request is the submit's read: the start made no other
    assert (tally.requests[6].operation, tally.requests[6].table) == ("GetItem", turns)
    # AND the conversation is read twice: by the start, and once by the worker's run for the model's history,
    # although it calls the model twice (the booking, then the answer)
    assert [r.operation for r in tally.requests].count("Query") == 2


def test_a_cycle_after_earlier_ones_meets_the_design_target_of_14_requests(cycle: ProductionCycle) -> None:
    # GIVEN a conversation with one complete cycle behind it (a later cycle costs what the second does: see above)
    conversation = f"target-{uuid.uuid4().hex[:8]}"
    cycle(conversation)

    # WHEN the next cycle runs
    tally = _measured(cycle, conversation)

    # THEN it makes at most DESIGN's requests (the write-unit and dollar targets are asserted by the tests above)
    assert len(tally.requests) <= TARGET_REQUESTS


def test_reading_a_waiting_turns_timeline_writes_nothing(cycle: ProductionCycle) -> None:
    # GIVEN a turn that waits on its form, started through the run function on DynamoDB Local
    conversation = f"read-{uuid.uuid4().hex[:8]}"
    started = cycle.run_api.handle(
        http_event(
            "http_start_turn.json",
            path=f"/conversations/{conversation}/turns",
            body={"input": MEETING_ROOM.input, "agentId": MEETING_ROOM.agent_id},
            sub=DEFAULT_SUB,
        ),
        None,
    )
    assert started["statusCode"] == 200, started["body"]
    cycle.meter.reset()

    # WHEN a page polls its newest entry, and then the whole timeline, as the console does
    requests = []
    for query in ({"limit": "1"}, {}):
        answer = cycle.run_api.handle(
            http_event(
                "http_start_turn.json",
                method="GET",
                path=f"/conversations/{conversation}/messages",
                body=None,
                sub=DEFAULT_SUB,
                query=query,
            ),
            None,
        )
        assert answer["statusCode"] == 200, answer["body"]
        requests += cycle.meter.reset().requests

    # THEN the reads were reads only: no put, update or delete on any table, no write unit billed
    assert requests, "the meter saw the reads"
    assert {r.operation for r in requests} <= {"GetItem", "BatchGetItem", "Query"}, [r.operation for r in requests]
    assert sum(r.write_units for r in requests) == 0
