"""DynamoDB tables built from :mod:`agentturn.aws.tables`, the one place their keys and indexes are described.

Nothing about a table's shape is written here: keys, attribute types, indexes, projections, the TTL
attribute, billing and point-in-time recovery all come from the :class:`TableDefinition` the adapters and
the local emulator use too, so the deployed tables cannot drift from what the code queries.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from agentturn.aws.tables import IndexDefinition, KeyAttribute, TableDefinition
from agentturn.cdk.settings import TableProps

_ATTRIBUTE_TYPES: Final = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_PROJECTIONS: Final = {
    "ALL": dynamodb.ProjectionType.ALL,
    "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY,
    "INCLUDE": dynamodb.ProjectionType.INCLUDE,
}
_BILLING: Final = {"PAY_PER_REQUEST": dynamodb.BillingMode.PAY_PER_REQUEST}


def _attribute(key: KeyAttribute) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=_ATTRIBUTE_TYPES[key.type])


def _non_key(index: IndexDefinition) -> list[str] | None:
    return list(index.non_key_attributes) if index.projection == "INCLUDE" else None


def build_table(
    scope: Construct,
    definition: TableDefinition,
    *,
    retain: bool,
    props: TableProps | None = None,
    stream: dynamodb.StreamViewType | None = None,
) -> dynamodb.Table:
    """The table of ``definition``; its construct id is the definition's logical name.

    ``retain``: the table survives a stack deletion and has deletion protection (production); otherwise it
    is deleted with the stack (dev stacks). The CloudFormation-generated name is used (no fixed name), so
    several stacks can live in one account; the Lambdas get it from their environment. ``props`` turns
    point-in-time recovery off (the definition's default is on) or sets deletion protection explicitly.
    """
    props = props or TableProps()
    deletion_protection = retain if props.deletion_protection is None else props.deletion_protection
    table = dynamodb.Table(
        scope,
        definition.logical_name,
        partition_key=_attribute(definition.partition_key),
        sort_key=_attribute(definition.sort_key) if definition.sort_key is not None else None,
        billing_mode=_BILLING[definition.billing_mode],
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=definition.point_in_time_recovery and props.point_in_time_recovery
        ),
        time_to_live_attribute=definition.ttl_attribute,
        # Encrypted at rest with the AWS-owned key (free, no KMS permissions for the functions to hold).
        encryption=dynamodb.TableEncryption.DEFAULT,
        deletion_protection=deletion_protection,
        stream=stream,
        removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
    )
    for index in definition.global_indexes:
        table.add_global_secondary_index(
            index_name=index.name,
            partition_key=_attribute(index.partition_key),
            sort_key=_attribute(index.sort_key) if index.sort_key is not None else None,
            projection_type=_PROJECTIONS[index.projection],
            non_key_attributes=_non_key(index),
        )
    for index in definition.local_indexes:
        if index.partition_key != definition.partition_key or index.sort_key is None:
            raise ValueError(
                f"local index {index.name!r} of {definition.logical_name!r} must share the table's partition key "
                "and have a sort key"
            )
        table.add_local_secondary_index(
            index_name=index.name,
            sort_key=_attribute(index.sort_key),
            projection_type=_PROJECTIONS[index.projection],
            non_key_attributes=_non_key(index),
        )
    return table


def index_arns(table: dynamodb.ITable, definition: TableDefinition, *names: str) -> list[str]:
    """ARNs of the named indexes (checked against the definition: a typo fails the synth, not a Query)."""
    known = {index.name for index in (*definition.global_indexes, *definition.local_indexes)}
    unknown = sorted(set(names) - known)
    if unknown:
        raise ValueError(f"{definition.logical_name!r} has no index {unknown!r}; it has {sorted(known)!r}")
    return [f"{table.table_arn}/index/{name}" for name in names]
