"""Table properties and protocol: the ``SET TBLPROPERTIES`` and ``UPGRADE PROTOCOL``
commits of ``DeltaTable.setProperties`` / ``upgradeProtocol``.

Guarantees:

* ``delta.*`` keys are validated and written under their canonical spelling; boolean
  values are written ``true`` / ``false``; the writer protocol check passes first;
* changing ``delta.columnMapping.mode`` or ``delta.enableRowTracking`` on an existing
  table is refused (it needs a metadata/data rewrite);
* protocol properties (``delta.minReaderVersion`` / ``delta.minWriterVersion``) and
  ``delta.feature.*`` keys only ask for a protocol change, as in delta-spark: they are not
  kept in the configuration; the protocol becomes the one the schema and configuration
  require;
* the protocol is never downgraded; an upgrade to what the table already has commits
  nothing. No Spark."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

from delta_pyds.errors import MissingPropertyError, SettingValueError
from delta_pyds.protocol import features
from delta_pyds.protocol.table_properties import (
    COLUMN_MAPPING_MODE,
    ENABLE_ROW_TRACKING,
    MIN_READER_VERSION,
    MIN_WRITER_VERSION,
    PROTOCOL_PROPERTIES,
    canonical_property,
    required_protocol,
    validate_properties,
)
from delta_pyds.storage.store import Storage
from delta_pyds.table.snapshot import Snapshot
from delta_pyds.transaction.commit import Transaction


def set_properties(storage: Storage, properties: Mapping[str, str]) -> int:
    """Sets table properties on the latest version (``delta.*`` ones are validated);
    returns the version committed."""
    props = {
        (canonical_property(k) if k.lower().startswith("delta.") else k): (
            str(v).lower() if isinstance(v, bool) else str(v)
        )
        for k, v in properties.items()
    }
    validate_properties(props)
    snap = Snapshot.load(storage)
    features.check_write(snap.protocol)
    conf = dict(snap.configuration)
    for key in (COLUMN_MAPPING_MODE, ENABLE_ROW_TRACKING):
        if key in props and props[key].lower() != str(conf.get(key, "")).lower():
            raise SettingValueError(
                f"setProperties: changing {key} on an existing table is not supported "
                "by delta_pyds (it needs a metadata/data rewrite)"
            )
    conf.update({k: v for k, v in props.items() if k not in PROTOCOL_PROPERTIES})
    txn = Transaction(storage, snap)
    feature_keys = [k for k in conf if k.startswith("delta.feature.")]
    if any(k in props for k in PROTOCOL_PROPERTIES) or feature_keys:
        txn.update_protocol(
            required_protocol(
                snap.schema,
                conf,
                snap.protocol,
                min_reader=int(props[MIN_READER_VERSION]) if MIN_READER_VERSION in props else None,
                min_writer=int(props[MIN_WRITER_VERSION]) if MIN_WRITER_VERSION in props else None,
            )
        )
    for k in feature_keys:  # delta.feature.* only asks for a protocol change, as in delta-spark
        del conf[k]
    txn.update_metadata(replace(snap.metadata, configuration=conf))
    return txn.commit("SET TBLPROPERTIES", {"properties": props}).version


def upgrade_protocol(storage: Storage, *, reader_version: int, writer_version: int) -> int:
    """Raises the table's protocol to at least (``reader_version``, ``writer_version``);
    returns the version committed, or the current one when nothing changes."""
    snap = Snapshot.load(storage)
    p = snap.protocol
    if reader_version < p.min_reader_version or writer_version < p.min_writer_version:
        raise SettingValueError(
            f"cannot downgrade the protocol ({p.min_reader_version}, {p.min_writer_version}) "
            f"to ({reader_version}, {writer_version})"
        )
    new = required_protocol(snap.schema, snap.configuration, p, min_reader=reader_version, min_writer=writer_version)
    if new == p:
        return snap.version
    txn = Transaction(storage, snap)
    txn.update_protocol(new)
    return txn.commit("UPGRADE PROTOCOL", {"newProtocol": json.dumps(new.to_dict())}).version


def unset_properties(storage: Storage | str, keys: list[str], *, if_exists: bool = False) -> int | None:
    """Removes table properties (``UNSET TBLPROPERTIES``); a key the table does not have is a
    ``MissingPropertyError`` unless ``if_exists``. Returns the version committed (None: nothing to remove)."""
    storage = storage if isinstance(storage, Storage) else Storage(storage)
    snap = Snapshot.load(storage)
    features.check_write(snap.protocol)
    conf = dict(snap.configuration)
    lowered = {k.lower(): k for k in conf}
    names = [lowered.get((canonical_property(k) if k.lower().startswith("delta.") else k).lower()) for k in keys]
    missing = [k for k, n in zip(keys, names) if n is None]
    if missing and not if_exists:
        raise MissingPropertyError(
            f"UNSET TBLPROPERTIES: the table has no properties {missing} (use IF EXISTS to ignore)"
        )
    present = [n for n in names if n is not None]
    if not present:
        return None
    for n in present:
        del conf[n]
    txn = Transaction(storage, snap)
    txn.update_metadata(replace(snap.metadata, configuration=conf))
    return txn.commit("UNSET TBLPROPERTIES", {"properties": json.dumps(present)}).version
