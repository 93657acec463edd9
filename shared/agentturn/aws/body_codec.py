"""The body of a stored item (a turn snapshot, a timeline entry), for both DynamoDB adapters.

A body is text (what a :class:`~agentturn.ports.serializer.Serializer` made of the model). In an item it is one of:

``body`` ``S``      the text itself, when it is smaller than ``compress_threshold``
``body`` ``B``      the text zlib-compressed, up to ``inline_limit`` bytes; with a preset dictionary of
                    :mod:`agentturn.aws.body_dictionary` (named in the zlib header), or without one
                    (bodies written before the dictionaries)
``bodyRef`` ``S``   the key of a gzip object in S3 (``aws s3 cp … - | gunzip`` reads it), when larger

:meth:`BodyCodec.encode` writes the S3 object *before* the caller writes the item, so an item never points
to an object that is not there yet; the caller chooses the key (each adapter has its own rule for keeping a
losing writer from overwriting the winner's object). :meth:`BodyCodec.decode` raises
:class:`~agentturn.errors.BodyMissingError` for a body it cannot find (no attribute, no bucket to read the
reference from, or an object that is gone): one meaning for "no body", whatever the adapter. A missing body
is never ``None``, because ``None`` is silently passed on until something far away fails on it; the error
names the item and the key, and a caller that has a reason to retry (a concurrent save replaced the object)
catches it by name. The codec needs no DynamoDB: items are plain dicts.
"""

from __future__ import annotations

import gzip
import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from botocore.exceptions import BotoCoreError, ClientError

from agentturn.aws import body_dictionary
from agentturn.aws._support import MAX_INLINE_BODY, AttributeValue, Item, as_str, error_code
from agentturn.aws._support import s3_client as default_s3_client
from agentturn.errors import BodyMissingError, BodyTooLargeError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_log = logging.getLogger("agentturn.aws.body_codec")

BODY: Final = "body"
BODY_REF: Final = "bodyRef"


#: The FDICT bit of a zlib header's second byte: a 4-byte DICTID (the dictionary's Adler-32) follows.
_FDICT: Final = 0x20


def inline_body(
    text: str, *, compress_threshold: int, level: int, dictionary: bytes | None = body_dictionary.CURRENT
) -> AttributeValue:
    """A body as an attribute value: plain text (``S``) when small, zlib (``B``) from ``compress_threshold``,
    with ``dictionary`` as its preset dictionary (``None``: none)."""
    raw = text.encode()
    if len(raw) < compress_threshold:
        return {"S": text}
    if dictionary is None:
        return {"B": zlib.compress(raw, level)}
    compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS, 9, zlib.Z_DEFAULT_STRATEGY, dictionary)
    return {"B": compressor.compress(raw) + compressor.flush()}


def inflate(data: bytes) -> bytes:
    """The bytes of a zlib stream, with the preset dictionary its header names (``zlib.error`` for a
    dictionary that is not one of :data:`~agentturn.aws.body_dictionary.DICTIONARIES`, or corrupt bytes)."""
    if len(data) < 6 or not data[1] & _FDICT:
        return zlib.decompress(data)
    dictionary_id = int.from_bytes(data[2:6], "big")
    dictionary = body_dictionary.DICTIONARIES.get(dictionary_id)
    if dictionary is None:
        raise zlib.error(f"the body names an unknown preset dictionary {dictionary_id:#010x}")
    decompressor = zlib.decompressobj(zlib.MAX_WBITS, dictionary)
    out = decompressor.decompress(data)
    if not decompressor.eof or decompressor.unused_data:
        raise zlib.error("the compressed body is truncated or has trailing bytes")
    return out


def attribute_size(value: AttributeValue) -> int:
    """DynamoDB's size of an ``S``, ``B`` or ``N`` value (what write units are billed on), in bytes."""
    if "B" in value:
        return len(value["B"])
    if "N" in value:
        digits = str(value["N"]).lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    return len(value.get("S", "").encode())


def decode_inline(value: AttributeValue) -> str:
    """The text of an inline body; ``zlib.error`` / ``UnicodeDecodeError`` for corrupt bytes."""
    if "S" in value:
        return str(value["S"])
    return inflate(bytes(value["B"])).decode()


@dataclass(frozen=True)
class BlobStore:
    """Bodies too large for an item, as gzip objects in S3."""

    client: S3Client
    bucket: str

    def put(self, key: str, text: str, *, level: int) -> int:
        data = gzip.compress(text.encode(), compresslevel=level, mtime=0)
        self.client.put_object(
            Bucket=self.bucket, Key=key, Body=data, ContentType="application/json", ContentEncoding="gzip"
        )
        return len(data)

    def get(self, key: str) -> str:
        """The object's text; :class:`BodyMissingError` if there is no such object."""
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if error_code(exc) in ("NoSuchKey", "404"):
                raise BodyMissingError(f"the S3 body {key!r} is gone", key=key) from None
            raise
        data: bytes = response["Body"].read()
        return gzip.decompress(data).decode()

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=key)


@dataclass(frozen=True)
class BodyCodec:
    """Encode, decode and discard bodies (see the module). ``blobs`` is ``None`` without a bucket: bodies
    then stay inline up to the item limit, and beyond it :class:`BodyTooLargeError`."""

    blobs: BlobStore | None = None
    compress_threshold: int = 4096
    inline_limit: int = 64 * 1024
    level: int = 6

    @classmethod
    def for_bucket(
        cls,
        bucket: str | None,
        s3_client: S3Client | None,
        *,
        compress_threshold: int,
        inline_limit: int,
        level: int,
    ) -> BodyCodec:
        """The codec of a table whose large bodies spill to ``bucket`` (none: they stay inline), through
        ``s3_client`` or the default S3 client."""
        blobs = None
        if bucket is not None:
            blobs = BlobStore(s3_client if s3_client is not None else default_s3_client(), bucket)
        return cls(blobs, compress_threshold=compress_threshold, inline_limit=inline_limit, level=level)

    def __post_init__(self) -> None:
        if not 0 < self.inline_limit <= MAX_INLINE_BODY:
            raise ValueError(f"inline_limit must be in 1..{MAX_INLINE_BODY} bytes, not {self.inline_limit!r}")

    @property
    def spills(self) -> bool:
        """Whether large bodies go to S3 (a bucket is configured)."""
        return self.blobs is not None

    @staticmethod
    def has_body(item: Item) -> bool:
        return BODY in item or BODY_REF in item

    @staticmethod
    def reference(item: Item) -> str | None:
        """The S3 key ``item`` points to, if its body is spilled."""
        return as_str(item.get(BODY_REF))

    def encode(self, text: str, *, object_key: Callable[[], str], what: str) -> Item:
        """``{"body": …}`` or ``{"bodyRef": …}`` for ``text``; a spilled body's object is written first, under
        ``object_key()``. ``what`` names the item in errors ("snapshot of turn 't-1'")."""
        value = inline_body(text, compress_threshold=self.compress_threshold, level=self.level)
        size = attribute_size(value)
        if size <= self.inline_limit or (self.blobs is None and size <= MAX_INLINE_BODY):
            return {BODY: value}
        if self.blobs is None:
            raise BodyTooLargeError(
                f"{what} is {size} bytes compressed, more than a DynamoDB item holds; configure a bucket"
            )
        key = object_key()
        self.blobs.put(key, text, level=self.level)
        return {BODY_REF: {"S": key}}

    def decode(self, item: Item, *, what: str) -> str:
        """The text of ``item``'s body. :class:`BodyMissingError` when there is none to read; ``zlib.error``,
        ``gzip.BadGzipFile``, ``EOFError`` or ``UnicodeDecodeError`` when its bytes are corrupt."""
        value = item.get(BODY)
        if value is not None:
            return decode_inline(value)
        key = self.reference(item)
        if key is None:
            raise BodyMissingError(f"{what} has neither a body nor a body reference")
        if self.blobs is None:
            raise BodyMissingError(f"the body of {what} is in S3 ({key!r}) but no bucket is configured", key=key)
        try:
            return self.blobs.get(key)
        except BodyMissingError:
            raise BodyMissingError(f"the S3 body {key!r} of {what} is gone", key=key) from None

    def discard(self, key: str | None) -> None:
        """Best effort: delete an S3 body a write proved unreferenced. A leak costs storage, not correctness."""
        if key is None or self.blobs is None:
            return
        try:
            self.blobs.delete(key)
        except (ClientError, BotoCoreError) as exc:
            _log.warning("could not delete unreferenced body object %r: %s", key, exc)


#: What a body whose bytes are corrupt raises from :meth:`BodyCodec.decode` (transport errors are none of these).
CORRUPT_BODY: Final = (zlib.error, gzip.BadGzipFile, EOFError, UnicodeDecodeError)
