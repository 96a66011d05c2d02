"""PySpark's view of the driver's JVM with the classes it names most kept in Python (classic Spark, not Connect).

Building a report's queries, PySpark names a few JVM classes tens of thousands of times: ``functions`` for every
``F.col``, ``F.lit``, ``F.when`` ..., ``PythonUtils`` for every list of columns. py4j's view of the JVM answers a
name it does not hold with a round trip (for a short name such as ``functions``, the JVM tries ``Class.forName``
in every imported package: a scan of every jar for each miss), and a class answers each method name with another
(the JVM lists the class's methods by reflection, ``Class.getMethods``, to say it is one). Counted on the demo's
events, one detector pass: ~21,000 class look-ups and ~15,000 method look-ups, a round trip each, of ~82,000.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember
from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

#: The JVM classes PySpark names again and again while the report builds its queries.
JVM_NAMES = ("org.apache.spark.sql.functions", "org.apache.spark.sql.classic.SparkSession", "functions",
             "PythonUtils", "org.apache.spark.sql.classic.SparkSession$", "PythonSQLUtils",
             "org.apache.spark.sql.catalyst.trees.PySparkCurrentOrigin", "org.apache.spark.sql.expressions.Window")


def pin_jvm_names(spark: SparkSession) -> None:
    """Look each of ``JVM_NAMES`` up once and keep it on PySpark's view of the JVM (``pin``). Not for Spark
    Connect (no JVM view)."""
    jvm: Any = getattr(spark.sparkContext, "_jvm", None)
    if jvm is not None:
        pin(jvm)


def pin(jvm: Any) -> None:
    """Keep each of ``JVM_NAMES`` that ``jvm`` (a py4j view of the JVM) knows on it (an attribute set on the view
    is answered by Python), as a class that keeps each method (and inner class) it is asked for once found.
    Static fields are asked for each time (their value may change). Pinning again changes nothing."""
    for name in JVM_NAMES:
        try:
            found = getattr(jvm, name)
        except Py4JError:  # another Spark, or a name the view does not import: looked up each time, as before
            continue
        if type(found) is JavaClass:
            found = PinnedClass(found._fqn, found._gateway_client)
        setattr(jvm, name, found)


class PinnedClass(JavaClass):  # type: ignore[misc]
    """A py4j ``JavaClass`` that keeps each method (and inner class) it finds."""

    def __getattr__(self, name: str) -> Any:
        found = super().__getattr__(name)
        if isinstance(found, (JavaMember, JavaClass)):  # a method or an inner class: the same for good
            self.__dict__[name] = found
        return found
