"""The package's error hierarchy: every error it raises about a table, its log, its files, a
commit, a statement or an argument's value derives from :class:`DeltaError` (bad values are also
:class:`ValueError`, as Python users expect). Two kinds of error stay Python's own, each kept to
the places ``tests/test_structure.py`` lists: ``TypeError`` for an argument of the wrong type
(as delta-spark's Python API raises it), and the internal checks (``ValueError``,
``RuntimeError``, ``AssertionError``, ``NotImplementedError``, ``KeyError`` of a mapping lookup)
of helpers whose callers never let them fail: seeing one is a bug to report."""

from __future__ import annotations


class DeltaError(Exception):
    """Base of every Delta-specific error raised by delta_pyds."""


class TableNotFoundError(DeltaError, FileNotFoundError):
    """The path holds no Delta table (no ``_delta_log`` with commits or checkpoints)."""


class CorruptLogError(DeltaError):
    """The transaction log cannot be interpreted: gaps, unreadable or malformed files."""


class CorruptCheckpointError(CorruptLogError):
    """A checkpoint (or one of its parts or sidecars) is missing or unreadable; readers
    may fall back to an older checkpoint or to the commits."""


class ExternalPathError(CorruptLogError):
    """The log names a file outside the table root and the table was opened with
    ``allowExternalPaths=false`` (for tables from untrusted writers)."""


class VersionNotFoundError(DeltaError):
    """A requested version or timestamp cannot be reconstructed from the log."""


class UnsupportedFeatureError(DeltaError):
    """The table uses a protocol version or table feature this package does not implement."""

    def __init__(self, message: str, features: tuple[str, ...] = ()):
        super().__init__(message)
        self.features = tuple(features)


class UnsupportedSparkVersionError(UnsupportedFeatureError):
    """The running pyspark is older than the package supports, or cannot do what was asked
    (the message names the pyspark version that can; delta_pyds.spark.session.compat)."""


class DeletionVectorError(DeltaError):
    """A deletion vector is missing, corrupt (bad checksum or format) or out of range."""


class DataFileError(DeltaError):
    """A data file named by the log is missing or does not match the table schema."""


class SchemaError(DeltaError):
    """A schema cannot be parsed, or written data does not match the table schema."""


class ConcurrentModificationError(DeltaError):
    """A commit lost a race against a conflicting concurrent commit."""


class ConcurrentAppendError(ConcurrentModificationError):
    """Files a concurrent commit added belong to data this transaction read (or, when it
    changes the table's metadata, e.g. ``REPLACE TABLE``, to the table at all): delta-spark's
    ``ConcurrentAppendException`` (``DELTA_CONCURRENT_APPEND``); ``error_class`` names it."""

    error_class = "DELTA_CONCURRENT_APPEND"


class MetadataChangedError(ConcurrentModificationError):
    """A concurrent commit changed the table's metadata (schema, partitioning, properties):
    delta-spark's ``MetadataChangedException`` (``DELTA_METADATA_CHANGED``)."""

    error_class = "DELTA_METADATA_CHANGED"


class CommitFailedError(DeltaError):
    """A commit could not be written (storage failure, or retries exhausted)."""


class CommitRetriesExhaustedError(CommitFailedError, ConcurrentModificationError):
    """Other writers kept winning the race for the next version until the attempts ran
    out (no logical conflict was found; retrying later may succeed)."""


class TableExistsError(DeltaError):
    """The table already exists and the write asked for a new one (saveMode=errorifexists)."""


class ArgumentTypeError(DeltaError, TypeError, ValueError):
    """An argument of the wrong type (the message names it and what is accepted). Both a
    ``TypeError`` and a ``ValueError``: delta-spark's Python API raises either for these."""


class UnknownArgumentError(DeltaError, TypeError, ValueError):
    """A keyword argument or option no part of the product reads (a misspelled
    ``verisonAsOf``): the message names it and the closest valid one."""


class OptionValueError(DeltaError, ValueError):
    """A read, write, storage or streaming option holds a value it does not accept, or
    options that do not go together (the message names the option and what is accepted)."""


class ArgumentValueError(DeltaError, ValueError):
    """An argument of the ``DeltaTable`` API has the right type but a value it does not
    accept (the message names the argument and what is accepted; delta-spark raises
    ``ValueError`` / ``IllegalArgumentException`` there)."""


class SettingValueError(DeltaError, ValueError):
    """A session conf or table property holds a value it does not accept (the message
    names the key and what is accepted)."""


class ColumnNotFoundError(DeltaError, ValueError):
    """A column named by an argument (an UPDATE/MERGE ``set`` key, a ``safe_where``
    reference) is not in the table: the message names it and the table's columns."""


class IdentityColumnError(DeltaError, ValueError):
    """A DML statement would write an identity column the table forbids: a value set where
    the table generates them (``delta.identity.allowExplicitInsert=false``), a value set in
    some MERGE insert clauses only, or a generated value beyond a long."""


class MergeMultipleMatchesError(DeltaError):
    """Several source rows of a MERGE matched the same target row and could change it in
    conflicting ways (delta-spark's ``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``):
    deduplicate the source, or make the only matched clause an unconditional delete."""

    error_class = "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"


class FeatureDropError(DeltaError):
    """A table feature cannot be dropped yet: the table or the history still in its log
    uses it, or the table does not have it (the message says which and what to do)."""


class NoCatalogError(DeltaError):
    """The call names a table in a catalog this package cannot reach: a catalog other than
    Spark's session catalog (``spark_catalog``: the in-memory catalog or the Hive metastore),
    e.g. Unity Catalog or a JVM catalog plugin; use the table's path instead."""


class NotADeltaTableError(DeltaError, ValueError):
    """A table name resolves to a catalog entry that is not a Delta table (another provider,
    a view): the message names the entry and its provider."""


class AmbiguousCatalogEntryError(DeltaError):
    """A catalog entry's metadata can be read two ways (a Spark Connect client sees only the
    free text of ``SHOW TABLE EXTENDED``, and a comment, property or name holds a line such as
    ``Location: ...``): refused, never guessed; the message names the entry and the field."""


class CatalogTableReadError(DeltaError):
    """Spark itself was asked to read or write a Delta catalog table (``spark.table(name)``,
    ``SELECT ... FROM name`` through ``spark.sql``, ``insertInto``, ``saveAsTable``) where no
    JVM Delta source exists: Spark 4.3 hands a Python source's catalog table no location. The
    message says to use ``read_delta(spark, name=...)`` / ``delta_pyds.sql`` / ``write_delta(df, name=...)``."""


class AppendOnlyError(DeltaError):
    """The write would remove or change data in a table with delta.appendOnly=true."""


class ConstraintViolationError(DeltaError):
    """Written data violates a NOT NULL column, invariant, CHECK constraint, generated
    column or replaceWhere predicate; nothing was committed."""


class ColumnTypeError(DataFileError):
    """A data file stores a column in a physical type that the table's declared type
    cannot be read from (only the casts the protocol allows are made: type widening,
    timestamp units, encodings of the same logical type)."""

    def __init__(self, message: str, *, file: str = "", column: str = "", declared: str = "", physical: str = ""):
        super().__init__(message)
        self.file, self.column, self.declared, self.physical = file, column, declared, physical


class UnsafeFileError(DeltaError, OSError):
    """A file was refused without being read: it is not a regular file (a FIFO, a device,
    a symlink to one) or it is larger than the bound configured for its kind."""


class PathEscapeError(DeltaError, OSError):
    """Refused before acting: a write or delete would follow a symbolic link out of the table
    root, or a file to convert is a link leading out of the directory, dangling, or a second
    name of another file (the message names the paths); nothing was changed."""


class StorageError(DeltaError, OSError):
    """The storage backend (object store client, filesystem) failed; the message names
    the operation and path, with every credential redacted."""


class ShortReadError(StorageError):
    """A read of a whole object returned another number of bytes than the listing reported
    (a response body cut short behind a correct-looking Content-Length); the storage layer
    retries it and raises :class:`StoreFaultError` when the retries run out."""


class StoreFaultError(StorageError):
    """An object store kept failing with a transient fault (HTTP 5xx or 429, a reset
    connection, a timeout, a truncated or short response) until the retries ran out; the
    message names the store (its endpoint), the operation, the path, the fault and the
    attempts. Raise the storage option ``max_retries`` or ``timeout`` to wait longer."""


class StreamingError(DeltaError):
    """A streaming source cannot continue (offset of another table, schema change...)."""


class StreamingSchemaChangeError(StreamingError):
    """A stream would cross a non-additive schema change (a column renamed or dropped under
    column mapping, partition columns changed, column mapping removed): files before and
    after it cannot be read with one schema. delta-spark's
    ``DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG``; ``error_class`` names it."""

    error_class = "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG"


class StreamChangeError(StreamingError):
    """A commit removed or rewrote data and no option tells the stream what to do."""


class StreamSinkError(DeltaError):
    """A micro-batch cannot be committed (no query identity, or the table changed)."""


class ChangeDataError(DeltaError):
    """Change data cannot be read for a version range (not recorded, incompatible schema
    change, or vacuumed files)."""


class ExpressionError(DeltaError, ValueError):
    """An expression cannot be parsed or evaluated by delta_pyds."""


class MalformedVariantError(DataFileError):
    """Variant data in a data file is malformed: a bad Variant binary encoding, or
    shredded columns that break the Parquet Variant shredding specification."""


class SqlParseError(DeltaError, ValueError):
    """A statement given to :func:`delta_pyds.sql` is a Delta statement in a form it does not
    support, or is malformed; the message names the statement, the position and the supported form."""


class SqlStatementError(SqlParseError):
    """A Delta statement of :func:`delta_pyds.sql` that parses but cannot run on the table it
    names (``SHOW PARTITIONS`` of a table without partition columns or naming a column that is
    not one, an ``INSERT`` whose query gives another number of columns than the table); raised
    before anything changes. A :class:`SqlParseError` (as which it was raised before)."""


class MissingPropertyError(DeltaError, KeyError):
    """``UNSET TBLPROPERTIES`` / ``DROP CONSTRAINT`` name a property or constraint the table
    does not have (without ``IF EXISTS``)."""


class TimestampParseError(DeltaError, ValueError):
    """A timestamp argument (``restoreToTimestamp``) is a string that is not a timestamp."""


class SchemaChangeError(SchemaError, ValueError):
    """A schema change (add, rename or drop a column, change its type, nullability or
    comment) the table cannot take; nothing was committed. The message says why and, where
    one exists, the table property that allows it (``delta.columnMapping.mode``,
    ``delta.enableTypeWidening``)."""


class TemporaryViewError(DeltaError, ValueError):
    """A Delta statement of :func:`delta_pyds.sql` names a temporary view that cannot stand for
    its Delta table: the view filters, projects or time-travels a ``pydelta`` read (it is not a
    table; delta-spark's ``DELTA_OPERATION_ON_VIEW_NOT_ALLOWED``), or, from a Spark Connect
    client, the view's table path cannot be seen (use ``delta.`<path>``` instead)."""


class SqlParameterError(DeltaError, ValueError):
    """A parameter of :func:`delta_pyds.sql` (``args`` for ``:name`` / ``?`` markers) cannot be
    bound in a Delta statement: a marker without a value, or a value of a type Spark does not
    take as a literal; the message names the parameter."""
