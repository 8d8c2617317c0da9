"""Flink SQL → Spark SQL translation and the planning of inserts into run modes (no Spark)."""

from __future__ import annotations

import pytest

from dagster_kafka_flinklike import FlinkSqlError, KafkaOptionsError
from dagster_kafka_flinklike.sql.pipeline import RunMode, plan_flink_sql
from dagster_kafka_flinklike.sql.translate import integral_cast, json_scalar, translate_query

HOUR = 3_600_000
SPARK_PATH = "'$.a'"


def spark(query: str) -> str:
    return translate_query(query).text


@pytest.mark.parametrize(
    ("flink", "expected"),
    [
        ("SELECT 'a\\b', 'it''s'", "SELECT 'a\\\\b' , 'it\\'s'"),
        ("SELECT CAST(x AS TIMESTAMP(3))", "SELECT CAST(x AS timestamp_ntz)"),
        ("SELECT TRY_CAST(x AS TIMESTAMP_LTZ(3))", "SELECT TRY_CAST(x AS timestamp)"),
        ("SELECT CAST(x AS VARCHAR(10))", "SELECT CAST(x AS string)"),
        ("SELECT CAST(x AS DECIMAL(10, 2))", "SELECT CAST(x AS decimal(10,2))"),
        ("SELECT TIMESTAMP '2026-01-01 00:00:00'", "SELECT TIMESTAMP_NTZ '2026-01-01 00:00:00'"),
        ("SELECT arr[2], m['k']", "SELECT try_element_at(arr, 2) , try_element_at(m, 'k')"),
        ("SELECT ARRAY[1, 2]", "SELECT array(1 , 2)"),
        ("SELECT PROCTIME()", "SELECT current_timestamp()"),
        ("SELECT ROW(a, b)", "SELECT struct(a, b)"),
        ("SELECT JSON_VALUE(j, '$.a')", f"SELECT {json_scalar('j', SPARK_PATH)}"),
        (
            "SELECT JSON_VALUE(j, '$.a' RETURNING INT)",
            f"SELECT try_cast({json_scalar('j', SPARK_PATH)} AS int)",
        ),
        ("SELECT CAST(s AS INT)", f"SELECT {integral_cast('CAST', 's', 'int')}"),
        ("SELECT JSON_EXISTS(j, '$.a')", "SELECT (get_json_object(j, '$.a') IS NOT NULL)"),
        (
            "SELECT JSON_OBJECT(KEY 'k' VALUE v)",
            "SELECT to_json(named_struct('k', v), map('ignoreNullFields', 'false'))",
        ),
        ("SELECT TO_TIMESTAMP_LTZ(t, 0)", "SELECT timestamp_seconds(t)"),
        (
            "SELECT TO_TIMESTAMP(s)",
            "SELECT CAST(try_to_timestamp(s, 'yyyy-MM-dd HH:mm:ss') AS TIMESTAMP_NTZ)",
        ),
        (
            "SELECT REGEXP_EXTRACT(s, 'a(b)')",
            "SELECT (CASE WHEN s RLIKE 'a(b)' THEN regexp_extract(s, 'a(b)', 0) END)",
        ),
        (
            "SELECT TUMBLE_START(ts, INTERVAL '1' HOUR) FROM t "
            "GROUP BY TUMBLE(ts, INTERVAL '1' HOUR)",
            "SELECT window(ts, '3600000 milliseconds').start FROM t GROUP BY "
            "window(ts, '3600000 milliseconds')",
        ),
    ],
)
def test_translation(flink: str, expected: str) -> None:
    assert spark(flink) == expected


def test_json_value_paths_without_a_faithful_translation_are_refused() -> None:
    with pytest.raises(FlinkSqlError, match=r"JSON_VALUE's path '\$\.a\[\*\]'"):
        spark("SELECT JSON_VALUE(j, '$.a[*]') FROM t")


def test_window_tvfs_positional_and_named() -> None:
    tumble = translate_query(
        "SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES))"
    )
    [w] = tumble.windows
    assert (w.kind, w.time_column, w.size_ms, w.step_ms, w.line, w.column) == (
        "TUMBLE",
        "ts",
        600_000,
        600_000,
        1,
        21,
    )
    assert "window(ts, '600000 milliseconds') AS __dkf_w FROM t" in tumble.text
    assert tumble.stateful == ()
    hop = translate_query(
        "SELECT * FROM TABLE(HOP(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts),\n"
        "  SIZE => INTERVAL '10' MINUTE, SLIDE => INTERVAL '5' MINUTE))"
    )
    assert (hop.windows[0].size_ms, hop.windows[0].step_ms) == (600_000, 300_000)
    cumulate = translate_query(
        "SELECT window_end, COUNT(*) FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), "
        "INTERVAL '1' HOUR, INTERVAL '1' DAY)) GROUP BY window_end"
    )
    assert [s[0] for s in cumulate.stateful] == ["COUNT", "GROUP BY"]
    assert "sequence(" in cumulate.text and ", 24))" in cumulate.text


@pytest.mark.parametrize(
    ("query", "where", "words"),
    [
        ("SELECT *\nFROM t MATCH_RECOGNIZE (x)", (2, 8), "MATCH_RECOGNIZE"),
        ("SELECT * FROM t FOR SYSTEM_TIME AS OF x", (1, 17), "temporal joins"),
        ("SELECT 1 FROM t GROUP BY SESSION(ts, INTERVAL '1' MINUTE)", (1, 26), "SESSION group"),
        ("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), 10))", (1, 53), "INTERVAL"),
        ("SELECT * FROM TABLE(FOO(TABLE t))", (1, 21), "FOO has no translation"),
        ("SELECT CAST(x AS NOPE)", (1, 18), "NOPE"),
        (
            "SELECT * FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '7' MINUTE, "
            "INTERVAL '1' HOUR))",
            (1, 21),
            "multiple of its step",
        ),
    ],
)
def test_untranslatable_constructs_name_line_and_column(
    query: str, where: tuple[int, int], words: str
) -> None:
    with pytest.raises(FlinkSqlError, match=words) as info:
        translate_query(query)
    assert (info.value.line, info.value.column) == where


def table(name: str, connector: str = "kafka", extra: str = "", columns: str = "x INT") -> str:
    fmt = (
        "'key.format' = 'json', 'value.format' = 'json'"
        if connector == "upsert-kafka"
        else "'format' = 'json'"
    )
    return (
        f"CREATE TABLE {name} ({columns}) WITH ('connector' = '{connector}', "
        f"'topic' = '{name}', {fmt}{extra});\n"
    )


TS = "x INT, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'"
TUMBLE = (
    "INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR({col}), "
    "INTERVAL '{size}' MINUTE)) GROUP BY window_start;"
)
SINK = "ws TIMESTAMP(3), n BIGINT"


def test_run_modes() -> None:
    stateless = plan_flink_sql(table("t") + table("s") + "INSERT INTO s SELECT x + 1 FROM t;")
    assert stateless.inserts[0].mode == RunMode.INCREMENTAL
    upsert = plan_flink_sql(
        table("t", extra=", 'scan.startup.mode' = 'earliest-offset'")
        + table("s", "upsert-kafka", columns="x INT, n BIGINT, PRIMARY KEY (x) NOT ENFORCED")
        + "INSERT INTO s SELECT x, COUNT(*) FROM t GROUP BY x;"
    )
    assert (upsert.inserts[0].mode, upsert.inserts[0].output_mode) == (RunMode.STATEFUL, "update")
    windows = plan_flink_sql(
        table("t", columns=TS) + table("s", columns=SINK) + TUMBLE.format(col="ts", size=15),
        windows=(HOUR, 0),
    )
    assert windows.inserts[0].mode == RunMode.WINDOWS
    assert windows.inserts[0].columns == ("ws", "n")


@pytest.mark.parametrize(
    ("script", "windows", "words", "line"),
    [
        (
            table("t") + table("s") + "\nINSERT INTO s SELECT COUNT(*) FROM t;",
            None,
            "keeps state \\(COUNT\\)",
            4,
        ),
        (
            table("t")
            + table("s", "upsert-kafka", columns="x INT, PRIMARY KEY (x) NOT ENFORCED")
            + "INSERT INTO s SELECT DISTINCT x FROM t;",
            None,
            "group-offsets",
            3,
        ),
        (
            table("t", columns=TS) + table("s", columns=SINK) + TUMBLE.format(col="ts", size=7),
            (HOUR, 0),
            "does not fit",
            3,
        ),
        (
            table("t", columns="x INT, ts TIMESTAMP(3)")
            + table("s", columns=SINK)
            + TUMBLE.format(col="ts", size=15),
            (HOUR, 0),
            "Kafka record timestamp",
            3,
        ),
        (
            table("t") + table("s") + "INSERT INTO s SELECT x FROM t JOIN t2 ON true;",
            None,
            "'t2' is not declared",
            3,
        ),
        (table("t") + "INSERT INTO nowhere SELECT x FROM t;", None, "no Kafka table", 2),
        (
            table("t") + table("s") + "CREATE VIEW v AS SELECT x FROM t GROUP BY x;",
            None,
            "view v: GROUP BY",
            3,
        ),
        (
            table("t") + "CREATE TABLE s WITH ('connector' = 'kafka', 'topic' = 's', "
            "'format' = 'json') AS SELECT COUNT(*) FROM t;",
            None,
            "keeps state",
            2,
        ),
        ("SET 'parallelism.default' = 'lots';", None, "positive integer", 1),
        ("BEGIN STATEMENT SET;\nINSERT INTO s SELECT 1 FROM t;", None, "never closed", 1),
    ],
)
def test_refusals_name_the_line(
    script: str, windows: tuple[int, int] | None, words: str, line: int
) -> None:
    with pytest.raises(FlinkSqlError, match=words) as info:
        plan_flink_sql(script, windows=windows)
    assert info.value.line == line


def test_two_inserts_into_one_sink_are_refused() -> None:
    with pytest.raises(KafkaOptionsError, match="more than one INSERT INTO"):
        plan_flink_sql(
            table("t")
            + table("s")
            + "INSERT INTO s SELECT x FROM t;\nINSERT INTO s SELECT x FROM t;"
        )


def test_views_statement_sets_and_settings(caplog: pytest.LogCaptureFixture) -> None:
    pipeline = plan_flink_sql(
        "SET 'pipeline.name' = 'routes';\nSET 'table.local-time-zone' = 'Europe/Paris';\n"
        "SET 'state.backend' = 'rocksdb';\n"
        + table("t")
        + table("a")
        + table("b")
        + "CREATE VIEW v1 AS SELECT x FROM t WHERE x > 0;\n"
        + "CREATE VIEW v2 AS SELECT x * 2 AS x FROM v1;\n"
        + "EXECUTE STATEMENT SET BEGIN\n"
        + "INSERT INTO a SELECT x FROM v2;\nINSERT INTO b SELECT x FROM t;\nEND;"
    )
    assert pipeline.name == "routes"
    a, b = pipeline.inserts
    assert (a.statement_set, b.statement_set) == (1, 1)
    assert [name for name, _ in a.views] == ["v1", "v2"]
    assert list(a.sources) == ["t"]
    assert a.spark_settings == (("spark.sql.session.timeZone", "Europe/Paris"),)
    assert pipeline.warnings == ("SET 'state.backend' (line 3) has no effect here; it is ignored.",)
    assert "state.backend" in caplog.text


def test_create_table_as_select_is_a_table_and_its_insert() -> None:
    pipeline = plan_flink_sql(
        table("t")
        + "CREATE TABLE s WITH ('connector' = 'kafka', 'topic' = 's', 'format' = 'json')\n"
        + "AS SELECT x, x * 2 AS doubled FROM t WHERE x > 0;"
    )
    [insert] = pipeline.inserts
    assert (insert.name, insert.mode, insert.columns, list(insert.sources)) == (
        "s",
        RunMode.INCREMENTAL,
        (),
        ["t"],
    )
    assert insert.sink.columns == ()


def test_distinct_inside_an_aggregate_is_the_aggregates_state() -> None:
    assert [w for w, _, _ in translate_query("SELECT DISTINCT x FROM t").stateful] == ["DISTINCT"]
    counted = translate_query("SELECT COUNT(DISTINCT x) FROM t").stateful
    assert [w for w, _, _ in counted] == ["COUNT"]
    windows = plan_flink_sql(
        table("t", columns=TS)
        + table("s", columns=SINK)
        + "INSERT INTO s SELECT window_start, COUNT(DISTINCT x) FROM TABLE(TUMBLE(TABLE t, "
        "DESCRIPTOR(ts), INTERVAL '15' MINUTE)) GROUP BY window_start;",
        windows=(HOUR, 0),
    )
    assert windows.inserts[0].mode == RunMode.WINDOWS


HOP = (
    "INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), "
    "INTERVAL '{slide}' MINUTE, INTERVAL '{size}' MINUTE)) GROUP BY window_start;"
)


def test_hopping_windows_on_time_partitions_read_back_size_minus_slide() -> None:
    plan = plan_flink_sql(
        table("t", columns=TS) + table("s", columns=SINK) + HOP.format(slide=10, size=45),
        windows=(HOUR, 0),
    )
    insert = plan.inserts[0]
    assert (insert.mode, insert.lookback_ms) == (RunMode.WINDOWS, 35 * 60_000)
    assert ":dkf_window_start" in insert.query.text
    unpartitioned = plan_flink_sql(
        table("t", columns=TS, extra=", 'scan.startup.mode' = 'earliest-offset'")
        + table("s", "upsert-kafka", columns=SINK + ", PRIMARY KEY (ws) NOT ENFORCED")
        + HOP.format(slide=10, size=45)
    )
    assert (unpartitioned.inserts[0].mode, unpartitioned.inserts[0].lookback_ms) == (
        RunMode.RECOMPUTE,
        0,
    )


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (HOP.format(slide=7, size=14), "or of the slide for HOP"),
        (
            "INSERT INTO s SELECT HOP_START(ts, INTERVAL '10' MINUTE, INTERVAL '20' MINUTE), "
            "COUNT(*) FROM t GROUP BY HOP(ts, INTERVAL '10' MINUTE, INTERVAL '20' MINUTE);",
            "use TABLE\\(HOP",
        ),
    ],
)
def test_hopping_windows_that_cannot_run_per_partition(query: str, words: str) -> None:
    with pytest.raises(FlinkSqlError, match=words):
        plan_flink_sql(table("t", columns=TS) + table("s", columns=SINK) + query, windows=(HOUR, 0))


def test_qualified_table_names_read_the_declared_tables() -> None:
    plan = plan_flink_sql(
        table("t", columns=TS)
        + table("s", columns="x INT")
        + "INSERT INTO default_catalog.default_database.s SELECT t.x FROM "
        "default_catalog.default_database.t WHERE t.x > 0 UNION ALL SELECT u.x FROM "
        "`default_database`.`t` AS u;"
    )
    insert = plan.inserts[0]
    assert (insert.name, sorted(insert.sources)) == ("s", ["t"])
    assert "FROM t WHERE t . x > 0" in insert.query.text
    assert "FROM `t` AS u" in insert.query.text


ROWTIME = "x INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND"
WINDOWED = (
    "INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE({fn}(TABLE t, DESCRIPTOR(ts), "
    "INTERVAL '1' MINUTE{more})) GROUP BY window_start, window_end;"
)


@pytest.mark.parametrize(
    "query",
    [
        WINDOWED.format(fn="TUMBLE", more=""),
        WINDOWED.format(fn="HOP", more=", INTERVAL '5' MINUTE"),
        WINDOWED.format(fn="CUMULATE", more=", INTERVAL '5' MINUTE"),
        WINDOWED.format(fn="SESSION", more=""),
        "INSERT INTO s SELECT window_start, COUNT(DISTINCT x) FROM TABLE(TUMBLE(TABLE t, "
        "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;",
        "INSERT INTO s SELECT TUMBLE_START(ts, INTERVAL '1' MINUTE), COUNT(*) FROM t "
        "GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE);",
    ],
)
def test_windows_on_a_watermark_column_run_stateful(query: str) -> None:
    [insert] = plan_flink_sql(
        table("t", columns=ROWTIME) + table("s", columns=SINK) + query
    ).inserts
    assert insert.mode == RunMode.STATEFUL
    assert {n: (t.column, t.delay_ms) for n, t in insert.event_times.items()} == {"t": ("ts", 5000)}
    # grouped by the window itself too: the column Spark's watermark follows
    assert (
        "__dkf_w" in insert.query.text.split("GROUP BY")[-1]
        or "window(ts" in insert.query.text
        or insert.query.sessions  # (the query runs per micro-batch of closed sessions)
    )


@pytest.mark.parametrize(
    ("columns", "query", "words"),
    [
        (
            ROWTIME,
            "INSERT INTO s SELECT window_start, SUM(DISTINCT x) FROM TABLE(TUMBLE(TABLE t, "
            "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;",
            r"SUM\(DISTINCT \.\.\.\) in an event-time window",
        ),
        (
            ROWTIME,
            "INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE t, "
            "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) JOIN t ON true GROUP BY window_start, "
            "window_end;",
            "JOIN with an event-time window",
        ),
        (
            "x INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts",
            WINDOWED.format(fn="TUMBLE", more=""),
            "no delay",
        ),
        (
            "x INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND * 2",
            WINDOWED.format(fn="TUMBLE", more=""),
            "event-time runs take",
        ),
    ],
)
def test_event_time_windows_that_would_differ_from_flink_are_refused(
    columns: str, query: str, words: str
) -> None:
    with pytest.raises(FlinkSqlError, match=words) as info:
        plan_flink_sql(table("t", columns=columns) + table("s", columns=SINK) + query)
    assert info.value.line == 3


def test_count_distinct_on_a_stream_counts_the_set_of_non_null_values() -> None:
    one = translate_query("SELECT COUNT(DISTINCT x) FROM t", streaming=True).text
    assert one == "SELECT size(collect_set(x)) FROM t"
    two = translate_query("SELECT COUNT(DISTINCT x, y + 1) FROM t", streaming=True).text
    assert two == (
        "SELECT size(collect_set(CASE WHEN (x) IS NOT NULL AND (y + 1) IS NOT NULL THEN "
        "struct(x, y + 1) END)) FROM t"
    )
    batch = translate_query("SELECT COUNT(DISTINCT x) FROM t").text
    assert batch == "SELECT COUNT(DISTINCT x) FROM t"


def test_a_window_on_a_column_without_watermark_beside_one_with_is_refused() -> None:
    script = (
        table("t", columns=ROWTIME)
        + table("u", columns="x INT, ts TIMESTAMP(3)")
        + table("s", columns=SINK)
        + "INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE (SELECT * FROM t "
        "UNION ALL SELECT * FROM u), DESCRIPTOR(ts), INTERVAL '1' MINUTE)) "
        "GROUP BY window_start, window_end;"
    )
    with pytest.raises(FlinkSqlError, match="source u declares no WATERMARK"):
        plan_flink_sql(script)


def test_time_partitions_keep_windows_per_partition() -> None:
    columns = ROWTIME + ", k TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'"
    query = WINDOWED.format(fn="TUMBLE", more="").replace("DESCRIPTOR(ts)", "DESCRIPTOR(k)")
    [insert] = plan_flink_sql(
        table("t", columns=columns) + table("s", columns=SINK) + query, windows=(HOUR, 0)
    ).inserts
    assert insert.mode == RunMode.WINDOWS


@pytest.mark.parametrize(
    ("watermark", "lateness"), [("k - INTERVAL '5' SECOND", 4_999), ("k", None), (None, 0)]
)
def test_time_partitions_stop_reading_where_the_watermark_closes_them(
    watermark: str | None, lateness: int | None
) -> None:
    columns = "x INT, k TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'" + (
        f", WATERMARK FOR k AS {watermark}" if watermark else ""
    )
    query = WINDOWED.format(fn="TUMBLE", more="").replace("DESCRIPTOR(ts)", "DESCRIPTOR(k)")
    script = table("t", columns=columns) + table("s", columns=SINK) + query
    if lateness is None:
        with pytest.raises(FlinkSqlError, match="with n > 0"):
            plan_flink_sql(script, windows=(HOUR, 0))
        return
    [insert] = plan_flink_sql(script, windows=(HOUR, 0)).inserts
    # Flink fires [start, end) at the first record at or after end + delay - 1 ms
    assert (insert.mode, insert.watermark_lateness_ms) == (RunMode.WINDOWS, lateness)


def test_event_time_windows_refuse_another_local_time_zone() -> None:
    script = "SET 'table.local-time-zone' = 'Europe/Berlin';\n" + (
        table("t", columns=ROWTIME)
        + table("s", columns=SINK)
        + WINDOWED.format(fn="TUMBLE", more="")
    )
    with pytest.raises(FlinkSqlError, match="local-time-zone"):
        plan_flink_sql(script)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (
            "INSERT INTO s SELECT x, COUNT(*) FROM t JOIN u ON t.x = u.x GROUP BY x "
            "HAVING COUNT(*) > 1;",
            "HAVING over this query",
        ),
        (  # the rank written: Flink updates every row whose rank changes
            "INSERT INTO s SELECT x, rn FROM (SELECT x, n, ROW_NUMBER() OVER (PARTITION BY x "
            "ORDER BY n DESC) AS rn FROM t) WHERE rn <= 3;",
            "Top-N",
        ),
    ],
)
def test_recomputed_results_whose_rows_can_leave_are_refused(query: str, words: str) -> None:
    script = (
        table("t", columns="x INT, n INT", extra=", 'scan.startup.mode' = 'earliest-offset'")
        + table("u", columns="x INT", extra=", 'scan.startup.mode' = 'earliest-offset'")
        + table("s", "upsert-kafka", columns="x INT, n BIGINT, PRIMARY KEY (x) NOT ENFORCED")
        + query
    )
    with pytest.raises(FlinkSqlError, match=words):
        plan_flink_sql(script)


@pytest.mark.parametrize(("kept", "limit"), [("<= 3", 3), ("< 3", 2)])
def test_a_top_n_into_an_upsert_sink_runs_stateful(kept: str, limit: int) -> None:
    script = (
        table("t", columns="x INT, n INT, k STRING")
        + table("s", "upsert-kafka", columns="x INT, n BIGINT, PRIMARY KEY (x) NOT ENFORCED")
        + "INSERT INTO s SELECT x, n FROM (SELECT x, n, ROW_NUMBER() OVER (PARTITION BY k "
        f"ORDER BY n DESC, x) AS rn FROM t) WHERE rn {kept};"
    )
    [insert] = plan_flink_sql(script).inserts
    assert (insert.mode, insert.output_mode) == (RunMode.STATEFUL, "append")
    [top] = insert.query.top_n
    assert (top.keys, top.orders, top.limit) == (("k",), (("n", True), ("x", False)), limit)
    assert top.text == "SELECT x, n FROM t"
    # the changes' row kinds go on to the sink: a row pushed out of the top is deleted
    assert f"x , n , `_rowkind` FROM (SELECT *, 1 AS rn FROM {top.view})" in insert.query.text


def test_a_top_n_into_an_append_sink_is_refused_as_flink_refuses_it() -> None:
    script = (
        table("t", columns="x INT, n INT, k STRING")
        + table("s", columns="x INT, n BIGINT")
        + "INSERT INTO s SELECT x, n FROM (SELECT x, n, ROW_NUMBER() OVER (PARTITION BY k "
        "ORDER BY n DESC) AS rn FROM t) WHERE rn <= 3;"
    )
    with pytest.raises(FlinkSqlError, match="keeps state"):
        plan_flink_sql(script)


def test_first_row_deduplication_still_recomputes() -> None:
    script = (
        table("t", columns="x INT, n INT", extra=", 'scan.startup.mode' = 'earliest-offset'")
        + table("s", "upsert-kafka", columns="x INT, n BIGINT, PRIMARY KEY (x) NOT ENFORCED")
        + "INSERT INTO s SELECT x, n FROM (SELECT x, n, ROW_NUMBER() OVER (PARTITION BY x "
        "ORDER BY n) AS rn FROM t) WHERE rn = 1;"
    )
    assert plan_flink_sql(script).inserts[0].mode == RunMode.RECOMPUTE


@pytest.mark.parametrize(
    ("ddl", "word"),
    [
        ("CREATE TABLE views (a INT) WITH ('connector' = 'datagen');", "VIEWS"),
        (
            "CREATE TABLE t (a INT, `user` STRING, value INT) WITH ('connector' = 'datagen');",
            "VALUE",
        ),
    ],
)
def test_reserved_words_as_names_are_refused_unless_quoted(ddl: str, word: str) -> None:
    with pytest.raises(FlinkSqlError, match=f"found {word}, a reserved word"):
        plan_flink_sql(ddl)


@pytest.mark.parametrize(
    "query",
    [
        "INSERT INTO s SELECT x FROM t WHERE x IN (SELECT x FROM u);",
        "INSERT INTO s SELECT x FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.x = t.x);",
    ],
)
def test_joins_not_written_with_join_keep_state(query: str) -> None:
    script = table("t") + table("u") + table("s") + query
    with pytest.raises(FlinkSqlError, match="keeps state \\(JOIN\\)"):
        plan_flink_sql(script)
    comma = plan_flink_sql(
        table("t") + table("u") + table("s") + "INSERT INTO s SELECT t.x FROM t, u WHERE t.x = u.x;"
    )
    assert comma.inserts[0].mode == RunMode.STATEFUL  # a stream join, not stateless


def test_commas_of_function_calls_and_select_lists_are_not_joins() -> None:
    script = (
        table("t") + table("s") + "INSERT INTO s SELECT COALESCE(x, 1) FROM t WHERE x IN (1, 2);"
    )
    assert plan_flink_sql(script).inserts[0].mode == RunMode.INCREMENTAL


def test_window_assignment_without_aggregation_stays_incremental() -> None:
    query = (
        "INSERT INTO s SELECT window_start, x FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
        "INTERVAL '1' MINUTE));"
    )
    [insert] = plan_flink_sql(
        table("t", columns=ROWTIME) + table("s", columns=SINK) + query
    ).inserts
    assert insert.mode == RunMode.INCREMENTAL


def test_an_event_time_window_over_a_changelog_source_is_refused() -> None:
    source = table("t", "upsert-kafka", columns=ROWTIME + ", PRIMARY KEY (x) NOT ENFORCED")
    query = WINDOWED.format(fn="TUMBLE", more="")
    with pytest.raises(FlinkSqlError, match="source t is a changelog"):
        plan_flink_sql(source + table("s", columns=SINK) + query)


def test_a_session_window_reads_its_closed_sessions_per_partition_key() -> None:
    [insert] = plan_flink_sql(
        table("t", columns=ROWTIME + ", k STRING")
        + table("s", columns="k STRING, ws TIMESTAMP(3), n BIGINT")
        + "INSERT INTO s SELECT k, window_start, COUNT(*) FROM TABLE(SESSION(TABLE t PARTITION "
        "BY k, DESCRIPTOR(ts), INTERVAL '30' SECOND)) GROUP BY k, window_start, window_end;"
    ).inserts
    assert insert.mode.value == "stateful"
    [session] = insert.query.sessions
    assert (session.data, session.time_column, session.gap_ms, session.keys) == (
        "t", "ts", 30_000, ("k",)
    )  # fmt: skip
    assert f"FROM (SELECT * FROM {session.view})" in insert.query.text


def test_a_legacy_session_group_window_runs_as_the_session_table_function() -> None:
    [insert] = plan_flink_sql(
        table("t", columns=ROWTIME + ", k STRING")
        + table("s", columns="k STRING, ws TIMESTAMP(3), wt TIMESTAMP(3), n BIGINT")
        + "INSERT INTO s SELECT k, SESSION_START(ts, INTERVAL '30' SECOND), "
        "SESSION_ROWTIME(ts, INTERVAL '30' SECOND), COUNT(*) FROM t WHERE x > 1 "
        "GROUP BY k, SESSION(ts, INTERVAL '30' SECOND);"
    ).inserts
    assert insert.mode.value == "stateful"
    [session] = insert.query.sessions
    # sessions per the other GROUP BY columns, the WHERE before they form, as Flink does
    assert (session.data, session.gap_ms, session.keys) == (
        "(SELECT * FROM t WHERE x > 1)", 30_000, ("k",)
    )  # fmt: skip
    assert insert.query.text.endswith("GROUP BY k , window_start , window_end , window_time")


def test_a_legacy_session_group_window_over_an_alias_is_refused() -> None:
    script = (
        table("t", columns=ROWTIME)
        + table("s", columns=SINK)
        + "INSERT INTO s SELECT SESSION_START(ts, INTERVAL '1' MINUTE), COUNT(*) FROM t AS a "
        "GROUP BY SESSION(ts, INTERVAL '1' MINUTE);"
    )
    with pytest.raises(FlinkSqlError, match="one table named without an alias"):
        plan_flink_sql(script)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        # Flink's sessions are per PARTITION BY key: grouping by another column is refused
        (
            "INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE t, "
            "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY x, window_start, window_end;",
            r"PARTITION BY columns \(none\), as Flink requires; this one groups by x, window_",
        ),
        (
            "INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE t, "
            "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start;",
            "groups by window_start, window_end",
        ),
        (
            "INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE t, "
            "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) AS w WHERE x > 1 GROUP BY window_start, "
            "window_end;",
            "filter in a view the SESSION reads",
        ),
        # no WATERMARK on the time column: no stateful run, and bounded runs cannot close sessions
        (
            "INSERT INTO s SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE u, "
            "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;",
            "a SESSION window runs only as an event-time window aggregation",
        ),
        (
            "INSERT INTO s SELECT window_start, 1 FROM TABLE(SESSION(TABLE t, DESCRIPTOR(ts), "
            "INTERVAL '1' MINUTE));",
            "a SESSION window runs only as an event-time window aggregation",
        ),
    ],
)
def test_session_windows_flink_would_not_run_the_same_are_refused(query: str, words: str) -> None:
    script = (
        table("t", columns=ROWTIME)
        + table(
            "u", columns="x INT, ts TIMESTAMP(3)", extra=", 'scan.startup.mode' = 'earliest-offset'"
        )
        + table("s", columns=SINK)
    )
    with pytest.raises(FlinkSqlError, match=words):
        plan_flink_sql(script + query)


def test_an_interval_join_is_refused_into_an_upsert_sink_too() -> None:
    # a recompute would keep the pairs of rows Flink's watermark drops as late (corpus j02)
    script = (
        table("t", columns=JOINED, extra=", 'scan.startup.mode' = 'earliest-offset'")
        + table("u", columns=JOINED, extra=", 'scan.startup.mode' = 'earliest-offset'")
        + table("s", "upsert-kafka", columns="x INT, y INT, PRIMARY KEY (x) NOT ENFORCED")
        + "INSERT INTO s SELECT a.x, b.x FROM t AS a, u AS b WHERE a.x = b.x AND a.ts "
        "BETWEEN b.ts AND b.ts + INTERVAL '1' MINUTE;"
    )
    with pytest.raises(FlinkSqlError, match=r"time attribute\(s\) t.ts, u.ts \(an interval join\)"):
        plan_flink_sql(script)


def test_join_kinds_are_read_from_the_query() -> None:
    kinds = translate_query(
        "SELECT * FROM e, a JOIN b ON a.x = b.x INNER JOIN c ON c.x = a.x LEFT OUTER JOIN d ON "
        "d.x = a.x WHERE a.x IN (SELECT x FROM f) AND NOT EXISTS (SELECT 1 FROM g)"
    ).joins
    assert kinds == ("INNER", "INNER", "INNER", "LEFT", "SEMI", "ANTI")


JOINED = "x INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND"


@pytest.mark.parametrize(
    ("query", "mode"),
    [
        ("SELECT a.x, b.x FROM t AS a JOIN u AS b ON a.x = b.x", RunMode.STATEFUL),
        ("SELECT a.x, b.x FROM t AS a, u AS b WHERE a.x = b.x AND a.x > 0", RunMode.STATEFUL),
        ("SELECT a.x, b.x FROM t AS a LEFT JOIN u AS b ON a.x = b.x", None),
        ("SELECT a.x, a.x FROM t AS a WHERE a.x IN (SELECT x FROM u)", None),
        # an interval join: Flink drops its late rows by the watermark
        (
            "SELECT a.x, b.x FROM t AS a, u AS b WHERE a.x = b.x AND a.ts BETWEEN b.ts - "
            "INTERVAL '1' MINUTE AND b.ts",
            None,
        ),
        ("SELECT a.x, COUNT(*) FROM t AS a JOIN u AS b ON a.x = b.x GROUP BY a.x", None),
    ],
)
def test_regular_inner_joins_into_an_append_sink_run_as_stream_joins(
    query: str, mode: RunMode | None
) -> None:
    script = (
        table("t", columns=JOINED)
        + table("u", columns=JOINED)
        + table("s", columns="x INT, y INT")
        + f"INSERT INTO s {query};"
    )
    if mode is None:
        with pytest.raises(FlinkSqlError, match=r"keeps state|an interval join"):
            plan_flink_sql(script)
        return
    [insert] = plan_flink_sql(script).inserts
    assert (insert.mode, insert.output_mode, dict(insert.event_times)) == (mode, "append", {})


PROCTIME = "k STRING, x INT, pt AS PROCTIME()"
FIRST = (
    "INSERT INTO s SELECT k, x FROM (SELECT {items}, ROW_NUMBER() OVER (PARTITION BY k ORDER BY "
    "{order}) AS rn FROM t) WHERE rn {kept};"
)


@pytest.mark.parametrize(
    ("items", "order", "kept", "deduplicated"),
    [
        ("*", "pt", "= 1", True),
        ("k, x", "pt ASC", "<= 1", True),
        ("*", "pt DESC", "= 1", False),  # the last row: Flink's output updates
        ("*", "x", "= 1", False),  # not processing time
        ("*", "pt", "<= 2", False),  # a Top-N
        ("x", "pt", "= 1", False),  # the key is not a column of the rows
    ],
)
def test_first_row_deduplication_on_processing_time_runs_as_drop_duplicates(
    items: str, order: str, kept: str, deduplicated: bool
) -> None:
    script = (
        table("t", columns=PROCTIME)
        + table("s", columns="k STRING, x INT")
        + FIRST.format(items=items, order=order, kept=kept)
    )
    if not deduplicated:
        with pytest.raises(FlinkSqlError, match="keeps state"):
            plan_flink_sql(script)
        return
    [insert] = plan_flink_sql(script).inserts
    assert (insert.mode, insert.output_mode) == (RunMode.STATEFUL, "append")
    [(view, text, keys)] = insert.query.deduplicated
    assert keys == ("k",) and text == f"SELECT {items} FROM t"
    assert f"FROM (SELECT *, 1 AS rn FROM {view}) WHERE rn" in insert.query.text
