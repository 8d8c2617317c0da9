"""The translator: how a Kafka table appears in Dagster (asset key, group, kinds, metadata).

``KafkaTranslator.get_asset_spec(table)`` is the one override point, as in dagster-sling and
dagster-dbt: a streaming asset depends on the specs of its source tables, the source topics are
external observable assets (:func:`~.source_assets.build_kafka_source_assets`), and the
sink topic is what the streaming asset materializes, so the asset graph reads topic → asset →
topic. A table whose asset key equals a streaming asset's key (by default: the table's name and
the asset's name) is that asset, so a pipeline of streaming assets links up. A table can also
travel in an asset's metadata (:func:`kafka_table_metadata`), for ``KafkaIOManager``. Nothing
here does I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from dagster import (
    AssetKey,
    AssetSpec,
    MetadataValue,
    TableColumn,
    TableSchema,
)

from .errors import KafkaOptionsError
from .options import KafkaTableSpec, is_secret

#: Dagster's standard metadata keys the translator fills.
COLUMN_SCHEMA = "dagster/column_schema"
TABLE_NAME = "dagster/table_name"
ROW_COUNT = "dagster/row_count"
URI = "dagster/uri"
#: The kind every Kafka topic asset carries (the UI shows its icon).
KIND = "kafka"


def table_label(table: KafkaTableSpec) -> str:
    """What the table reads or writes: its topic(s) or its topic pattern."""
    if table.topic_pattern is not None:
        return table.topic_pattern
    return ";".join(table.topics)


def column_schema(table: KafkaTableSpec) -> TableSchema:
    """The declared columns, exactly, as Dagster's table schema (type: the Flink SQL type).

    A changelog table's frames carry a ``_rowkind`` column too, but the table has none (as in
    Flink, where the row kind is not part of the schema), so it is not listed."""
    columns = []
    for c in table.columns:
        kind = "metadata" if c.is_metadata else "computed" if c.is_computed else None
        description = c.comment
        if kind is not None:
            description = f"{kind} column" + (f": {c.comment}" if c.comment else "")
        columns.append(TableColumn(name=c.name, type=c.type, description=description))
    return TableSchema(columns=columns)


def table_metadata(table: KafkaTableSpec) -> dict[str, Any]:
    """Standard Dagster table metadata of a Kafka table: name, column schema, and its URI when
    the table names its cluster."""
    out: dict[str, Any] = {TABLE_NAME: table_label(table)}
    if table.columns:
        out[COLUMN_SCHEMA] = MetadataValue.table_schema(column_schema(table))
    servers = table.bootstrap_servers
    if servers and table.topics and len(table.topics) == 1:
        out[URI] = MetadataValue.url(f"kafka://{servers.split(',')[0].strip()}/{table.topics[0]}")
    return out


#: The definition-metadata key that holds an asset's Kafka table declaration.
TABLE_METADATA_KEY = "kafka/table"
#: Version of the declaration's JSON layout.
TABLE_METADATA_VERSION = 1
_DECLARATION_KEYS = frozenset({"version", "name", "options", "columns", "primary_key"})


def _column_json(column: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": column.name, "type": column.type}
    if column.metadata_key is not None:
        out["metadata_key"] = column.metadata_key
    if column.virtual:
        out["virtual"] = True
    if column.expression is not None:
        out["expression"] = column.expression
    if column.comment is not None:
        out["comment"] = column.comment
    return out


def kafka_table_metadata(spec: KafkaTableSpec) -> dict[str, Any]:
    """Asset metadata that attaches the Kafka table ``spec`` to an asset for ``KafkaIOManager``.

    Use it on ``@asset(metadata=...)`` (the asset's output is written to the table) or on an
    ``AssetSpec`` of an external topic (downstream assets load the table). The declaration holds
    the options, columns and primary key as JSON and is shown in the Dagster UI, so secret
    options are refused: set them on ``KafkaResource.properties`` (e.g. from ``EnvVar``).

    Example:
        >>> orders = KafkaTableSpec.from_options(
        ...     {"connector": "kafka", "topic": "orders", "format": "json",
        ...      "scan.startup.mode": "earliest-offset"},
        ...     columns=[{"name": "order_id", "type": "BIGINT"}],
        ... )
        >>> spec = AssetSpec("orders", metadata=kafka_table_metadata(orders))  # doctest: +SKIP

    Raises:
        KafkaOptionsError: the table sets a secret option (password, JAAS configuration, ...).
    """
    secrets = sorted(k for k in spec.options if is_secret(k))
    if secrets:
        raise KafkaOptionsError(
            f"Table {spec.name or spec.topics or spec.topic_pattern!r} sets secret option(s) "
            f"{', '.join(repr(k) for k in secrets)}, which asset metadata would show in the "
            f"Dagster UI; set them on KafkaResource.properties (without the 'properties.' "
            f"prefix, e.g. from EnvVar) instead.",
            keys=tuple(secrets),
        )
    declaration: dict[str, Any] = {
        "version": TABLE_METADATA_VERSION,
        "options": dict(sorted(spec.options.items())),
        "columns": [_column_json(c) for c in spec.columns],
        "primary_key": list(spec.primary_key),
    }
    if spec.name is not None:
        declaration["name"] = spec.name
    return {TABLE_METADATA_KEY: MetadataValue.json(declaration)}


def table_spec_from_metadata(
    metadata: Mapping[str, Any] | None, asset: str, *, role: str | None = None
) -> KafkaTableSpec:
    """Rebuild the Kafka table declared in an asset's metadata by :func:`kafka_table_metadata`.

    Args:
        metadata: the asset's definition metadata.
        asset: the asset's name, for messages (and the table name when the declaration has none).
        role: ``"source"`` or ``"sink"``: the direction the table is used in.

    Raises:
        KafkaOptionsError: naming the asset, when the declaration is missing or invalid.
    """
    value = (metadata or {}).get(TABLE_METADATA_KEY)
    if value is None:
        raise KafkaOptionsError(
            f"Asset {asset!r} has no Kafka table declaration: KafkaIOManager needs its metadata "
            f"to hold {TABLE_METADATA_KEY!r}; add metadata=kafka_table_metadata(table) to the "
            f"asset (or to its AssetSpec)."
        )
    data = getattr(value, "data", value)
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise KafkaOptionsError(
                f"Asset {asset!r}: metadata {TABLE_METADATA_KEY!r} is not valid JSON ({exc})."
            ) from None
    if not isinstance(data, Mapping) or not isinstance(data.get("options"), Mapping):
        raise KafkaOptionsError(
            f"Asset {asset!r}: metadata {TABLE_METADATA_KEY!r} must be a mapping with an "
            f"'options' mapping, as kafka_table_metadata(table) builds it."
        )
    version = data.get("version", TABLE_METADATA_VERSION)
    if version != TABLE_METADATA_VERSION:
        raise KafkaOptionsError(
            f"Asset {asset!r}: metadata {TABLE_METADATA_KEY!r} has version {version!r}; this "
            f"library reads version {TABLE_METADATA_VERSION}. Rebuild it with "
            f"kafka_table_metadata(table)."
        )
    unknown = sorted(str(k) for k in data if k not in _DECLARATION_KEYS)
    if unknown:
        raise KafkaOptionsError(
            f"Asset {asset!r}: metadata {TABLE_METADATA_KEY!r} has unknown field(s) "
            f"{', '.join(unknown)}; allowed: {', '.join(sorted(_DECLARATION_KEYS))}."
        )
    columns = data.get("columns") or []
    primary_key = data.get("primary_key") or []
    if not isinstance(columns, list) or not isinstance(primary_key, list):
        raise KafkaOptionsError(
            f"Asset {asset!r}: 'columns' and 'primary_key' of metadata {TABLE_METADATA_KEY!r} "
            f"must be lists."
        )
    try:
        return KafkaTableSpec.from_options(
            data["options"],
            columns=columns,
            primary_key=[str(k) for k in primary_key],
            role=role,
            name=str(data.get("name") or asset),
        )
    except KafkaOptionsError as exc:
        raise KafkaOptionsError(
            f"Asset {asset!r}: invalid Kafka table declaration: {exc}", keys=exc.keys
        ) from None


class KafkaTranslator:
    """Maps a Kafka table to the Dagster asset that stands for its topic.

    Override :meth:`get_asset_spec` (call ``super()`` and ``replace_attributes`` /
    ``merge_attributes`` on the result) to change keys, groups, owners or tags of every Kafka
    asset at once; give the translator to ``@kafka_streaming_asset(translator=...)`` and to
    :func:`build_kafka_source_assets`.

    Example:
        >>> class Prefixed(KafkaTranslator):
        ...     def get_asset_spec(self, table):
        ...         spec = super().get_asset_spec(table)
        ...         return spec.replace_attributes(key=spec.key.with_prefix("kafka"))
    """

    def get_asset_spec(self, table: KafkaTableSpec) -> AssetSpec:
        """The asset of ``table``'s topic: key (the table's name, else its topic or a
        sanitized topic pattern), kind ``kafka``, standard table metadata and, when the table
        sets no secret option, its declaration (so ``KafkaIOManager`` can load it)."""
        if table.name:
            key = AssetKey([table.name])
        elif table.topic_pattern is not None:
            key = AssetKey(["topic-pattern", re.sub(r"[^\w.-]+", "_", table.topic_pattern)])
        else:
            key = AssetKey([table_label(table)])
        metadata = table_metadata(table)
        if not any(is_secret(k) for k in table.options):
            metadata.update(kafka_table_metadata(table))
        kind = "topic pattern" if table.topic_pattern is not None else "topic"
        return AssetSpec(
            key=key,
            kinds={KIND},
            description=f"Kafka {kind} {table_label(table)!r} ({table.value_format.name}).",
            metadata=metadata,
        )


def streaming_asset_attributes(spec: AssetSpec) -> dict[str, Any]:
    """What ``@kafka_streaming_asset`` takes from the translated spec of its sink table: the key
    (as ``name`` and ``key_prefix``), group, owners, tags (kinds aside) and metadata, so a
    translator that renames, groups or tags topics does the same to the assets writing them."""
    kinds = "dagster/kind/"
    return {
        "name": spec.key.path[-1],
        "key_prefix": list(spec.key.path[:-1]) or None,
        "group_name": spec.group_name,
        "owners": list(spec.owners) or None,
        "tags": {k: v for k, v in spec.tags.items() if not k.startswith(kinds)} or None,
        "metadata": dict(spec.metadata) or None,
    }


__all__ = ["KafkaTranslator", "kafka_table_metadata"]
