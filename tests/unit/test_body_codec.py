"""The body codec both DynamoDB adapters share: built and checked on plain items, S3 on moto's server."""

from __future__ import annotations

import gzip
import json
import random
import uuid
import zlib

import boto3
import pytest
from tests.support.emulators import Emulator, boto3_session_kwargs

from agentturn.aws import body_dictionary
from agentturn.aws._support import MAX_INLINE_BODY
from agentturn.aws.body_codec import BODY, BODY_REF, CORRUPT_BODY, BlobStore, BodyCodec, decode_inline, inline_body
from agentturn.errors import BodyMissingError, BodyTooLargeError

#: The Adler-32 of body_dictionary.SNAPSHOT_V1, written down when it was first used to store bodies.
SNAPSHOT_V1_ADLER32 = 0x21EC1E79


def _text(size: int) -> str:
    """JSON text of about ``size`` bytes of random hex: zlib shrinks it to about half, no further."""
    noise = random.Random(size).randbytes(size // 2 + 1).hex()
    return json.dumps({"noise": noise[:size]})


@pytest.fixture
def blobs(moto_server: Emulator) -> BlobStore:
    s3 = boto3.client("s3", endpoint_url=moto_server.endpoint_url, **boto3_session_kwargs())
    bucket = f"codec-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    return BlobStore(s3, bucket)


def _never_called() -> str:
    raise AssertionError("an inline body must not ask for an object key")


@pytest.mark.parametrize(
    ("size", "kind"),
    [(10, "S"), (99, "S"), (100, "B"), (5000, "B")],
)
def test_inline_bodies_round_trip_plain_below_the_threshold_and_zlib_from_it(size: int, kind: str) -> None:
    # GIVEN a codec that compresses from 100 bytes, and a body of ``size`` bytes
    codec = BodyCodec(compress_threshold=100, inline_limit=64 * 1024)
    text = "x" * size

    # WHEN it is encoded
    item = codec.encode(text, object_key=_never_called, what="entry 'e'")

    # THEN it is inline, as text below the threshold and as zlib bytes from it (compressed with the current
    # preset dictionary, which any zlib reads given that dictionary), and decodes to the same text
    assert list(item) == [BODY]
    assert list(item[BODY]) == [kind]
    if kind == "B":
        reader = zlib.decompressobj(zlib.MAX_WBITS, body_dictionary.CURRENT)
        assert reader.decompress(item[BODY]["B"]).decode() == text
    assert codec.decode(item, what="entry 'e'") == text


def test_a_body_compressed_before_the_dictionaries_still_decodes() -> None:
    # GIVEN a body stored as plain zlib (no preset dictionary), as every body was before them
    text = json.dumps({"status": "WAITING_FOR_USER", "messages": ["x" * 300]})
    item = {BODY: {"B": zlib.compress(text.encode(), 6)}}

    # WHEN it is decoded, THEN it reads as it was written
    assert BodyCodec().decode(item, what="entry 'e'") == text


def test_the_preset_dictionary_makes_a_snapshot_smaller_than_plain_zlib() -> None:
    # GIVEN a snapshot-shaped body: the field names every turn repeats, around words of its own
    text = json.dumps(
        {"schemaVersion": 1, "id": uuid.uuid4().hex, "status": "WAITING_FOR_USER", "phase": "TOOLS",
         "messages": [{"messageId": f"{uuid.uuid4().hex}:m:0000{i}", "type": "user", "content": f"question {i}",
                       "modelVisible": True} for i in range(3)],
         "suspension": {"type": "USER_INPUT", "correlationId": "call-1", "resumePhase": "TOOLS"}},
        separators=(",", ":"),
    )  # fmt: skip

    # WHEN it is encoded with and without the dictionary
    with_dictionary = inline_body(text, compress_threshold=1, level=6)
    plain = inline_body(text, compress_threshold=1, level=6, dictionary=None)

    # THEN the dictionary saves bytes (the vocabulary costs back-references, not literals), both decode
    assert len(with_dictionary["B"]) < len(plain["B"]) - 40
    assert decode_inline(with_dictionary) == decode_inline(plain) == text


def test_a_body_naming_an_unknown_dictionary_is_corrupt_not_misread() -> None:
    # GIVEN a body compressed with a dictionary this code does not know
    compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS, 9, zlib.Z_DEFAULT_STRATEGY, b"another vocabulary")
    item = {BODY: {"B": compressor.compress(b'{"status":"READY"}') + compressor.flush()}}

    # WHEN it is decoded, THEN it fails as a corrupt body does (the adapters then count it unreadable)
    with pytest.raises(CORRUPT_BODY):
        BodyCodec().decode(item, what="entry 'e'")


def test_the_stored_dictionaries_are_never_edited() -> None:
    # Bodies name their dictionary by its Adler-32: editing one would make every body written with it unreadable.
    assert sorted(body_dictionary.DICTIONARIES) == [zlib.adler32(body_dictionary.SNAPSHOT_V1)]
    assert zlib.adler32(body_dictionary.SNAPSHOT_V1) == SNAPSHOT_V1_ADLER32


def test_a_body_over_the_inline_limit_is_spilled_to_s3_under_the_callers_key(blobs: BlobStore) -> None:
    # GIVEN a codec with a bucket and an inline limit of 1 KB, and a body that compresses to more than that
    codec = BodyCodec(blobs, compress_threshold=100, inline_limit=1024)
    text = _text(4096)

    # WHEN it is encoded under a key the caller chose
    item = codec.encode(text, object_key=lambda: "turns/t-1/2-abc.json.gz", what="snapshot of turn 't-1'")

    # THEN the item only references the object, which is gzip of the text, and decoding reads it back
    assert item == {BODY_REF: {"S": "turns/t-1/2-abc.json.gz"}}
    stored = blobs.client.get_object(Bucket=blobs.bucket, Key="turns/t-1/2-abc.json.gz")["Body"].read()
    assert gzip.decompress(stored).decode() == text
    assert codec.reference(item) == "turns/t-1/2-abc.json.gz"
    assert codec.decode(item, what="snapshot of turn 't-1'") == text


def test_without_a_bucket_bodies_stay_inline_up_to_the_item_limit_and_beyond_it_are_refused() -> None:
    # GIVEN a codec without a bucket and a small inline limit
    codec = BodyCodec(compress_threshold=100, inline_limit=1024)

    # WHEN a body above the inline limit but within an item is encoded, THEN it stays inline
    medium = _text(4096)
    assert codec.decode(codec.encode(medium, object_key=_never_called, what="e"), what="e") == medium

    # WHEN a body larger than an item holds is encoded, THEN it is refused, naming what it is
    with pytest.raises(BodyTooLargeError, match=r"timeline entry 'big' is \d+ bytes.*configure a bucket"):
        codec.encode(_text(3 * MAX_INLINE_BODY), object_key=_never_called, what="timeline entry 'big'")


@pytest.mark.parametrize("inline_limit", [0, -1, MAX_INLINE_BODY + 1])
def test_an_inline_limit_outside_what_an_item_holds_is_refused(inline_limit: int) -> None:
    # GIVEN / WHEN a codec with an impossible inline limit is built / THEN it is refused with the value
    with pytest.raises(ValueError, match=repr(inline_limit)):
        BodyCodec(inline_limit=inline_limit)


def test_a_missing_body_is_body_missing_error_in_every_form(blobs: BlobStore) -> None:
    # GIVEN a codec with a bucket, and one without
    codec, bucketless = BodyCodec(blobs), BodyCodec()

    # WHEN an item has no body at all, THEN BodyMissingError without a key
    with pytest.raises(BodyMissingError, match="neither a body nor a body reference") as no_body:
        codec.decode({}, what="entry 'e'")
    assert no_body.value.key is None

    # WHEN an item references an object that is not there, THEN BodyMissingError naming the key
    with pytest.raises(BodyMissingError, match="gone") as gone:
        codec.decode({BODY_REF: {"S": "conversations/nothing.json.gz"}}, what="entry 'e'")
    assert gone.value.key == "conversations/nothing.json.gz"

    # WHEN the codec has no bucket to read a reference from, THEN BodyMissingError too
    with pytest.raises(BodyMissingError, match="no bucket") as unconfigured:
        bucketless.decode({BODY_REF: {"S": "k.json.gz"}}, what="entry 'e'")
    assert unconfigured.value.key == "k.json.gz"


def test_corrupt_bytes_raise_the_corrupt_body_errors(blobs: BlobStore) -> None:
    # GIVEN an inline body that is not zlib, and an S3 object that is not gzip
    codec = BodyCodec(blobs)
    blobs.client.put_object(Bucket=blobs.bucket, Key="bad.json.gz", Body=b"not gzip at all")

    # WHEN they are decoded, THEN the errors are the ones callers treat as "unreadable", never a silent result
    with pytest.raises(CORRUPT_BODY):
        codec.decode({BODY: {"B": b"not zlib"}}, what="e")
    with pytest.raises(CORRUPT_BODY):
        codec.decode({BODY: {"B": zlib.compress(b"\xff\xfe")}}, what="e")
    with pytest.raises(CORRUPT_BODY):
        codec.decode({BODY_REF: {"S": "bad.json.gz"}}, what="e")


def test_discard_deletes_an_object_and_ignores_what_it_cannot_delete(blobs: BlobStore) -> None:
    # GIVEN a spilled body
    codec = BodyCodec(blobs, compress_threshold=100, inline_limit=1024)
    item = codec.encode(_text(4096), object_key=lambda: "old.json.gz", what="e")

    # WHEN it is discarded (and so are no key and a key that does not exist)
    codec.discard(codec.reference(item))
    codec.discard(None)
    codec.discard("never-written.json.gz")

    # THEN the object is gone: reading the item is a missing body
    with pytest.raises(BodyMissingError):
        codec.decode(item, what="e")
