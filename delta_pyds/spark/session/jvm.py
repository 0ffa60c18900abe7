"""The JVM of a classic session, as the rooms above need to know of it: whether a session has one,
and the Java classes of an error raised from it.

Guarantees: :func:`is_classic` is true exactly for a session with a JVM side (a Spark Connect
client has none); :func:`java_classes` names the Java exception's class and each of its
superclasses (empty for an error that did not come from the JVM); inside :func:`jvm_active` the
session is the JVM's active session of this thread, and the previous one is restored after
(Spark's errors raised meanwhile as pyspark raises them)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
from pyspark.errors.exceptions.captured import convert_exception

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def is_classic(spark: SparkSession) -> bool:
    """The session has a JVM side (py4j): a classic session, not a Spark Connect client."""
    return getattr(spark, "_jsparkSession", None) is not None


def java_classes(exc: BaseException) -> set[str]:
    """The class names of the Java exception of a py4j error or of pyspark's error made from
    one, and of its superclasses."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    names: set[str] = set()
    cls = java.getClass() if java is not None else None
    while cls is not None:
        names.add(str(cls.getName()))
        cls = cls.getSuperclass()
    return names


@contextmanager
def jvm_active(spark: SparkSession) -> Iterator[Any]:
    """The session's JVM ``SparkSession``, active on the JVM side meanwhile (a classic session only)."""
    jvm: Any = spark._jvm
    session_class = jvm.org.apache.spark.sql.SparkSession
    previous = session_class.getActiveSession()
    jsession = spark._jsparkSession
    session_class.setActiveSession(jsession)
    try:
        yield jsession
    except Py4JJavaError as exc:  # as pyspark raises Spark's errors (AnalysisException ...)
        raise convert_exception(exc.java_exception) from exc
    finally:
        if previous.isDefined():
            session_class.setActiveSession(previous.get())
        else:
            session_class.clearActiveSession()
