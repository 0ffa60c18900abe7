"""The file actions of the Delta log as typed dictionaries (PROTOCOL.md "Add File and Remove
File", "Add CDC File", "Deletion Vector Descriptor"): the shapes the transaction layer collects
and writes as JSON lines. Keys are the protocol's field names; the optional fields are optional
here too (``total=False`` below the required ones). Typing only: the dictionaries are plain
``dict`` objects at run time (built from Arrow rows, JSON or literals)."""

from __future__ import annotations

from typing import Any, TypedDict


class DeletionVectorDict(TypedDict, total=False):
    """The JSON form of :class:`~delta_pyds.protocol.deletion_vectors.DeletionVectorDescriptor`:
    ``storageType`` (``u`` relative path, ``i`` inline, ``p`` absolute path),
    ``pathOrInlineDv``, ``offset`` (file-backed only), ``sizeInBytes``, ``cardinality``."""

    storageType: str
    pathOrInlineDv: str
    offset: int | None
    sizeInBytes: int
    cardinality: int


class _FileRequired(TypedDict):
    path: str


class AddFile(_FileRequired, total=False):
    """An ``add`` action's body."""

    partitionValues: dict[str, str | None]
    size: int
    modificationTime: int
    dataChange: bool
    stats: str | None
    tags: dict[str, str] | None
    deletionVector: DeletionVectorDict | None
    baseRowId: int | None
    defaultRowCommitVersion: int | None
    clusteringProvider: str | None


class RemoveFile(_FileRequired, total=False):
    """A ``remove`` action's body."""

    deletionTimestamp: int | None
    dataChange: bool
    extendedFileMetadata: bool | None
    partitionValues: dict[str, str | None] | None
    size: int | None
    stats: str | None
    tags: dict[str, str] | None
    deletionVector: DeletionVectorDict | None
    baseRowId: int | None
    defaultRowCommitVersion: int | None


class AddCDCFile(_FileRequired, total=False):
    """A ``cdc`` action's body."""

    partitionValues: dict[str, str | None]
    size: int
    dataChange: bool
    tags: dict[str, str] | None


class LogAction(TypedDict, total=False):
    """One line of a commit: exactly one of these keys (``{"add": AddFile}``, ...)."""

    commitInfo: dict[str, Any]
    protocol: dict[str, Any]
    metaData: dict[str, Any]
    txn: dict[str, Any]
    domainMetadata: dict[str, Any]
    remove: RemoveFile
    add: AddFile
    cdc: AddCDCFile
