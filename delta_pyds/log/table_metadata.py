"""The protocol and metadata in force at one version: the newest ``protocol`` and
``metaData`` actions of a log segment, from its commits (newest first) or else its
checkpoint.

Guarantees: the commits of the segment are read once (their bytes are returned for the
replay that follows); a commit that vanished while reading, or a segment with no protocol
or no metadata, is a :class:`~delta_pyds.errors.CorruptLogError`. Nothing here decides
whether the protocol is readable: see :func:`delta_pyds.protocol.features.check_read`."""

from __future__ import annotations

from dataclasses import dataclass

from delta_pyds.errors import CorruptLogError
from delta_pyds.log.checkpoint_reader import CheckpointReader
from delta_pyds.log.segment import LogSegment
from delta_pyds.protocol.actions import Metadata, Protocol, parse_special_lines
from delta_pyds.storage.store import Storage

_STATE_KEYS = [b'"protocol"', b'"metaData"']


@dataclass(frozen=True)
class TableMetadata:
    """What :func:`read_table_metadata` found."""

    commit_data: list[bytes]
    protocol: Protocol
    metadata: Metadata
    checkpoint: CheckpointReader | None


def read_table_metadata(storage: Storage, segment: LogSegment) -> TableMetadata:
    """The protocol and metadata of ``segment``'s version, with the segment's commit bytes."""
    try:
        commit_data = storage.read_many(
            [c.path for c in segment.replay_files], sizes=[c.size for c in segment.replay_files]
        )
    except FileNotFoundError as exc:
        raise CorruptLogError(f"a commit file vanished while reading the log: {exc}") from None
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    for commit, data in zip(reversed(segment.replay_files), reversed(commit_data)):
        found = parse_special_lines(data, _STATE_KEYS, source=commit.path)
        # newest first: the last line of a commit, the first of a (reverse-ordered) compaction
        for obj in found if commit.kind == "compaction" else reversed(found):
            if protocol is None and isinstance(obj.get("protocol"), dict):
                protocol = Protocol.from_dict(obj["protocol"], source=commit.path)
            if metadata is None and isinstance(obj.get("metaData"), dict):
                metadata = Metadata.from_dict(obj["metaData"], source=commit.path)
        if protocol is not None and metadata is not None:
            break
    checkpoint = CheckpointReader(storage, segment.checkpoint) if segment.checkpoint else None
    if (protocol is None or metadata is None) and checkpoint is not None:
        source = segment.checkpoint[0].path
        for obj in checkpoint.state_actions():
            if protocol is None and obj.get("protocol"):
                protocol = Protocol.from_dict(obj["protocol"], source=source)
            if metadata is None and obj.get("metaData"):
                metadata = Metadata.from_dict(obj["metaData"], source=source)
    if protocol is None:
        raise CorruptLogError(f"no protocol action found for version {segment.version} of {storage.root}")
    if metadata is None:
        raise CorruptLogError(f"no metaData action found for version {segment.version} of {storage.root}")
    return TableMetadata(commit_data, protocol, metadata, checkpoint)
