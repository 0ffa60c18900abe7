"""Deletion vectors: descriptors, Z85, reading and writing the Delta DV formats.

A deletion vector (DV) is the set of row indexes (0-based positions in a data file) that
are logically deleted. It is a 64-bit RoaringBitmap serialised as::

    magic number 1681511377 (4 bytes, little-endian)
    numBuckets (8 bytes LE), then per bucket: key (4 bytes LE) + a portable 32-bit roaring

(CRoaring's "portable" 64-bit format, which ``pyroaring.BitMap64.serialize`` writes and
reads byte for byte). A DV is stored inline in the log (``storageType 'i'``: the bitmap
bytes in Z85) or in a DV file (``'u'``: path derived from a UUID under the table root;
``'p'``: an absolute URI). A DV file is one format-version byte (1) followed by any number
of DVs, each framed as ``dataSize`` (4 bytes, BIG-endian), the bitmap bytes (magic
included, ``dataSize == sizeInBytes``) and a CRC-32 of those bytes (4 bytes, BIG-endian).
A descriptor's ``offset`` points at the ``dataSize`` field.

Guarantees:

* :func:`load_deleted_rows` returns the exact, sorted, duplicate-free row indexes of a DV
  or raises :class:`~delta_pyds.errors.DeletionVectorError` naming the DV and the problem.
  Stored DVs are checked for: a readable file, an offset and size inside the file, the
  framed size equal to ``sizeInBytes``, the CRC-32, the magic number, a well-formed bitmap,
  row indexes below 2**63, and the bitmap's cardinality equal to ``cardinality``; inline
  DVs for valid Z85, the length, magic, bitmap and cardinality. The cardinality and the
  largest row index are checked against the data file's row count (when the caller knows it) and
  :data:`DEFAULT_MAX_DV_ROWS` before the bitmap is expanded: memory stays bounded by
  the file's rows whatever a descriptor or bitmap claims. The format-version byte
  is also checked when the DV starts in the first 4 KiB of its file (always, for the
  usual one-DV files), where it comes with the same read.
* :func:`z85_decode` rejects characters outside the Z85 alphabet and 5-character groups
  that overflow 32 bits, except for one recognised tail form: a final group starting with
  1-3 ``'#'`` (the Rust ``z85`` crate's padding, used by delta-rs/kernel-rs writers; it
  cannot clash with a real group, which can never start with ``'#'``). Inline DVs written
  the Delta (Java) way, zero-padded to 4 bytes, are truncated to ``sizeInBytes``.
* The writers produce what Delta Spark writes: :func:`z85_encode` zero-pads to a multiple
  of 4 bytes, UUIDs are encoded from their 16 big-endian bytes into 20 characters, and
  :func:`write_deletion_vectors` writes one new ``deletion_vector_<uuid>.bin`` file and
  returns ``'u'`` descriptors whose offsets, sizes and cardinalities match that file.
* :func:`with_deletion_vector` is the one way an add action gets a DV: the descriptor
  attached and its statistics loosened (``tightBounds: false``).
* No pyspark import; only numpy, pyroaring and the package's storage layer.
"""

from __future__ import annotations

import re
import uuid
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

import numpy as np
from pyroaring import BitMap64

from delta_pyds.errors import DeletionVectorError, StoreFaultError
from delta_pyds.protocol.paths import canonical, unsafe_reason
from delta_pyds.protocol.stats import loosen_bounds

__all__ = [
    "MAGIC_NUMBER",
    "DeletionVectorDescriptor",
    "store_deletion_vectors",
    "z85_encode",
    "z85_decode",
    "load_deleted_rows",
    "deserialize_deleted_rows",
    "keep_mask",
    "serialize_deleted_rows",
    "inline_descriptor",
    "write_deletion_vectors",
]

MAGIC_NUMBER = 1681511377  # portable RoaringBitmapArray format (the only one allowed in DVs)
_NATIVE_MAGIC_NUMBER = 1681511376  # Delta's JVM-only "native" format
FILE_FORMAT_VERSION = 1
_UUID_CHARS = 20  # a 16-byte UUID is 4 Z85 groups
_VERSION_CHECK_WINDOW = 4096  # read from byte 0 (and check the version) when offset <= this
_INT32_MAX = 2**31 - 1  # offsets and sizes are Java ints in the protocol
_ROW_LIMIT = 2**63  # bucket keys must have a 0 most significant bit
# Rows a DV may delete (1 GiB once expanded into uint64 row positions); readers also pass
# the data file's real row count, which no row index may reach.
DEFAULT_MAX_DV_ROWS = 2**27
_PREFIX_RE = re.compile(r"[A-Za-z0-9]*")


class DVStorage(Protocol):
    """What deletion vectors need of the table's storage
    (:class:`delta_pyds.storage.store.Storage` has it)."""

    root: str

    def join(self, *parts: str) -> str: ...
    def resolve(self, path: str) -> str: ...
    def read_range(self, path: str, start: int, length: int) -> bytes: ...
    def write_bytes(self, path: str, data: bytes) -> None: ...


_Z85_ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_CHARS = np.frombuffer(_Z85_ALPHABET, dtype=np.uint8)
_Z85_VALUES = np.full(256, 255, dtype=np.uint8)
_Z85_VALUES[_Z85_CHARS] = np.arange(85, dtype=np.uint8)
_POWERS = np.array([85**4, 85**3, 85**2, 85, 1], dtype=np.uint64)


# -- Z85 ------------------------------------------------------------------------------
def z85_encode(data: bytes) -> str:
    """Z85 of ``data``, zero-padded to a multiple of 4 bytes (as Delta Spark pads)."""
    data = bytes(data)
    data += b"\0" * (-len(data) % 4)
    words = np.frombuffer(data, dtype=">u4").astype(np.uint64)
    digits = (words[:, None] // _POWERS) % np.uint64(85)
    text: str = _Z85_CHARS[digits.astype(np.intp)].tobytes().decode("ascii")
    return text


def z85_decode(text: str) -> bytes:
    """Bytes of a Z85 string (length a multiple of 5; 4 bytes per 5 characters).

    A last group of the form ``'#' * k + digits`` (k = 1..3) decodes to ``4 - k`` bytes
    (the Rust ``z85`` crate's padding). Raises :class:`DeletionVectorError` otherwise.
    """
    try:
        raw = text.encode("ascii")
    except (UnicodeEncodeError, AttributeError):
        raise DeletionVectorError(f"not valid Z85 (non-ASCII or not a string): {text!r}") from None
    if len(raw) % 5:
        raise DeletionVectorError(f"not valid Z85: length {len(raw)} is not a multiple of 5: {text!r}")
    digits = _Z85_VALUES[np.frombuffer(raw, dtype=np.uint8)]
    bad = np.flatnonzero(digits == 255)
    if bad.size:
        raise DeletionVectorError(f"not valid Z85: character {text[bad[0]]!r} at position {bad[0]}: {text!r}")
    groups = digits.reshape(-1, 5).astype(np.uint64)
    tail = b""
    if raw and raw[-5] == ord("#"):
        missing = len(raw[-5:]) - len(raw[-5:].lstrip(b"#"))
        value = 0
        for d in groups[-1, missing:]:
            value = value * 85 + int(d)
        if missing > 3 or value >= 256 ** (4 - missing):
            raise DeletionVectorError(f"not valid Z85: bad final group {text[-5:]!r}: {text!r}")
        tail = value.to_bytes(4 - missing, "big")
        groups = groups[:-1]
    values = (groups * _POWERS).sum(axis=1, dtype=np.uint64)
    over = np.flatnonzero(values > 0xFFFFFFFF)
    if over.size:
        i = int(over[0]) * 5
        raise DeletionVectorError(
            f"not valid Z85: group {text[i : i + 5]!r} at position {i} overflows 32 bits: {text!r}"
        )
    decoded: bytes = values.astype(">u4").tobytes() + tail
    return decoded


def _encode_uuid(value: uuid.UUID) -> str:
    return z85_encode(value.bytes)


def _decode_uuid(text: str) -> uuid.UUID:
    data = z85_decode(text)
    if len(data) != 16:
        raise DeletionVectorError(f"{text!r} does not encode a 16-byte UUID")
    return uuid.UUID(bytes=data)


# -- descriptor -----------------------------------------------------------------------
@dataclass(frozen=True)
class DeletionVectorDescriptor:
    """The ``deletionVector`` struct of an add/remove action."""

    storage_type: str  # 'u' (relative, UUID-named file), 'p' (absolute path), 'i' (inline)
    path_or_inline_dv: str
    offset: int | None  # position of the DV's size field in its file; None when inline
    size_in_bytes: int  # bitmap bytes incl. magic (before Z85 for inline DVs)
    cardinality: int  # number of deleted rows

    def __post_init__(self) -> None:
        if self.storage_type not in ("u", "p", "i"):
            raise DeletionVectorError(f"unknown deletion vector storageType {self.storage_type!r}")
        if not isinstance(self.path_or_inline_dv, str) or not self.path_or_inline_dv:
            raise DeletionVectorError(f"deletion vector has no pathOrInlineDv: {self!r}")
        for name in ("size_in_bytes", "cardinality") + (("offset",) if self.offset is not None else ()):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise DeletionVectorError(f"deletion vector {name} must be a non-negative int: {self!r}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeletionVectorDescriptor:
        """From the log's camelCase mapping; ``offset`` may be missing or None."""
        try:
            offset = d.get("offset")
            return cls(
                storage_type=d["storageType"],
                path_or_inline_dv=d["pathOrInlineDv"],
                offset=None if offset is None else int(offset),
                size_in_bytes=int(d["sizeInBytes"]),
                cardinality=int(d["cardinality"]),
            )
        except KeyError as exc:
            raise DeletionVectorError(f"deletion vector descriptor lacks {exc.args[0]!r}: {dict(d)!r}") from None
        except (TypeError, ValueError) as exc:
            raise DeletionVectorError(f"malformed deletion vector descriptor {dict(d)!r}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The log's camelCase form (``offset`` left out when None, as the protocol says)."""
        out: dict[str, Any] = {"storageType": self.storage_type, "pathOrInlineDv": self.path_or_inline_dv}
        if self.offset is not None:
            out["offset"] = self.offset
        out["sizeInBytes"] = self.size_in_bytes
        out["cardinality"] = self.cardinality
        return out

    @property
    def unique_id(self) -> str:
        """``<storageType><pathOrInlineDv>`` plus ``@<offset>`` when the offset is set."""
        base = self.storage_type + self.path_or_inline_dv
        return base if self.offset is None else f"{base}@{self.offset}"

    def absolute_path(self, storage: DVStorage) -> str | None:
        """The DV file's filesystem path (None for an inline DV)."""
        if self.storage_type == "i":
            return None
        if self.storage_type == "u":
            text = self.path_or_inline_dv
            if len(text) < _UUID_CHARS:
                raise DeletionVectorError(
                    f"relative deletion vector path {text!r} is shorter than a {_UUID_CHARS}-character UUID"
                )
            prefix, encoded = text[:-_UUID_CHARS], text[-_UUID_CHARS:]
            if "/" in prefix or "\\" in prefix or ".." in prefix:
                raise DeletionVectorError(
                    f"relative deletion vector path {text!r} has a prefix {prefix!r} that would leave "
                    "the table directory; the protocol allows only a random alphanumeric prefix"
                )
            name = f"deletion_vector_{_decode_uuid(encoded)}.bin"
            return storage.join(prefix, name) if prefix else storage.join(name)
        # 'p': an absolute, URI-encoded path; a relative one is read below the root only
        path = canonical(self.path_or_inline_dv, storage.root)
        reason = unsafe_reason(path)
        if reason is not None:
            raise DeletionVectorError(f"deletion vector path {self.path_or_inline_dv!r} {reason}")
        return storage.resolve(path)


# -- reading --------------------------------------------------------------------------
def with_deletion_vector(add: Mapping[str, Any], dv: DeletionVectorDescriptor) -> dict[str, Any]:
    """A copy of the add action ``add`` whose rows ``dv`` now hides: the descriptor attached
    and the statistics, when there are any, marked ``tightBounds: false`` (their bounds may
    now be wider than the visible rows); statistics that are not a JSON object are dropped.
    Used by every writer that adds a deletion vector to a file (DELETE, UPDATE, MERGE,
    replaceWhere)."""
    out = dict(add)
    out["deletionVector"] = dv.to_dict()
    if out.get("stats"):
        loose = loosen_bounds(out["stats"])
        if loose is None:
            out.pop("stats")
        else:
            out["stats"] = loose
    return out


def load_deleted_rows(
    storage: DVStorage | None, descriptor: DeletionVectorDescriptor | Mapping[str, Any], *, max_rows: int | None = None
) -> np.ndarray:
    """The sorted deleted row indexes (``numpy.uint64``) of one DV, fully verified.

    ``storage`` is the table's :class:`~delta_pyds.storage.store.Storage` (unused for inline DVs).
    ``max_rows`` is the number of rows of the data file when known (Parquet footer,
    ``numRecords``): no row index may reach it. In any case at most
    :data:`DEFAULT_MAX_DV_ROWS` rows are expanded. The bitmap's cardinality is checked against the descriptor and
    the bound *before* it is expanded into an array, so a small file claiming billions
    of rows costs neither the memory nor the time of expanding them.
    """
    if not isinstance(descriptor, DeletionVectorDescriptor):
        descriptor = DeletionVectorDescriptor.from_dict(descriptor)
    if descriptor.storage_type == "i":
        where = f"inline deletion vector {_shorten(descriptor.path_or_inline_dv)!r}"
        data = _inline_bytes(descriptor, where)
    else:
        # storage_type 'u' or 'p': a stored DV, which needs the storage and has a path
        stored = cast(DVStorage, storage)
        path = cast(str, descriptor.absolute_path(stored))
        where = f"deletion vector {path} (offset {descriptor.offset})"
        data = _read_framed(stored, path, descriptor, where)
    bitmap = _deserialize_bitmap(data, where)
    count = len(bitmap)  # roaring keeps per-container cardinalities: nothing is expanded
    if count != descriptor.cardinality:
        raise DeletionVectorError(
            f"{where}: the bitmap holds {count} rows but the log says cardinality {descriptor.cardinality}"
        )
    _check_rows(bitmap, count, max_rows, where)
    return np.frombuffer(bitmap.to_array(), dtype=np.uint64)


def _check_rows(bitmap: BitMap64, count: int, max_rows: int | None, source: str) -> None:
    """No row index at or past a known row count; without one, at most
    :data:`DEFAULT_MAX_DV_ROWS` rows (checked on the bitmap, before any expansion)."""
    if max_rows is not None:
        if count and bitmap.max() >= max_rows:
            raise DeletionVectorError(
                f"{source}: deletes row {bitmap.max()} ({count} rows in all), but "
                f"the data file has only {max_rows} rows"
            )
        return
    _check_count(count, source=source)


def _check_count(count: int, *, source: str) -> None:
    if count > DEFAULT_MAX_DV_ROWS:
        raise DeletionVectorError(
            f"{source}: deletes {count} rows, more than the {DEFAULT_MAX_DV_ROWS} a deletion vector "
            "may hold without a known file size"
        )


def deserialize_deleted_rows(
    data: bytes, *, source: str = "deletion vector", max_rows: int | None = None
) -> np.ndarray:
    """Sorted row indexes from DV bitmap bytes (magic number + portable 64-bit roaring),
    bounded as :func:`load_deleted_rows` bounds them, before the bitmap is expanded."""
    bitmap = _deserialize_bitmap(data, source)
    _check_rows(bitmap, len(bitmap), max_rows, source)
    return np.frombuffer(bitmap.to_array(), dtype=np.uint64)


def _deserialize_bitmap(data: bytes, source: str) -> BitMap64:
    data = bytes(data)
    if len(data) < 4:
        raise DeletionVectorError(f"{source}: {len(data)} bytes cannot hold the magic number")
    magic = int.from_bytes(data[:4], "little")
    if magic != MAGIC_NUMBER:
        native = _NATIVE_MAGIC_NUMBER in (magic, int.from_bytes(data[:4], "big"))
        what = " (Delta's JVM-only 'native' bitmap format, not allowed in deletion vectors)" if native else ""
        raise DeletionVectorError(f"{source}: bad magic number {magic}, expected {MAGIC_NUMBER}{what}")
    try:
        bitmap = BitMap64.deserialize(data[4:])
    except (ValueError, IndexError, OverflowError, MemoryError) as exc:
        raise DeletionVectorError(f"{source}: malformed 64-bit roaring bitmap ({exc})") from None
    if len(bitmap) and bitmap.max() >= _ROW_LIMIT:
        raise DeletionVectorError(f"{source}: row index {bitmap.max()} has the top bit set")
    return bitmap


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _inline_bytes(descriptor: DeletionVectorDescriptor, where: str) -> bytes:
    data = z85_decode(descriptor.path_or_inline_dv)
    size = descriptor.size_in_bytes
    if not size <= len(data) < size + 4:
        raise DeletionVectorError(f"{where}: decodes to {len(data)} bytes but the log says sizeInBytes {size}")
    return data[:size]


def _read_framed(storage: DVStorage, path: str, descriptor: DeletionVectorDescriptor, where: str) -> bytes:
    offset = 1 if descriptor.offset is None else descriptor.offset  # None: right after the version
    size = descriptor.size_in_bytes
    if offset < 1:
        raise DeletionVectorError(f"{where}: offset {offset} points into the file header")
    start = 0 if offset <= _VERSION_CHECK_WINDOW else offset
    length = (offset - start) + 4 + size + 4
    try:
        blob = storage.read_range(path, start, length)
    except FileNotFoundError:
        raise DeletionVectorError(f"{where}: the deletion vector file does not exist") from None
    except StoreFaultError:  # the store kept failing: not a bad deletion vector
        raise
    except OSError as exc:
        raise DeletionVectorError(f"{where}: cannot read the deletion vector file ({exc})") from exc
    if len(blob) < length:
        raise DeletionVectorError(
            f"{where}: the file ends at byte {start + len(blob)}, before the DV's end at byte "
            f"{start + length} (offset or sizeInBytes {size} out of range)"
        )
    if start == 0 and blob[0] != FILE_FORMAT_VERSION:
        raise DeletionVectorError(f"{where}: unsupported DV file format version {blob[0]}")
    pos = offset - start
    framed = int.from_bytes(blob[pos : pos + 4], "big")
    if framed != size:
        raise DeletionVectorError(f"{where}: the file frames {framed} bytes but the log says sizeInBytes {size}")
    data = blob[pos + 4 : pos + 4 + size]
    expected = int.from_bytes(blob[pos + 4 + size : pos + 8 + size], "big")
    actual = zlib.crc32(data)
    if actual != expected:
        raise DeletionVectorError(
            f"{where}: CRC-32 checksum mismatch (stored {expected:#010x}, computed {actual:#010x})"
        )
    return data


def keep_mask(deleted: np.ndarray, start: int, length: int) -> np.ndarray:
    """Boolean mask for rows ``[start, start + length)`` of a file: True = row kept.

    ``deleted`` is a sorted ``uint64`` array as returned by :func:`load_deleted_rows`.
    """
    if start < 0 or length < 0:
        raise ValueError(f"start and length must be non-negative, got {start}, {length}")
    mask = np.ones(length, dtype=bool)
    deleted = np.asarray(deleted, dtype=np.uint64)
    if length == 0 or deleted.size == 0:
        return mask
    bounds = np.array([start, start + length], dtype=np.uint64)
    lo, hi = np.searchsorted(deleted, bounds, side="left")
    mask[(deleted[lo:hi] - np.uint64(start)).astype(np.intp)] = False
    return mask


# -- writing --------------------------------------------------------------------------
def _to_bitmap(row_indexes: Any) -> BitMap64:
    if isinstance(row_indexes, BitMap64):
        bitmap = BitMap64(row_indexes)
    else:
        rows = np.asarray(row_indexes)
        if rows.size == 0:
            return BitMap64()
        if rows.dtype.kind not in "iu":
            raise ValueError(f"row indexes must be integers, got dtype {rows.dtype}")
        rows = rows.ravel()
        if rows.dtype.kind == "i" and rows.min() < 0:
            raise ValueError(f"row indexes must be non-negative, got {rows.min()}")
        bitmap = BitMap64(rows.astype(np.uint64, copy=False))
    if len(bitmap) and bitmap.max() >= _ROW_LIMIT:
        raise ValueError(f"row indexes must be below 2**63, got {bitmap.max()}")
    return bitmap


def _serialize(row_indexes: Any) -> tuple[bytes, int]:
    bitmap = _to_bitmap(row_indexes)
    bitmap.run_optimize()
    data = MAGIC_NUMBER.to_bytes(4, "little") + bitmap.serialize()
    if len(data) > _INT32_MAX:
        raise ValueError(f"deletion vector of {len(data)} bytes exceeds the 2 GiB limit")
    return data, len(bitmap)


def serialize_deleted_rows(row_indexes: Any) -> bytes:
    """DV bitmap bytes (magic + portable 64-bit roaring) for the given row indexes.

    Accepts any integer array-like or a ``BitMap64``; duplicates collapse. Raises
    ``ValueError`` for negative indexes or indexes >= 2**63.
    """
    return _serialize(row_indexes)[0]


def inline_descriptor(row_indexes: Any) -> DeletionVectorDescriptor:
    """An inline (``'i'``) descriptor holding the given row indexes."""
    data, cardinality = _serialize(row_indexes)
    return DeletionVectorDescriptor("i", z85_encode(data), None, len(data), cardinality)


def write_deletion_vectors(
    storage: DVStorage, bitmaps: Iterable[Any], *, prefix: str = ""
) -> list[DeletionVectorDescriptor]:
    """Writes the DVs into one new ``[<prefix>/]deletion_vector_<uuid>.bin`` under the
    table root and returns their ``'u'`` descriptors, in order. Writes nothing for ``[]``.

    ``prefix`` (an optional random directory name, ASCII letters and digits) is kept in
    ``pathOrInlineDv`` as the protocol describes.
    """
    if not isinstance(prefix, str) or not _PREFIX_RE.fullmatch(prefix):
        raise ValueError(f"prefix must be ASCII letters and digits, got {prefix!r}")
    encoded = prefix + _encode_uuid(uuid.uuid4())
    parts = [bytes([FILE_FORMAT_VERSION])]
    position = 1
    descriptors = []
    for rows in bitmaps:
        data, cardinality = _serialize(rows)
        if position > _INT32_MAX:
            raise ValueError("deletion vector file would exceed the 2 GiB offset limit")
        parts += [len(data).to_bytes(4, "big"), data, zlib.crc32(data).to_bytes(4, "big")]
        descriptors.append(DeletionVectorDescriptor("u", encoded, position, len(data), cardinality))
        position += 8 + len(data)
    if descriptors:
        storage.write_bytes(cast(str, descriptors[0].absolute_path(storage)), b"".join(parts))  # a 'u' DV
    return descriptors


DEFAULT_INLINE_MAX_BYTES = 64


def store_deletion_vectors(
    storage: DVStorage, bitmaps: list[Any], *, inline_max_bytes: int = DEFAULT_INLINE_MAX_BYTES
) -> list[DeletionVectorDescriptor]:
    """Descriptors for ``bitmaps``, in order: a vector of at most ``inline_max_bytes``
    serialized bytes inline in the log (``'i'``), the others in one new DV file."""
    inline = [len(serialize_deleted_rows(bm)) <= inline_max_bytes for bm in bitmaps]
    in_file = iter(write_deletion_vectors(storage, [bm for bm, i in zip(bitmaps, inline) if not i]))
    return [inline_descriptor(bm) if i else next(in_file) for bm, i in zip(bitmaps, inline)]
