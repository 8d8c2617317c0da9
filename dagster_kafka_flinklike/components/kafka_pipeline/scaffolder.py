"""``dg scaffold defs dagster_kafka_flinklike.KafkaPipelineComponent <path>``: a working
``defs.yaml`` with one source table, one sink table and a Spark SQL query between them."""

from __future__ import annotations

from dagster.components import Scaffolder, ScaffoldRequest, scaffold_component
from pydantic import BaseModel, Field

__all__ = ["KafkaPipelineScaffoldParams", "KafkaPipelineScaffolder"]

_TEMPLATE = """\
type: {type_name}

attributes:
  # Kafka tables with Flink's connector options, keys verbatim (or `ddl:` / `sql_file:` with a
  # Flink SQL CREATE TABLE). Bootstrap servers come from `kafka:` below.
  tables:
    {source}:
      options:
        connector: kafka
        topic: {source_topic}
        format: json
        properties.group.id: {sink}
        scan.startup.mode: earliest-offset
      columns:
        - {{name: id, type: STRING}}
        - {{name: amount, type: DOUBLE}}
    {sink}:
      options:
        connector: kafka
        topic: {sink_topic}
        format: json
      columns:
        - {{name: id, type: STRING}}
        - {{name: amount, type: DOUBLE}}

  # Each run reads the records since the last run, runs the query on Spark and writes the
  # result to the sink (or `sql:` / `sql_file:` with Flink SQL INSERT INTO statements).
  assets:
    - query: SELECT id, amount FROM {source} WHERE amount > 0
      sources: [{source}]
      sink: {sink}
      checks:
        dirty_data: {{max_ratio: 0.01}}

  kafka:
    # Unset (as here when the variable is): a run reads $KAFKA_BOOTSTRAP_SERVERS when it starts.
    bootstrap_servers: "{{{{ env.KAFKA_BOOTSTRAP_SERVERS }}}}"
"""


class KafkaPipelineScaffoldParams(BaseModel):
    """``--json-params`` of the scaffold: the topics of the example tables."""

    source_topic: str = Field(default="orders", description="The topic the query reads.")
    sink_topic: str = Field(default="orders_out", description="The topic it writes.")


class KafkaPipelineScaffolder(Scaffolder[KafkaPipelineScaffoldParams]):
    """Writes a ``defs.yaml`` that loads as it is: two tables and a query asset."""

    @classmethod
    def get_scaffold_params(cls) -> type[KafkaPipelineScaffoldParams]:
        return KafkaPipelineScaffoldParams

    def scaffold(self, request: ScaffoldRequest[KafkaPipelineScaffoldParams]) -> None:
        if request.scaffold_format != "yaml":
            scaffold_component(request)
            return
        params = request.params or KafkaPipelineScaffoldParams()
        text = _TEMPLATE.format(
            type_name=request.type_name,
            source=_name(params.source_topic),
            sink=_name(params.sink_topic),
            source_topic=params.source_topic,
            sink_topic=params.sink_topic,
        )
        path = request.target_path if request.append else request.target_path / "defs.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a" if request.append else "w") as f:
            f.write(("---\n" if request.append else "") + text)


def _name(topic: str) -> str:
    """A table name (SQL identifier) for a topic."""
    cleaned = "".join(c if c.isalnum() else "_" for c in topic).strip("_") or "table"
    return cleaned if not cleaned[0].isdigit() else f"t_{cleaned}"
