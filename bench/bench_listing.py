"""What the conversations list (``GET /conversations``) adds to one form cycle: requests and write units.

The same support-ticket cycle as ``bench_cycle`` (moto server, write units computed from item sizes by
``_aws_counter``, indexes included), twice per conversation: once for turns without an owner (library use:
nothing listed, as ``bench_cycle`` runs them) and once for owned turns (what the HTTP API starts: listed by
the start's own conditional write on the conversation's head item). Not collected by pytest.

    PYTHONPATH=shared:. python -m bench.bench_listing
"""

from __future__ import annotations

import uuid
from typing import Any

from agentturn import ResumeCommand, Runner, Worker
from agentturn.aws import DynamoDBChatMemory, DynamoDBTurnStore, SqsResumeQueue, parse_resume_message
from agentturn.demo import demo_agents
from bench._aws_counter import AwsCounter
from bench._aws_setup import client, ours_resources
from bench._moto import MotoServer, use_fake_aws_env

OWNER = "u1"
FORM_DATA = {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}


def main() -> None:
    use_fake_aws_env()
    with MotoServer() as moto:
        plain = client("dynamodb", moto.endpoint_url)
        counter = AwsCounter(accounting_client=plain)
        r = ours_resources(moto.endpoint_url, counter, plain)
        store = DynamoDBTurnStore(r.turns_table, client=r.dynamodb, s3_client=r.s3, bucket=r.bucket)
        memory = DynamoDBChatMemory(r.conversations_table, client=r.dynamodb, s3_client=r.s3, bucket=r.bucket)
        queue = SqsResumeQueue(r.queue_url, client=r.sqs)
        agents = demo_agents()
        agent = next(a for a in agents if a.id == "support-agent")
        runner = Runner(store=store, chat_memory=memory, agents=agents)
        worker = Worker(runner)

        def cycle(conversation: str, metadata: dict[str, Any] | None) -> None:
            waiting = runner.run(agent, conversation, "create a high priority login incident ticket", metadata=metadata)
            assert waiting.suspension is not None
            command = ResumeCommand.user_input(waiting.suspension.correlation_id, FORM_DATA).with_metadata(
                "requestId", uuid.uuid4().hex
            )
            accepted = runner.submit_resume(waiting.id, command)
            queue.enqueue(accepted.id, accepted.version)
            (message,) = r.sqs.receive_message(QueueUrl=r.queue_url, MaxNumberOfMessages=1)["Messages"]
            r.sqs.delete_message(QueueUrl=r.queue_url, ReceiptHandle=message["ReceiptHandle"])
            worker.process(parse_resume_message(message["Body"]).turn_id)

        for label, metadata in (("no owner (not listed)", None), ("owned (listed)", {"ownerId": OWNER})):
            conversation = f"{OWNER}/{uuid.uuid4().hex[:8]}"
            for number in (1, 2):
                counter.accounting = True
                counter.reset()
                cycle(conversation, metadata)
                figures = counter.reset().as_dict()
                counter.accounting = False
                print(
                    f"{label}, cycle {number} of the conversation: DynamoDB requests {figures['dynamodb_requests']}, "
                    f"write units {figures['write_units']} (table {figures['write_units_table']}, "
                    f"index {figures['write_units_index']})"
                )
        listed = memory.list_conversations(OWNER, 10).conversations
        assert [c.title for c in listed] == ["create a high priority login incident ticket"], listed


if __name__ == "__main__":
    main()
