"""Table URLs as Spark's Hadoop filesystems spell them, and storage options as Hadoop settings.

Guarantees: :func:`spark_location` maps a table root (local path or fsspec URL) to the path
Spark's readers take (``file:///t`` for a local root; ``s3a://`` for ``s3://``, ``s3a://``
and ``s3n://``; ``gs://`` for ``gs://``/``gcs://``; ``abfss://container@account.dfs...`` for
``az://``/``abfs(s)://`` roots) and to the Hadoop settings its storage options translate to
(``fs.s3a.*`` per bucket, ``fs.azure.account.key.*``, ``fs.gs.*``). It returns None, with the
reason, for what Spark's reader cannot be given: other schemes (``memory://``, ``http://``,
...), roots with glob characters (Spark expands ``*?[]{}`` in load paths), and storage
options with no Hadoop equivalent.

Whether this Spark has the Hadoop connector for the store is learnt from the first real
read, listing or write (no JVM gateway needed, so Spark Connect too):
:func:`unreachable_reason` classifies Spark's failure ("No FileSystem for scheme",
``ClassNotFoundException`` of the connector, ``UnsupportedFileSystemException``) and
:func:`remember_unreachable` records it per Spark session and Hadoop scheme, so
:func:`spark_target` (what the native read, DML and write all ask) answers None for that
scheme from then on without trying Spark again. A store Spark can reach is never cached
(nothing to retry).
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from delta_pyds.read.native_plan import spark_root_uri
from delta_pyds.storage.options import squash_key
from delta_pyds.storage.store import Storage

_GLOB = re.compile(r"[*?\[\]{}\\]")

# storage options that only tune the Python side (never needed by Spark's reader)
_PYTHON_ONLY = {"allowunsafecommits", "allowexternalpaths", "maxlogfilebytes", "anon", "usessl", "skipinstancecache"}


@dataclass(frozen=True)
class SparkLocation:
    """Where Spark reads a table: the load path, ``_metadata.file_path``'s root spelling
    and the Hadoop settings (may hold credentials: never in ``repr``)."""

    load_path: str  # given to spark.read...parquet(); not percent-encoded
    root_uri: str  # how _metadata.file_path spells the root (percent-encoded)
    hadoop_conf: Mapping[str, str] = field(default_factory=dict, repr=False)


def spark_location(storage: Storage) -> tuple[SparkLocation | None, str | None]:
    """(location, None) when Spark's reader can be pointed at ``storage``'s root, else
    (None, the reason)."""
    root = storage.root
    if storage.protocol == "file":
        if _GLOB.search(root):
            return None, f"the table path {root!r} holds glob characters, which Spark expands"
        return SparkLocation("file://" + root, spark_root_uri(root)), None
    parts = urlsplit(root)
    scheme = storage.protocol
    if _GLOB.search(parts.path):
        return None, f"the table path {root!r} holds glob characters, which Spark expands"
    options = {squash_key(k): str(v) for k, v in storage.options.items()}
    if scheme in ("s3", "s3a", "s3n"):
        url = f"s3a://{parts.netloc}{parts.path}"
        conf, unknown = _s3_conf(parts.netloc, options)
    elif scheme in ("gs", "gcs"):
        url = f"gs://{parts.netloc}{parts.path}"
        conf, unknown = _gcs_conf(options)
    elif scheme in ("az", "abfs", "abfss", "adl"):
        account = options.get("accountname")
        if "@" in parts.netloc:
            container, host = parts.netloc.split("@", 1)
            account = account or host.split(".")[0]
        else:
            container = parts.netloc
        if not account:
            return None, f"the Azure account of {root} is not known (give the storage option account_name)"
        url = f"abfss://{container}@{account}.dfs.core.windows.net{parts.path}"
        conf, unknown = _azure_conf(account, options)
    else:
        return None, f"Spark has no Hadoop filesystem mapping for {scheme}:// here"
    if unknown:
        return None, f"storage option(s) {', '.join(sorted(unknown))} have no Hadoop setting"
    return SparkLocation(url, spark_root_uri(url), conf), None


# Spark's words for "this Spark has no Hadoop filesystem for the scheme"
_MISSING_FILESYSTEM = ("No FileSystem for scheme", "ClassNotFoundException", "UnsupportedFileSystem")
# Spark session -> {Hadoop scheme: why Spark cannot reach it}; sessions are weakly held
_UNREACHABLE: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
_UNREACHABLE_BY_ID: dict[int, dict[str, str]] = {}  # sessions that cannot be weakly referenced
_LOCK = threading.Lock()


def _scheme(location: SparkLocation) -> str:
    return urlsplit(location.load_path).scheme.lower() or "file"


def _known(spark: SparkSession) -> dict[str, str]:
    try:
        return _UNREACHABLE.setdefault(spark, {})
    except TypeError:
        return _UNREACHABLE_BY_ID.setdefault(id(spark), {})


def spark_target(spark: SparkSession, storage: Storage) -> tuple[SparkLocation | None, str | None]:
    """:func:`spark_location`, and None with the recorded reason when this Spark session
    already failed to reach the location's Hadoop scheme (:func:`remember_unreachable`):
    the one answer read, DML and write share to "can Spark's own reader and writer reach
    this store?"."""
    location, reason = spark_location(storage)
    if location is None:
        return None, reason
    with _LOCK:
        known = _known(spark).get(_scheme(location))
    if known is not None:
        return None, known
    return location, None


def unreachable_reason(exc: BaseException, location: SparkLocation) -> str | None:
    """Why Spark cannot reach ``location``, when ``exc`` (raised by a Spark read, listing or
    write of it) says this Spark has no Hadoop filesystem for its scheme; else None (any
    other failure is the caller's to raise)."""
    text = ""
    current: BaseException | None = exc
    for _ in range(10):  # Spark's message, or a cause's
        if current is None:
            break
        text = str(current)
        if any(mark in text for mark in _MISSING_FILESYSTEM):
            said = next(line for line in text.splitlines() if any(mark in line for mark in _MISSING_FILESYSTEM))
            return f"Spark cannot reach {location.load_path} ({_scheme(location)}://): {said.strip()[:200]}"
        current = current.__cause__ or current.__context__
    return None


def remember_unreachable(spark: SparkSession, location: SparkLocation, reason: str) -> None:
    """Records that ``spark`` cannot reach ``location``'s Hadoop scheme (see
    :func:`spark_target`)."""
    with _LOCK:
        _known(spark)[_scheme(location)] = reason


def _s3_conf(bucket: str, options: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    prefix = f"fs.s3a.bucket.{bucket}."
    conf: dict[str, str] = {}
    unknown = []
    for key, value in options.items():
        if key in ("key", "awsaccesskeyid", "accesskeyid"):
            conf[prefix + "access.key"] = value
        elif key in ("secret", "awssecretaccesskey", "secretaccesskey"):
            conf[prefix + "secret.key"] = value
        elif key in ("token", "sessiontoken", "awssessiontoken"):
            conf[prefix + "session.token"] = value
            conf[prefix + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        elif key in ("endpointurl", "endpoint", "awsendpointurl"):
            conf[prefix + "endpoint"] = value
            conf[prefix + "path.style.access"] = "true"
            conf[prefix + "connection.ssl.enabled"] = str(value.startswith("https")).lower()
        elif key in ("region", "regionname", "awsregion"):
            conf[prefix + "endpoint.region"] = value
        elif key not in _PYTHON_ONLY:
            unknown.append(key)
    return conf, unknown


def _gcs_conf(options: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    conf: dict[str, str] = {}
    unknown = []
    for key, value in options.items():
        if key == "project":
            conf["fs.gs.project.id"] = value
        elif key == "endpointurl":
            conf["fs.gs.storage.root.url"] = value
        elif key not in _PYTHON_ONLY:
            unknown.append(key)
    return conf, unknown


def _azure_conf(account: str, options: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    conf: dict[str, str] = {}
    unknown = []
    for key, value in options.items():
        if key == "accountkey":
            conf[f"fs.azure.account.key.{account}.dfs.core.windows.net"] = value
        elif key == "accountname":
            continue
        elif key not in _PYTHON_ONLY:
            unknown.append(key)
    return conf, unknown
