"""Flink SQL scripts → statements: our own examples covering the constructs of the seeds."""

from __future__ import annotations

import pickle

import pytest
from pyspark.sql import types as T

from dagster_kafka_flinklike.options import (
    DeliveryGuarantee,
    KafkaOptionsError,
    StartupMode,
    ValueFieldsInclude,
    struct_type,
)
from dagster_kafka_flinklike.sql import (
    CreateTable,
    CreateView,
    FlinkSqlError,
    InsertInto,
    SetOption,
    Watermark,
    parse_flink_sql,
)

SCRIPT = """
-- Clicks arrive as CSV; the pipeline counts them per page.
SET 'pipeline.name' = 'clicks';

CREATE TEMPORARY TABLE IF NOT EXISTS shop.web.`clicks` (
  `page`      STRING NOT NULL COMMENT 'page path',
  `user_id`   BIGINT,
  `price`     DECIMAL(10, 2),
  `tags`      ARRAY<STRING>,
  `attrs`     ROW<`k` INT, v STRING>,
  `src_topic` STRING NOT NULL METADATA FROM 'topic' VIRTUAL,
  `offset`    BIGINT NOT NULL METADATA VIRTUAL,
  `event_ts`  TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  `day`       AS CAST(`event_ts` AS DATE),
  WATERMARK FOR `event_ts` AS `event_ts` - INTERVAL '5' SECOND
) COMMENT 'raw clicks' WITH (
  'connector' = 'kafka',
  'topic' = 'clicks-eu;clicks-us',
  'properties.bootstrap.servers' = 'localhost:9092',
  'properties.group.id' = 'click-counter',
  'scan.startup.mode' = 'timestamp',
  'scan.startup.timestamp-millis' = '1700000000000',
  /* CSV with a control character as separator */
  'format' = 'csv',
  'csv.field-delimiter' = '\\u0001',
  'csv.quote-character' = '''',
  'csv.ignore-parse-errors' = 'true'
);

CREATE TABLE page_counts (
  `k_page` STRING,
  `views`  BIGINT,
  `ts`     TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  `hdrs`   MAP<STRING, BYTES> METADATA FROM 'headers'
) WITH (
  'connector' = 'kafka',
  'topic' = 'page-counts',
  'key.format' = 'raw',
  'key.fields' = 'k_page',
  'key.fields-prefix' = 'k_',
  'value.format' = 'json',
  'value.fields-include' = 'EXCEPT_KEY',
  'value.json.encode.ignore-null-fields' = 'true',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'page-counts'
);

CREATE TABLE totals (
  region STRING,
  total  DECIMAL(12, 2),
  PRIMARY KEY (region) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka', 'topic' = 'totals', 'key.format' = 'json', 'value.format' = 'json'
);

CREATE TEMPORARY VIEW recent AS SELECT page, user_id FROM clicks WHERE `day` > DATE '2024-01-01';

INSERT INTO page_counts
SELECT page AS k_page, COUNT(*) AS views, MAX(event_ts), CAST(NULL AS MAP<STRING, BYTES>)
FROM recent GROUP BY page;

CREATE TABLE audit (line STRING) WITH ('connector' = 'print');
INSERT INTO audit SELECT page FROM shop.web.clicks c LEFT JOIN totals t ON c.page = t.region;
"""


@pytest.fixture(scope="module")
def statements() -> list:
    return parse_flink_sql(SCRIPT)


def test_statement_kinds_in_order(statements: list) -> None:
    kinds = [type(s).__name__ for s in statements]
    assert kinds == [
        "SetOption",
        "CreateTable",
        "CreateTable",
        "CreateTable",
        "CreateView",
        "InsertInto",
        "CreateTable",
        "InsertInto",
    ]
    assert statements[0] == SetOption("pipeline.name", "clicks", line=3)


def test_source_table_round_trip(statements: list) -> None:
    clicks: CreateTable = statements[1]
    assert (clicks.name, clicks.qualified_name) == ("clicks", ("shop", "web", "clicks"))
    assert clicks.temporary and clicks.if_not_exists and clicks.comment == "raw clicks"
    assert clicks.supported and clicks.connector == "kafka" and clicks.error is None
    assert clicks.watermark == Watermark("event_ts", "`event_ts` - INTERVAL '5' SECOND")
    spec = clicks.spec
    assert spec is not None and spec.name == "clicks"
    assert spec.topics == ("clicks-eu", "clicks-us")
    assert spec.startup_mode is StartupMode.TIMESTAMP
    assert spec.startup_timestamp_millis == 1_700_000_000_000
    assert spec.value_format.settings["field-delimiter"] == "\x01"
    assert spec.value_format.settings["quote-character"] == "'"
    assert spec.value_format.ignore_parse_errors
    assert [c.name for c in spec.physical_columns] == ["page", "user_id", "price", "tags", "attrs"]
    assert [(c.name, c.metadata_key, c.virtual) for c in spec.metadata_columns] == [
        ("src_topic", "topic", True),
        ("offset", "offset", True),
        ("event_ts", "timestamp", False),
    ]
    # computed columns keep the Spark SQL translation, which the reader evaluates
    assert [(c.name, c.expression) for c in spec.computed_columns] == [
        ("day", "CAST(`event_ts` AS date)")
    ]
    assert spec.columns[0].comment == "page path"
    assert struct_type(spec.physical_columns) == T.StructType(
        [
            T.StructField("page", T.StringType(), False),
            T.StructField("user_id", T.LongType()),
            T.StructField("price", T.DecimalType(10, 2)),
            T.StructField("tags", T.ArrayType(T.StringType())),
            T.StructField(
                "attrs",
                T.StructType(
                    [T.StructField("k", T.IntegerType()), T.StructField("v", T.StringType())]
                ),
            ),
        ]
    )


def test_sink_table_is_validated_as_a_sink(statements: list) -> None:
    counts: CreateTable = statements[2]
    spec = counts.spec
    assert spec is not None and spec.role == "sink"
    assert spec.key_format is not None and spec.key_format.name == "raw"
    assert spec.key_fields == ("k_page",) and spec.key_field_names == ("page",)
    assert spec.value_fields_include is ValueFieldsInclude.EXCEPT_KEY
    assert [c.name for c in spec.value_columns] == ["views"]
    assert spec.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
    assert spec.value_format.settings["encode.ignore-null-fields"] is True
    insert: InsertInto = statements[5]
    assert insert.target == "page_counts" and insert.table == counts
    assert insert.sources == ("recent",)
    assert insert.query.startswith("SELECT page AS k_page") and insert.query.endswith("page")


def test_upsert_table_view_and_unsupported_connector(statements: list) -> None:
    totals: CreateTable = statements[3]
    assert totals.primary_key == ("region",)
    assert (
        totals.spec is not None and totals.spec.is_upsert and totals.spec.key_fields == ("region",)
    )
    view: CreateView = statements[4]
    assert (view.name, view.temporary, view.sources) == ("recent", True, ("clicks",))
    audit: CreateTable = statements[6]
    assert not audit.supported and audit.spec is None and audit.error is None
    last: InsertInto = statements[7]
    assert last.table == audit and last.sources == ("shop.web.clicks", "totals")


def test_statements_pickle(statements: list) -> None:
    assert pickle.loads(pickle.dumps(statements)) == statements


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "CREATE TABLE t (a INT) WITH ('connector'='kafka','topic'='x','format'='csv',"
            "'csv.field-delimiter'=U&'\\0009')",
            "\t",
        ),
        (
            "CREATE TABLE t (a INT) WITH ('connector'='kafka','topic'='x','format'='csv',"
            "'csv.field-delimiter'=U&'#0001' UESCAPE '#')",
            "\x01",
        ),
        (
            "CREATE TABLE t (a INT) WITH ('connector'='kafka','topic'='x','format'='csv',"
            "'csv.field-delimiter'='\\t')",
            "\t",
        ),
        (
            "CREATE TABLE t (a INT) WITH ('connector'='kafka','topic'='x','format'='csv',"
            "'csv.field-delimiter'=';')",
            ";",
        ),
    ],
)
def test_string_literal_forms(sql: str, expected: str) -> None:
    [table] = parse_flink_sql(sql)
    assert table.spec.value_format.settings["field-delimiter"] == expected


def test_unicode_escapes_and_quotes() -> None:
    sql = "SET 'k' = U&'caf\\00e9 \\+01F600 \\\\ x''y'"
    assert parse_flink_sql(sql)[0].value == "café \U0001f600 \\ x'y"


@pytest.mark.parametrize(
    ("sql", "line", "column", "fragment"),
    [
        ("CREATE TABLE t (a INT", 1, 22, "expected ',' or ')' but found the end of the script"),
        ("CREATE TABLE t (\n  a FOO\n)", 2, 5, "column 'a' has an invalid type: unknown type"),
        ("CREATE TABLE t (a INT) WITH ('connector' = kafka)", 1, 44, "a string literal"),
        ("CREATE TABLE t (a INT) WITH ('a' = 'b' 'c' = 'd')", 1, 40, "expected ','"),
        ("CREATE TABLE t (a INT) WITH ('a' = 'b',)", 1, 40, "option key"),
        ("CREATE VIEW v", 1, 14, "expected AS"),
        ("INSERT t SELECT 1", 1, 8, "expected INTO"),
        ("INSERT INTO t", 1, 14, "a query"),
        ("INSERT INTO t FROM x", 1, 15, "expected a query"),
        ("DROP TABLE t", 1, 1, "unsupported statement starting with 'DROP'"),
        ("CREATE FUNCTION f", 1, 8, "expected TABLE or VIEW"),
        ("CREATE TABLE t (a INT, PRIMARY KEY (a))", 1, 39, "NOT ENFORCED"),
        (
            "CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED, PRIMARY KEY (a) NOT ENFORCED)",
            1,
            49,
            "only one PRIMARY KEY",
        ),
        (
            "CREATE TABLE t (a TIMESTAMP(3), WATERMARK FOR a AS a, WATERMARK FOR a AS a)",
            1,
            55,
            "only one WATERMARK",
        ),
        ("CREATE TABLE t (a INT) LIKE s", 1, 24, "LIKE is not supported"),
        ("CREATE TABLE t (a INT) WITH ('k' = 'unterminated)", 1, 36, "unterminated string"),
        ("CREATE TABLE t (`a INT)", 1, 17, "unterminated `quoted identifier`"),
        ("CREATE TABLE t (a INT) /* never closed", 1, 24, "unterminated /* comment"),
        ("SET 'k' = U&'\\zz'", 1, 11, "invalid escape"),
        ("SET 'k' = U&'\\D800'", 1, 11, "invalid code point"),
        ("SET 'k' = 'v' ; SET", 1, 20, "an option key"),
        ("CREATE TABLE t (a INT) x", 1, 24, "expected ';'"),
        ("CREATE TABLE t (a AS )", 1, 22, "expression for computed column 'a'"),
        ("CREATE TABLE t (a , b INT)", 1, 19, "expected the type of column 'a'"),
        ("CREATE TABLE t (a INT METADATA FROM 42)", 1, 37, "a metadata key"),
    ],
)
def test_syntax_errors_point_at_the_token(sql: str, line: int, column: int, fragment: str) -> None:
    with pytest.raises(FlinkSqlError) as info:
        parse_flink_sql(sql)
    assert (info.value.line, info.value.column) == (line, column), str(info.value)
    assert str(info.value).startswith(f"line {line}, column {column}: ")
    assert fragment in str(info.value)
    assert isinstance(info.value, KafkaOptionsError)


BAD_TABLE = """CREATE TABLE bad (a INT)
WITH ('connector' = 'kafka', 'topic' = 'x', 'format' = 'json', 'scan.startup.mode' = 'now',
      'properties.sasl.jaas.config' = 'x.PlainLoginModule required username="u" password="pw";')"""


def test_invalid_kafka_table_strict_and_collected() -> None:
    with pytest.raises(FlinkSqlError) as info:
        parse_flink_sql(BAD_TABLE)
    assert info.value.keys == ("scan.startup.mode",)
    assert (info.value.line, info.value.column) == (2, 1)
    assert "table 'bad': Invalid value for option 'scan.startup.mode'" in str(info.value)
    [table] = parse_flink_sql(BAD_TABLE, strict=False)
    assert table.spec is None and table.supported
    assert isinstance(table.error, FlinkSqlError) and table.error.keys == ("scan.startup.mode",)
    assert "pw" not in repr(table) and "******" in repr(table)


@pytest.mark.parametrize(
    ("sql", "keys", "fragment"),
    [
        (
            "CREATE TABLE t (a INT) WITH ('connector'='kafka','topic'='x','topic'='y',"
            "'format'='json')",
            ("topic",),
            "option 'topic' is set twice",
        ),
        (
            "CREATE TABLE t (a INT) PARTITIONED BY (a) WITH ('connector'='kafka','topic'='x',"
            "'format'='json')",
            (),
            "cannot be PARTITIONED BY",
        ),
        (
            "CREATE TABLE t (a INT, WATERMARK FOR b AS b) WITH ('connector'='kafka','topic'='x',"
            "'format'='json')",
            (),
            "rowtime attribute 'b' of the WATERMARK is not a column",
        ),
        (
            "CREATE TABLE t (a INT, WATERMARK FOR a AS a) WITH ('connector'='kafka','topic'='x',"
            "'format'='json')",
            (),
            "must be of type TIMESTAMP(p) or TIMESTAMP_LTZ(p)",
        ),
        (
            "CREATE TABLE t (a TIMESTAMP(6), WATERMARK FOR a AS a) WITH ('connector'='kafka',"
            "'topic'='x','format'='json')",
            (),
            "p from 0 to 3",
        ),
        (
            "CREATE TABLE t (a INT) WITH ('connector'='kafka','topic'='x','format'='json');"
            "CREATE TABLE t (b INT) WITH ('connector'='kafka','topic'='y','format'='json')",
            (),
            "already declared at line 1",
        ),
        (
            "CREATE TABLE t (a INT, o BIGINT METADATA FROM 'offset') WITH ('connector'='kafka',"
            "'topic'='x','format'='json'); INSERT INTO t SELECT 1, 2",
            (),
            "(the target of INSERT INTO): Metadata column 'o' (key 'offset') is read-only",
        ),
        (
            "CREATE TABLE t (a INT) WITH ('connector'='kafka','topic'='x;y','format'='json');"
            "INSERT INTO t SELECT 1",
            ("topic",),
            "exactly one topic",
        ),
    ],
)
def test_table_validation_errors(sql: str, keys: tuple[str, ...], fragment: str) -> None:
    with pytest.raises(FlinkSqlError) as info:
        parse_flink_sql(sql)
    assert info.value.keys == keys
    assert fragment in str(info.value)
    statements = parse_flink_sql(sql, strict=False)
    errors = [s.error for s in statements if isinstance(s, CreateTable) and s.error]
    assert errors and fragment in str(errors[0])


def test_connector_identifier_is_case_sensitive() -> None:
    sql = "CREATE TABLE t (a INT) WITH ('connector' = 'Kafka', 'topic' = 'x', 'format' = 'json')"
    with pytest.raises(FlinkSqlError, match="case-sensitive: write 'kafka'") as info:
        parse_flink_sql(sql)
    assert info.value.keys == ("connector",)


def test_if_not_exists_redeclaration_and_empty_script() -> None:
    sql = (
        "CREATE TABLE t (a INT) WITH ('connector'='print');"
        "CREATE TABLE IF NOT EXISTS t (a INT) WITH ('connector'='print');"
    )
    assert len(parse_flink_sql(sql)) == 2
    assert parse_flink_sql("") == [] and parse_flink_sql(" ;; -- nothing\n/* */") == []
    with pytest.raises(KafkaOptionsError, match="must be a string"):
        parse_flink_sql(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("sql", "sources"),
    [
        ("INSERT INTO s SELECT * FROM a", ("a",)),
        ("INSERT INTO s SELECT * FROM a, b AS bb, c WHERE a.x = b.x", ("a", "b", "c")),
        ("INSERT INTO s SELECT * FROM (SELECT x FROM a) JOIN `b` ON true", ("a", "b")),
        (
            "INSERT INTO s SELECT * FROM cat.db.a AS x LEFT OUTER JOIN d FOR SYSTEM_TIME AS OF x.p",
            ("cat.db.a", "d"),
        ),
        (
            "INSERT INTO s SELECT * FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), "
            "INTERVAL '1' MINUTES))",
            ("clicks",),
        ),
        ("INSERT INTO s VALUES (1, 'FROM x')", ()),
        ("INSERT INTO s (a, b) SELECT a, b FROM t", ("t",)),
        ("INSERT INTO s (SELECT a FROM t)", ("t",)),
        ("INSERT OVERWRITE s SELECT a FROM t", ("t",)),
        ("INSERT INTO s PARTITION (dt='2024') SELECT a FROM t", ("t",)),
        ("INSERT INTO s SELECT SUBSTRING(a FROM 2) FROM t", ("t",)),
        ("INSERT INTO s SELECT EXTRACT(YEAR FROM ts), TRIM(BOTH ' ' FROM n) FROM t", ("t",)),
        ("INSERT INTO s SELECT * FROM t WHERE x IN (SELECT y FROM u)", ("t", "u")),
        ("INSERT INTO s SELECT ',' FROM t", ("t",)),
        ("INSERT INTO s WITH w AS (SELECT * FROM t) SELECT * FROM w", ("t", "w")),
    ],
)
def test_query_sources(sql: str, sources: tuple[str, ...]) -> None:
    [insert] = parse_flink_sql(sql)
    assert isinstance(insert, InsertInto)
    assert insert.sources == sources


def test_insert_forms() -> None:
    [a, b] = parse_flink_sql("INSERT INTO s (x, y) SELECT 1, 2; INSERT OVERWRITE s SELECT 3")
    assert a.column_names == ("x", "y") and not a.overwrite
    assert b.overwrite and b.query == "SELECT 3"


def test_ctas_and_tables_without_options() -> None:
    sql = """CREATE TABLE IF NOT EXISTS lake.kafka.`copy` WITH ('connector' = 'hologres')
             AS TABLE vvp.`default`.src ADD COLUMN `x` AS COALESCE(JSON_VALUE(`p`, '$.x'), 'd');
             CREATE TABLE db1.t1 (id BIGINT, name VARCHAR(10)); CREATE TABLE db1.t2 (id BIGINT);"""
    ctas, t1, t2 = parse_flink_sql(sql)
    assert ctas.as_query is not None and ctas.as_query.startswith("TABLE vvp.`default`.src")
    assert ctas.sources == ("vvp.default.src",) and ctas.columns == ()
    assert t1.connector is None and not t1.supported and t1.qualified_name == ("db1", "t1")
    assert [c.type for c in t2.columns] == ["BIGINT"]


def test_reserved_words_and_odd_identifiers() -> None:
    sql = """CREATE TABLE `my table` (
      `timestamp` TIMESTAMP_LTZ(3) METADATA,
      `partition` INT METADATA VIRTUAL,
      `a``b` STRING,
      `ümlaut` INT,
      `watermark` INT,
      `primary` STRING
    ) WITH ('connector'='kafka','topic'='t','format'='json')"""
    [table] = parse_flink_sql(sql)
    # Flink refuses its reserved words unquoted (the list is asked of Flink: test_flink_oracle)
    with pytest.raises(FlinkSqlError, match="PARTITION, a reserved word"):
        parse_flink_sql(sql.replace("`partition`", "partition"))
    assert table.name == "my table"
    assert [c.name for c in table.columns] == [
        "timestamp",
        "partition",
        "a`b",
        "ümlaut",
        "watermark",
        "primary",
    ]
    assert table.columns[0].metadata_key == "timestamp"


SECRET = "Hunter2-s3cr3t"
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '


@pytest.mark.parametrize(
    ("options", "column", "message"),
    [
        (  # a single quote inside the value ends the string: the password reads as words
            f"'properties.sasl.jaas.config' = '{JAAS}password='{SECRET}';'",
            122,
            "expected ',' or ')' after the value of option 'properties.sasl.jaas.config' but "
            "found a word (a quote inside a value is written twice: '')",
        ),
        (  # a value written without quotes
            f"'properties.sasl.password' = {SECRET}",
            30,
            "expected the value of option 'properties.sasl.password' (a string literal) but "
            "found a word",
        ),
        (  # after a secret option, no token of the WITH list is quoted
            f"'properties.ssl.key.password' = 'k', 'format' = 'json' {SECRET}",
            56,
            "expected ',' or ')' after the value of option 'format' but found a word (a quote "
            "inside a value is written twice: '')",
        ),
    ],
)
def test_an_error_after_a_secret_option_quotes_no_token(
    options: str, column: int, message: str
) -> None:
    sql = f"CREATE TABLE t (a STRING) WITH ('connector' = 'kafka', 'topic' = 't',\n{options})"
    with pytest.raises(FlinkSqlError) as caught:
        parse_flink_sql(sql)
    assert str(caught.value) == f"line 2, column {column}: {message}"
    assert SECRET not in str(caught.value)
    with pytest.raises(FlinkSqlError) as caught:
        parse_flink_sql(f"SET 'properties.sasl.password' = {SECRET}")
    assert (
        str(caught.value)
        == "line 1, column 34: expected an option value (a string literal) but found a word"
    )
    # elsewhere a token is quoted, as before
    with pytest.raises(FlinkSqlError, match="but found 'oops'"):
        parse_flink_sql("CREATE TABLE t (a STRING) WITH ('format' = 'json' oops)")
