"""The zlib preset dictionaries that stored bodies are compressed with (:mod:`agentturn.aws.body_codec`).

Why: DynamoDB bills a write one unit per started KB of the whole item, and an update is billed on the larger
of the old and the new item. A turn snapshot is a few KB of JSON whose every field name and enum value
repeats from turn to turn; plain zlib must spell each of them out once per body (it has seen nothing
before), and that alone keeps a waiting turn above 1 KB. A preset dictionary holding that vocabulary —
field names in the order the models serialize them, enum values, the JSON Schema words of a form — lets the
first occurrence be a back-reference too: a waiting support-ticket turn goes from ~1.1 KB to ~0.6 KB
compressed, its item from two write units to one. Timeline entries are the same messages and cards.

A dictionary is part of the stored format: a body compressed with it names it by its Adler-32 (the zlib
header's DICTID), and decoding looks it up in :data:`DICTIONARIES`. So a dictionary is never edited: a
better one is added under a new name and becomes the one :data:`CURRENT` names; the old one stays for the
bodies written with it. The text is generic on purpose (no agent's own words): it describes the shape of
any snapshot, not one demo's content. The most frequent strings come last (zlib prefers near matches).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Final

_VOCABULARY_V1: Final = (
    '"type":"integer","type":"number","type":"boolean","type":"array","items":{},"format":"date-time",'
    '"format":"date","format":"email","minimum":0,"maximum":,"maxLength":,"pattern":"","default":null,'
    '"READY","RUNNING","WAITING_FOR_APPROVAL","FAILED","CANCELLED","MAX_ITERATIONS_REACHED",'
    '"MAX_STEPS_REACHED","BUDGET_EXCEEDED","MODEL","TOOL_APPROVAL","inputTarget":"MODEL",'
    '{"type":"agent_approval","actionId":"","toolCallId":"","toolName":"","arguments":{},"status":"PENDING",'
    '"actions":["APPROVE","REJECT"],"APPROVED","REJECTED","DECLINED","EXPIRED","DECLINE",'
    '"error":{"type":"","message":""},"retry":{"attempts":1,"notBefore":""},'
)
_WAITING_V1: Final = (
    '{"schemaVersion":1,"id":"","conversationId":"","agentId":"","agentVersion":"","status":"WAITING_FOR_USER",'
    '"phase":"TOOLS","input":"","messages":[{"messageId":":m:00000","turnId":"","sortKey":"##00000",'
    '"type":"user","content":"","modelVisible":true},{"messageId":":m:00001","turnId":"","sortKey":"##00001",'
    '"type":"ai","content":"","toolCalls":[{"id":"","name":"","arguments":{}}],"modelVisible":true}],'
    '"pendingToolCalls":[{"id":"","name":"","arguments":{}}],"toolStates":{"call-1":{"counted":true,'
    '"approved":false,"submittedFormData":null,"formRequested":true}},"suspension":{"type":"USER_INPUT",'
    '"correlationId":"call-1","message":"","resumePhase":"TOOLS","metadata":{"formKey":"","schema":{'
    '"type":"object","title":"","properties":{"":{"type":"string","title":"","minLength":1},"":{'
    '"type":"string","title":"","enum":[]}},"required":[]},"toolName":"","inputTarget":"TOOL",'
    '"redactValues":false},"expiresAt":null,"onExpiry":"return_to_model"},"cards":[{"messageId":":input:call-1",'
    '"turnId":"","sortKey":"##00001.00","type":"agent_form","actionId":"call-1","formKey":"","description":"",'
    '"schema":{"type":"object","title":"","properties":{"":{"type":"string","title":"","minLength":1},"":{'
    '"type":"string","title":"","enum":[]}},"required":[]},"inputTarget":"TOOL","toolName":"",'
    '"status":"PENDING","actions":["SUBMIT"],"submittedValues":null,"submittedBy":null,"submittedAt":null,'
    '"valuesRedacted":false,"declineReason":null,"expiresAt":null,"modelVisible":false,"version":1}],'
    '"finalOutput":null,"error":null,"iterationCount":1,"stepCount":2,"toolCallCount":1,"metadata":{'
    '"ownerId":""},"version":3,"cancelRequested":false,"createdAt":"","updatedAt":"","eventSequence":1,'
    '"projection":{"messages":2,"cards":{}},"acceptedRequests":{},"inputTimeout":null,"retainUntil":null,'
    '"retry":null}'
)
_COMPLETED_V1: Final = (
    '{"schemaVersion":1,"id":"","conversationId":"","agentId":"","agentVersion":"","status":"COMPLETED",'
    '"phase":"FINISHED","input":"","messages":[{"messageId":":m:00000","turnId":"","sortKey":"##00000",'
    '"type":"user","content":"","modelVisible":true},{"messageId":":m:00001","turnId":"","sortKey":"##00001",'
    '"type":"ai","content":"","toolCalls":[{"id":"","name":"","arguments":{}}],"modelVisible":true},'
    '{"messageId":":m:00002","turnId":"","sortKey":"##00002","type":"tool","toolCallId":"call-1","content":{},'
    '"toolName":"","modelVisible":true},{"messageId":":m:00003","turnId":"","sortKey":"##00003","type":"ai",'
    '"content":"","toolCalls":[],"modelVisible":true}],"pendingToolCalls":[],"toolStates":{"call-1":{'
    '"counted":true,"approved":false,"submittedFormData":null,"formRequested":true}},"suspension":null,'
    '"cards":[{"messageId":":input:call-1","turnId":"","sortKey":"##00001.00","type":"agent_form",'
    '"actionId":"call-1","formKey":"","description":"","schema":{"type":"object","title":"","properties":{"":{'
    '"type":"string","title":"","enum":[]}},"required":[]},"inputTarget":"TOOL","toolName":"",'
    '"status":"SUBMITTED","actions":[],"submittedValues":null,"submittedBy":"","submittedAt":"",'
    '"valuesRedacted":false,"declineReason":null,"expiresAt":null,"modelVisible":false,"version":2}],'
    '"finalOutput":"","error":null,"iterationCount":2,"stepCount":4,"toolCallCount":1,"metadata":{'
    '"ownerId":""},"version":6,"cancelRequested":false,"createdAt":"","updatedAt":"","eventSequence":2,'
    '"projection":{"messages":3,"cards":{":input:call-1":2}},"acceptedRequests":{"":{"fingerprint":"",'
    '"actionId":"call-1","version":4,"acceptedAt":""}},"inputTimeout":null,"retainUntil":null,"retry":null}'
)

#: Snapshots and timeline entries, version 1.
SNAPSHOT_V1: Final = (_VOCABULARY_V1 + _WAITING_V1 + _COMPLETED_V1).encode()

#: Every dictionary a stored body may name, by its Adler-32 (what a zlib header carries as DICTID).
DICTIONARIES: Final[Mapping[int, bytes]] = {zlib.adler32(d): d for d in (SNAPSHOT_V1,)}
#: The dictionary new bodies are compressed with.
CURRENT: Final = SNAPSHOT_V1
