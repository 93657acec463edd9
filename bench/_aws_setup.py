"""Resources on the emulator for both systems, and their clients (each attached to the counter)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

from bench._aws_counter import AwsCounter

REGION = "us-east-1"


def session() -> boto3.Session:
    return boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION)


def client(service: str, endpoint_url: str, *, config: Config | None = None) -> Any:
    return session().client(service, endpoint_url=endpoint_url, config=config)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass
class OursResources:
    dynamodb: Any
    s3: Any
    sqs: Any
    turns_table: str
    conversations_table: str
    idempotency_table: str
    bucket: str
    queue_url: str

    def env(self) -> dict[str, str]:
        from agentturn.aws import TableNames

        names = TableNames(
            turns_table=self.turns_table,
            conversations_table=self.conversations_table,
            idempotency_table=self.idempotency_table,
            snapshot_bucket=self.bucket,
            resume_queue_url=self.queue_url,
        )
        return names.to_env()


def ours_resources(endpoint_url: str, counter: AwsCounter, plain: Any) -> OursResources:
    """agentturn's tables (``create_tables``, exactly as deployed), a snapshot bucket and the resume queue."""
    from agentturn.aws import TableNames, create_tables
    from agentturn.aws._support import client_config

    names = TableNames(
        turns_table=unique("bench-turns"),
        conversations_table=unique("bench-conversations"),
        idempotency_table=unique("bench-idempotency"),
        snapshot_bucket=unique("bench-snapshots"),
    )
    create_tables(plain, names)
    s3_plain = client("s3", endpoint_url)
    assert names.snapshot_bucket is not None
    s3_plain.create_bucket(Bucket=names.snapshot_bucket)
    sqs_plain = client("sqs", endpoint_url)
    queue_url = sqs_plain.create_queue(QueueName=unique("bench-resume"))["QueueUrl"]
    # The adapters' own client configuration (retries, pool), each client counted.
    config = client_config()
    return OursResources(
        dynamodb=counter.attach(client("dynamodb", endpoint_url, config=config)),
        s3=counter.attach(client("s3", endpoint_url, config=config)),
        sqs=counter.attach(client("sqs", endpoint_url, config=config)),
        turns_table=names.turns_table,
        conversations_table=names.conversations_table,
        idempotency_table=names.idempotency_table,
        bucket=names.snapshot_bucket,
        queue_url=queue_url,
    )


def langgraph_saver(endpoint_url: str, counter: AwsCounter, plain: Any, *, compression: bool = False) -> Any:
    """``DynamoDBSaver`` on its single table (PK/SK strings, as its CloudFormation sample creates it), with S3
    offloading configured (so its large-checkpoint path is the production one), both clients counted.
    ``compression`` turns on its checkpoint compression (gzip of checkpoints over 1 KB when it saves ≥ 10 %):
    its best configuration for cost."""
    from langgraph_checkpoint_aws import DynamoDBSaver

    table = unique("bench-langgraph-checkpoints")
    plain.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    plain.get_waiter("table_exists").wait(TableName=table)
    bucket = unique("bench-langgraph-offload")
    client("s3", endpoint_url).create_bucket(Bucket=bucket)
    saver = DynamoDBSaver(
        table_name=table,
        session=session(),
        region_name=REGION,
        endpoint_url=endpoint_url,
        s3_offload_config={"bucket_name": bucket, "endpoint_url": endpoint_url},
        enable_checkpoint_compression=compression,
    )
    counter.attach(saver.client)
    s3 = saver.storage.s3_client
    if s3 is not None:
        counter.attach(s3)
    return saver
