"""The JVM classes PySpark names most are kept on its view of the JVM, with their methods: building a column asks
the JVM nothing but the call itself."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from py4j import clientserver
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.jvm_names import JVM_NAMES, pin


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The py4j commands sent from now on (their first three lines: command, subcommand or target, name), but for
    the JVM objects Python's garbage collector lets go of (`m d`): those come whenever a collection runs."""
    sent: list[str] = []
    send = clientserver.ClientServerConnection.send_command

    def counted(self: clientserver.ClientServerConnection, command: str) -> str:
        head = command.split("\n")[:3]
        if head[:2] != ["m", "d"]:
            sent.append("\n".join(head))
        return send(self, command)

    monkeypatch.setattr(clientserver.ClientServerConnection, "send_command", counted)
    yield sent


def test_a_method_called_again_is_one_round_trip(spark: SparkSession, commands: list[str]) -> None:
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    view = gateway.new_jvm_view("test-jvm-names")  # a view of its own: nothing looked up on it yet
    pin(view)
    functions = getattr(view, "org.apache.spark.sql.functions")
    pin(view)  # again: the same class, what it keeps with it
    assert getattr(view, "org.apache.spark.sql.functions") is functions
    commands.clear()
    functions.col("a")  # the first: the method is looked up (a reflection command), then called
    functions.col("b"), functions.lit(1), functions.col("c"), functions.lit(2)  # F.lit looked up once; col kept
    assert [c.split("\n")[0] for c in commands] == ["r", "c", "c", "r", "c", "c", "c"]


def test_the_sessions_view_is_pinned_and_columns_work(spark: SparkSession, commands: list[str]) -> None:
    F.col("a"), F.lit(0)  # looked up now if no test before did
    commands.clear()
    df = spark.range(3).select((F.col("id") + F.lit(1)).alias("x"))
    assert [r.x for r in df.collect()] == [1, 2, 3]  # the kept methods are the JVM's
    assert not any(c.startswith("r\n") and "functions" in c for c in commands)


def test_every_name_is_kept_and_fields_are_read_each_time(spark: SparkSession, commands: list[str]) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    for name in JVM_NAMES:
        assert name in vars(jvm)  # answered by Python
    module = getattr(jvm, "org.apache.spark.sql.classic.SparkSession$")
    commands.clear()
    getattr(module, "MODULE$"), getattr(module, "MODULE$")  # a static field: asked for each time, never kept
    assert "MODULE$" not in vars(module)
    assert [c[0] for c in commands] == ["r", "r"]
