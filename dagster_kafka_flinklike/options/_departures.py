"""Deliberate departures from Apache Flink's Kafka connector, declared once.

The options reference page lists them (``docs/options.md``, "Departures from Flink"), and the
rules that refuse a Flink feature this platform cannot honour quote the same reason in their
error, so the page and the messages never drift apart.
"""

from __future__ import annotations

#: Why a sink writes to a single topic (Flink also takes a topic list or a pattern on a sink).
SINK_TOPIC_REASON = (
    "Flink's topic list or 'topic-pattern' on a sink lets a writable 'topic' metadata column "
    "choose the topic of each row, and 'topic' metadata is read-only in this project"
)

#: Why ``sink.transaction-naming-strategy`` = ``INCREMENTING`` is refused.
INCREMENTING_REASON = (
    "the exactly-once sink keeps one stable transactional id per asset, so each run's "
    "init_transactions fences the run before it and aborts its open transaction before any "
    "offset is read; an id that grows with every run would leave a crashed run's transaction "
    "open (blocking read_committed readers until it times out). 'POOLING' reuses ids as this "
    "sink does"
)

#: Why ``protobuf.descriptor-file`` refuses a ``.proto`` source file.
PROTO_SOURCE_REASON = (
    "a .proto source file needs the protobuf compiler, which the Python protobuf package does "
    "not include; compile it once into a descriptor set with `protoc --include_imports "
    "--descriptor_set_out=<file>.desc <file>.proto` and name that file"
)

#: Every departure, one Markdown bullet each, in the order the reference page lists them.
DEPARTURES: tuple[str, ...] = (
    "`properties.bootstrap.servers` may be omitted: a Dagster `KafkaResource` supplies it at run "
    "time.",
    "Every run is bounded: `scan.bounded.mode` = `unbounded` (the default) reads up to the end of "
    "the log as it was when the run was planned. The offsets of the last successful "
    "materialization (the checkpoint) take priority over `scan.startup.mode`, as Flink's "
    "checkpoint does.",
    "Options are validated when the definitions load, before a query uses the table, so a table "
    "declared without a role (`KafkaTableSpec.from_options(..., role=None)`, and every Flink SQL "
    "`CREATE TABLE`, checked before its `INSERT`s are known) must be valid both as a source and "
    "as a sink; Flink checks a table only for the way a query uses it. Once the use is known "
    "(`role='source'` / `role='sink'`, the tables of a streaming asset or an IO manager, a Flink "
    "SQL `INSERT` target or a table the queries only read), only that use's rules apply, and "
    "options of the other use are accepted with a `KafkaOptionsWarning`, as Flink ignores them.",
    "Options Flink accepts but ignores (offsets or timestamps of a startup / bounded mode that "
    "is not selected, `sink.transactional-id-prefix` without exactly-once, `value.format` beside "
    "a different `format`, a topic named twice, a partition named twice in specific offsets, "
    "where the last wins) are accepted with a `KafkaOptionsWarning` naming the option.",
    "`properties.group.id` defaults to `KafkaSource-<table name>`, so a source without it still "
    "commits its offsets to a group after each run (for monitoring, and in the exactly-once "
    "transaction) and can start from `group-offsets`; Flink leaves the group unset and then "
    "disables offset commits.",
    "Stricter than Flink: a WITH clause that sets a key twice, a topic name Kafka would reject, "
    "and numbers outside Java's int/long range are errors.",
    f"A sink table (`role='sink'`) writes to exactly one `topic`: {SINK_TOPIC_REASON}.",
    "`sink.transaction-naming-strategy` defaults to `POOLING` (Flink: `INCREMENTING`); "
    f"`INCREMENTING` is refused: {INCREMENTING_REASON}.",
    "`scan.parallelism` is a minimum number of Spark read tasks (Spark's `minPartitions`): large "
    "offset ranges are cut to reach it, small ones are never merged; with the streaming asset's "
    "`min_splits` the larger of the two applies.",
    "Value format options may be written `<format>.x` or `value.<format>.x` whichever of "
    "`format` / `value.format` declared the format (Flink ties each spelling to one of the keys).",
    "`value.fields-prefix` (a vendor option) requires every value column to carry the prefix.",
    "`scan.startup.mode` = `specific-offsets`: unlisted partitions start at the group's committed "
    "offset, else as `properties.auto.offset.reset` says, else at the earliest offset; "
    "`scan.bounded.mode` = `specific-offsets` stops unlisted partitions at the end of the log.",
    "An explicit partition set (Flink's DataStream `setPartitions`) is a Python argument of the "
    "planner, not a table option.",
    "`sink.partitioner` takes a Python class path (a `KafkaPartitioner`) instead of a Java class; "
    "a class that cannot be loaded is an error when the table is declared.",
    "Spark rows carry no Flink RowKind: a changelog table's frame (a changelog value format, or "
    "`upsert-kafka`) gets a `_rowkind` STRING column after its declared columns with Flink's "
    "short strings (`+I`, `-U`, `+U`, `-D`), and a frame written to a sink may carry it: an "
    "`upsert-kafka` sink writes `-D` as a tombstone and drops `-U`, a changelog format writes "
    "each kind as Flink does, and rows without it are inserts (upserts).",
    "A run reads a changelog as it is: `upsert-kafka` values are `+I` and tombstones `-D` (the "
    "row kinds Flink's upsert source emits before its ChangelogNormalize), and Debezium, Canal, "
    "Maxwell and OGG events are their rows; no state is kept across runs. "
    "`latest_per_key(frame, keys)` folds a changelog into the latest row of each key (what "
    "Flink's `table.exec.source.cdc-events-duplicate` normalisation and upsert materialisation "
    "keep). Flink SQL queries over a changelog table see `_rowkind` as a column and aggregate "
    "every row (no retraction); `INSERT INTO ... SELECT *` over one passes the row kinds on to "
    "the sink.",
    "Changelog formats: `canal-json.database.include` / `table.include` are matched "
    "by Spark's (Java) regular expressions and checked with Python's when declared; "
    "`map-null-key.*` is accepted with nothing to act on (a Spark map has no null key); the "
    "`ogg-json` metadata keys are those Flink's documentation lists (`table`, `primary_keys`, "
    "`op_type`, `pos`, `current_ts`, `op_ts`, timestamps read from GoldenGate's UTC text or "
    "epoch milliseconds). A changelog record counts once in the run's record and byte counts, "
    "however many rows it yields.",
    "`upsert-kafka` always starts reading at the earliest offset, so `scan.startup.*` are "
    "rejected for it (as Flink does); it accepts Flink's `sink.buffer-flush.*`.",
    "The dirty-data options of the vendor's YAML data ingestion (`ingestion.ignore-errors`, "
    "`ingestion.error-tolerance.max-count`) apply to every table here, SQL tables included; "
    "`ingestion.dead-letter.topic` is this project's own addition.",
    "Client properties are librdkafka's: Java client settings are translated where librdkafka "
    'has an equivalent, and rejected (naming the option) where it has none (see "Kafka client '
    'properties"). JKS truststores and keystores cannot be read: use PEM files (a PKCS#12 '
    "keystore works).",
    "TIME columns are carried as Spark STRING (Spark has no TIME type); TIMESTAMP maps to Spark "
    "TIMESTAMP_NTZ and TIMESTAMP_LTZ to Spark TIMESTAMP.",
    "A Kafka record timestamp that Spark's TIMESTAMP cannot hold (a CreateTime, which a producer "
    "may set to any 64-bit value, more than 9223372036854775 ms from the epoch either way: Spark "
    "counts microseconds in 64 bits) makes its record dirty data with the reason, where Flink "
    "reads it.",
    "`raw.charset` takes the charsets Spark decodes and encodes (UTF-8, US-ASCII, ISO-8859-1, "
    "UTF-16, UTF-16BE, UTF-16LE, UTF-32, in any spelling Python knows); others are rejected when "
    "the table is declared, where Flink takes any Java charset.",
    "Flink SQL: reserved words may be used unquoted as column names where unambiguous; an empty "
    "column list `()` is accepted; `CREATE TABLE ... LIKE` is not supported. Queries are "
    "translated to Spark SQL; what has no faithful translation (`MATCH_RECOGNIZE`, `FOR "
    "SYSTEM_TIME AS OF`, `LATERAL TABLE`, see `docs/flink-sql.md`) is refused with its line and "
    "column. A qualified name (`catalog.database.table`) reads the table declared under its last "
    "part.",
    "Flink SQL state: a stateful query runs on Structured Streaming (see `docs/flink-sql.md`), "
    "per time partition (window aggregations whose time column is the Kafka record timestamp: a "
    "partition run stops reading at the first record at or after its end plus the `WATERMARK` "
    "delay minus 1 ms, where Flink's watermark closes its windows, plus the asset's "
    "`allowed_lateness`) or recomputed from fixed startup positions into an `upsert-kafka` sink; "
    "anything else is refused where Flink's result would differ.",
    "`protobuf`: the message is defined by a FileDescriptorSet (`protobuf.descriptor-file`, "
    "this project's addition, read when the table is declared) instead of a generated Java "
    "class; `protobuf.message-class-name` takes the message's full name, the Java class protoc "
    "generates for it, or a name whose last segment is the simple name of exactly one message "
    f"of the file. A `.proto` file is refused: {PROTO_SOURCE_REASON}. Columns are checked "
    "against the message (Flink's type mapping) when the table is declared. With "
    "`protobuf.read-default-values` = false, proto3 fields that track presence (`optional`, "
    "oneof members, messages) read NULL when unset, as recent Flink releases read them (older "
    "ones force true for proto3). An enum number the enum lacks reads as the number into an "
    "integer column, where Java fails the record.",
    "`protobuf-confluent` is not a format of Flink's releases (FLINK-34440 proposes it under "
    "that name): protobuf in Confluent's wire format, with the options of `protobuf` and the "
    "Schema Registry options of `avro-confluent`. A record is read as the table's message "
    "without fetching its writer's schema (protobuf decodes by field number); a write "
    "registers the message's file, and the files it imports as references, as serialized "
    "FileDescriptorProtos.",
    "Computed columns are Flink SQL in DDL (translated to Spark SQL); declared through the Python "
    "or YAML API, `expression` is a Spark SQL expression.",
    "Avro formats: records are decoded and encoded with fastavro in Spark's Python workers, and "
    "a record that does not decode is dirty data with fastavro's reason (Flink fails the job "
    "unless errors are ignored). Column names must be Avro names (checked when the table is "
    "declared); MULTISET and maps with non-STRING keys have no Avro type here. `avro.codec` is "
    "refused: it compresses Avro container files, not the single datums Kafka records hold.",
    "`avro-confluent` talks to the registry through confluent-kafka's Python Schema Registry "
    "client: `avro-confluent.properties.*` take that client's keys (e.g. `timeout`, "
    "`ssl.certificate.location`), truststores are PEM files, keystores are refused (give a PEM "
    "certificate and key), and `basic-auth.credentials-source` = `SASL_INHERIT` is refused. A "
    "writer schema resolves into the table's schema by position and field name, as Avro's Java "
    "resolver does: record names need not match. An unknown schema id (404) or an incompatible "
    "writer schema makes the record dirty with the reason, where Flink fails the job; a registry "
    "that cannot be reached, times out, answers 5xx or refuses the credentials fails the run "
    "(as in Flink). Records that carry their schema id in a `__value_schema_id` / "
    "`__key_schema_id` header (newer Confluent clients) are read too (not by "
    "`debezium-avro-confluent`, whose records carry it in the value, as Debezium writes them). "
    "`debezium-avro-confluent` has no format metadata here.",
)
