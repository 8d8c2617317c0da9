"""Exactly-once with a transaction per source split (``sink.transaction-scope`` = ``split``), on
the real broker: each partition's output commits with its progress, decided by the driver for
all splits at once; refusals where the plan cannot take it."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from dagster import DagsterInstance, materialize

from dagster_kafka_flinklike import (
    KafkaTableSpec,
    kafka_streaming_asset,
)
from dagster_kafka_flinklike.errors import KafkaOptionsError
from dagster_kafka_flinklike.run import StreamingRun
from dagster_kafka_flinklike.sink.split_transactions import progress_group, split_transactional_id
from tests.conftest import produce
from tests.integration.test_exactly_once import committed, output_ids, resources_for

COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "payload", "type": "STRING"}]
SPLIT = {"sink.transaction-scope": "split"}


def specs(source_topic: str, sink_topic: str, source_extra=None):
    source = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": source_topic,
            "properties.group.id": f"split-{source_topic}",
            "scan.startup.mode": "earliest-offset",
            "format": "json",
            **(source_extra or {}),
        },
        columns=COLUMNS,
        role="source",
    )
    sink = KafkaTableSpec.from_options(
        {
            "connector": "kafka",
            "topic": sink_topic,
            "format": "json",
            "sink.delivery-guarantee": "exactly-once",
            "sink.transactional-id-prefix": f"split-{sink_topic}",
            **SPLIT,
        },
        columns=COLUMNS,
        role="sink",
    )
    return source, sink


def copy_asset(source_topic: str, sink_topic: str, query=None, source_extra=None, name="copy"):
    source, sink = specs(source_topic, sink_topic, source_extra)

    @kafka_streaming_asset(sources={"events": source}, sink=sink, name=name)
    def copy(context, events):
        if query is not None:
            return query(events)
        return events.select("id", "payload")

    return copy


def events(first: int, count: int, bad: tuple[int, ...] = ()) -> list[tuple[None, bytes]]:
    return [
        (None, b"{not json" if i in bad else json.dumps({"id": i, "payload": f"p{i}"}).encode())
        for i in range(first, first + count)
    ]


def test_each_split_commits_its_output_with_its_progress(kafka_bootstrap, new_topic, spark):
    source, sink = new_topic(partitions=4), new_topic(partitions=3)
    asset = copy_asset(source, sink)
    resources = resources_for(kafka_bootstrap)
    produce(kafka_bootstrap, source, events(0, 800))

    first = materialize([asset], resources=resources, instance=DagsterInstance.ephemeral())
    meta = first.asset_materializations_for_node("copy")[0].metadata
    assert meta["numRecordsIn"].value == 800
    assert meta["numRecordsOut"].value == 800
    assert meta["transactionalId"].value == f"split-{sink}-copy-<topic>-<partition>"
    # Both groups hold the stops: the progress group inside the splits' transactions, the
    # source group after every split committed.
    progress = progress_group(f"split-{sink}", "copy")
    assert committed(kafka_bootstrap, progress, source, 4) == committed(
        kafka_bootstrap, f"split-{source}", source, 4
    )
    assert sum(committed(kafka_bootstrap, progress, source, 4)) == 800

    produce(kafka_bootstrap, source, events(800, 150))
    second = materialize([asset], resources=resources, instance=DagsterInstance.ephemeral())
    assert second.asset_materializations_for_node("copy")[0].metadata["numRecordsIn"].value == 150
    assert output_ids(kafka_bootstrap, sink, 3) == Counter(range(950))
    assert sum(output_ids(kafka_bootstrap, sink, 3, "read_uncommitted").values()) == 950


def test_the_driver_aborts_every_split_when_dirty_data_fails_the_run(
    kafka_bootstrap, new_topic, spark
):
    source, sink = new_topic(partitions=3), new_topic(partitions=2)
    strict = {"ingestion.ignore-errors": "true", "ingestion.error-tolerance.max-count": "0"}
    asset = copy_asset(source, sink, source_extra=strict)
    resources = resources_for(kafka_bootstrap)
    produce(kafka_bootstrap, source, events(0, 300, bad=(123,)))

    result = materialize(
        [asset], resources=resources, instance=DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert not result.success
    # Every split was produced and prepared before the verdict: all aborted, nothing visible.
    assert output_ids(kafka_bootstrap, sink, 2) == Counter()
    assert sum(output_ids(kafka_bootstrap, sink, 2, "read_uncommitted").values()) == 299
    assert committed(kafka_bootstrap, f"split-{source}", source, 3) == [-1001] * 3
    progress = progress_group(f"split-{sink}", "copy")
    assert committed(kafka_bootstrap, progress, source, 3) == [-1001] * 3


def test_a_query_that_shuffles_is_refused_naming_the_option(kafka_bootstrap, new_topic, spark):
    source, sink = new_topic(partitions=2), new_topic(partitions=1)

    def shuffled(frame):
        return frame.repartition(3).select("id", "payload")

    asset = copy_asset(source, sink, query=shuffled)
    produce(kafka_bootstrap, source, events(0, 50))
    with pytest.raises(KafkaOptionsError, match=r"sink\.transaction-scope") as raised:
        materialize(
            [asset], resources=resources_for(kafka_bootstrap), instance=DagsterInstance.ephemeral()
        )
    assert "moves rows between partitions" in str(raised.value)
    assert output_ids(kafka_bootstrap, sink, 1, "read_uncommitted") == Counter()


def fence(bootstrap: str, transactional_id: str) -> None:
    """What a newer writer of the id does: its ``init_transactions`` aborts the open
    transaction of the id and fences the producer that holds it."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(30)
    producer.flush(0)


def test_a_split_whose_commit_fails_after_the_verdict_is_written_again_in_the_same_run(
    kafka_bootstrap, new_topic, spark, caplog
):
    source, sink = new_topic(partitions=3), new_topic(partitions=2)
    source_spec, sink_spec = specs(source, sink)
    produce(kafka_bootstrap, source, events(0, 600))
    prefix = f"split-{sink}"
    fenced: list[str] = []

    def fence_one_split(run: StreamingRun) -> None:
        # Every split is prepared and held open now: a newer producer of split 1's id aborts
        # its transaction, so its holder's commit fails as fenced after the verdict.
        tid = split_transactional_id(prefix, "rewrite", source, 1)
        fence(kafka_bootstrap, tid)
        fenced.append(tid)

    run = StreamingRun(
        spark,
        {"bootstrap.servers": kafka_bootstrap},
        sink=sink_spec,
        asset_name="rewrite",
        gate=fence_one_split,
    )
    try:
        frame = run.read("events", source_spec)
        result = run.write(sink_spec, frame.select("id", "payload"))
        assert run.commit() is not None
    finally:
        run.close()
    assert fenced, "the gate ran"
    rewrites = [r.getMessage() for r in caplog.records if "writing them again" in r.getMessage()]
    assert len(rewrites) == 1 and f"{source}-1" in rewrites[0], rewrites
    assert result.records == 600  # the rewritten split counts once, as committed
    assert output_ids(kafka_bootstrap, sink, 2) == Counter(range(600))
    progress = progress_group(prefix, "rewrite")
    assert sum(committed(kafka_bootstrap, progress, source, 3)) == 600
    assert sum(committed(kafka_bootstrap, f"split-{source}", source, 3)) == 600


def test_the_run_scope_resumes_where_committed_splits_left_off(kafka_bootstrap, new_topic, spark):
    """A split-scope run whose splits committed but whose source group did not (its driver
    died between the two), then the asset switched back to one transaction per run: the run
    scope resumes at the progress group, so nothing is written twice."""
    source, sink = new_topic(partitions=2), new_topic(partitions=2)
    produce(kafka_bootstrap, source, events(0, 200))
    split = copy_asset(source, sink)
    resources = resources_for(kafka_bootstrap)
    assert materialize([split], resources=resources, instance=DagsterInstance.ephemeral()).success
    # The source group back where it was before that run, as if its last step never happened.
    group = f"split-{source}"
    rewind = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
    rewind.commit(offsets=[TopicPartition(source, p, 0) for p in range(2)], asynchronous=False)
    rewind.close()
    produce(kafka_bootstrap, source, events(200, 50))

    source_spec, sink_spec = specs(source, sink)
    run_scope = KafkaTableSpec.from_options(
        {**sink_spec.options, "sink.transaction-scope": "run"}, columns=COLUMNS, role="sink"
    )

    @kafka_streaming_asset(sources={"events": source_spec}, sink=run_scope, name="copy")
    def copy(context, events):
        return events.select("id", "payload")

    second = materialize([copy], resources=resources, instance=DagsterInstance.ephemeral())
    assert second.asset_materializations_for_node("copy")[0].metadata["numRecordsIn"].value == 50
    assert output_ids(kafka_bootstrap, sink, 2) == Counter(range(250))
