"""Targets of the loaders: data-ingestion YAML, the Component's YAML and the Flink SQL front end
(parse and plan).

The property is ``tests/unit/test_loaders_fuzz.py``'s, whose documents, planted secrets and
helpers these targets reuse: for any input a loader returns or raises the project's own errors
(:class:`KafkaConnectorError`; for the Component also the schema's refusal, pydantic's
``ValidationError``), and no message shows a planted secret: not an error's (nor one it was
raised from), not a warning's, not a logged one. Mutations leave the secrets' own characters
alone; an input whose edits moved a secret out from under its secret key does not count for
the secret property (``secret_moved``), only for the other.
"""

from __future__ import annotations

import copy
import functools
import logging
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from dagster_kafka_flinklike import KafkaConnectorError
from dagster_kafka_flinklike.options.ingestion_keys import INGESTION_KEYS
from tests.unit.test_loaders_fuzz import (
    ATTRIBUTES,
    MARK,
    PIPELINE,
    SCRIPT,
    SPECIAL,
    _chain,
    _secrets_under_secret_keys,
)
from tests.unit.test_options_properties_based import SQL_WORDS

from .harness import Counts, Finding, Target, foreign
from .mutate import TEXT_TOKENS, edge_integer, mutate_text, random_bytes, random_text, soup

#: A planted secret as the seeds write it (mutations leave its characters alone).
SECRET = re.compile(rf"{MARK}-\w+")


class _Collect(logging.Handler):
    """Keeps the messages the package logs during one call (shown nowhere else)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception as exc:  # a message that cannot be formatted is a finding too
            self.messages.append(f"unformattable log record {record.msg!r}: {exc!r}")


_LOG = _Collect()


def collect_logs() -> None:
    """Route the package's log records to the collector (and nowhere else) for the run."""
    logger = logging.getLogger("dagster_kafka_flinklike")
    if _LOG not in logger.handlers:
        logger.addHandler(_LOG)
        logger.propagate = False
        logger.setLevel(logging.DEBUG)


def shown_by(
    load: Callable[..., Any],
    *args: Any,
    ours: tuple[type[BaseException], ...] = (KafkaConnectorError,),
    **kwargs: Any,
) -> tuple[bool, list[str]]:
    """Call ``load``: (whether it refused with one of ``ours``, every text it showed: its
    error's and the errors a traceback shows with it, its warnings, its log records). Any other
    exception propagates."""
    collect_logs()
    _LOG.messages.clear()
    shown: list[str] = []
    refused = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            load(*args, **kwargs)
        except ours as exc:
            refused = True
            for error in _chain(exc):
                shown += [str(error), repr(getattr(error, "keys", ""))]
    shown += [str(w.message) for w in caught]
    shown += _LOG.messages
    return refused, shown


def check_one(
    counts: Counts,
    index: int,
    load: Callable[..., Any],
    *args: Any,
    counted: Callable[[], bool] = lambda: True,
    ours: tuple[type[BaseException], ...] = (KafkaConnectorError,),
) -> Finding | None:
    """One input: a finding for a foreign exception or a secret shown; ``counted()`` says
    whether the input's secrets are still under their secret keys (asked only when a secret
    shows)."""
    try:
        refused, shown = shown_by(load, *args, ours=ours)
    except RecursionError as exc:  # (before the generic case: a traceback of a deep recursion)
        return Finding(index, "foreign exception", foreign(exc))
    except Exception as exc:
        return Finding(index, "foreign exception", foreign(exc))
    counts.refused += refused
    leaked = next((text for text in shown if MARK in text), None)
    if leaked is None:
        return None
    try:
        applies = counted()
    except Exception as exc:
        return Finding(index, "foreign exception", f"(deciding the secret property) {foreign(exc)}")
    if not applies:
        counts.add("secret_moved")
        return None
    return Finding(index, "secret shown", leaked[:600])


_YAML_KEY = re.compile(r"""^\s*(?:-\s+)?(?:'([^']*)'|"([^"]*)"|([^\s:'"#][^:#]*?))\s*:\s""")


def yaml_secrets_stay(text: str) -> bool:
    """Whether every planted secret of an edited document is still under a secret key: in the
    document as YAML reads it, or, for text that is no YAML, on a line ``<secret key>: ...``
    after its key (edits may have moved one into a key, or out of its line)."""
    from dagster_kafka_flinklike.ingestion._yaml import load_yaml
    from dagster_kafka_flinklike.options import is_secret

    try:
        return _secrets_under_secret_keys(load_yaml(text).data)
    except KafkaConnectorError:
        pass
    for line in text.splitlines():
        if MARK not in line:
            continue
        found = _YAML_KEY.match(line)
        key = next((g for g in found.groups() if g is not None), "") if found else ""
        if not (found and is_secret(key) and MARK not in key and MARK in line[found.end() :]):
            return False
    return True


def sql_secrets_stay(text: str) -> bool:
    """Whether every planted secret of an edited script is still the value of a secret option:
    a string right after ``'<secret key>' =`` (edits, splices with other scripts among them,
    may have moved one elsewhere: into another option's value, a name, a comment)."""
    from dagster_kafka_flinklike.options import is_secret
    from dagster_kafka_flinklike.sql.lexer import STRING, SYMBOL, tokenize

    try:
        tokens = tokenize(text)
    except KafkaConnectorError:
        return MARK not in text
    for i, token in enumerate(tokens):
        if MARK not in token.text:
            continue
        if not (
            token.kind == STRING
            and i >= 2
            and tokens[i - 1].kind == SYMBOL
            and tokens[i - 1].value == "="
            and tokens[i - 2].kind == STRING
            and is_secret(tokens[i - 2].value)
            and MARK not in tokens[i - 2].text
        ):
            return False
    return True


# -- YAML mappings edited as data ----------------------------------------------------------------

KEYS = sorted({k for section in INGESTION_KEYS.values() for k in section} | {"type", "source"})
_LEAVES: tuple[Callable[[Any], Any], ...] = (
    lambda rng: None,
    lambda rng: rng.random() < 0.5,
    edge_integer,
    lambda rng: rng.choice((0.5, -0.0, 1e308, float("inf"), float("nan"))),
    lambda rng: random_text(rng, 12),
    lambda rng: rng.choice(("kafka", "json", "canal-json", "${v}", "earliest-offset", "a.b", "0")),
    lambda rng: random_bytes(rng, 4),
)


def random_value(rng: Any, depth: int = 0) -> Any:
    """A YAML-like value: a leaf, or (rarely, shallow) a list or mapping of values."""
    kind = rng.randrange(10)
    if depth < 2 and kind == 0:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if depth < 2 and kind == 1:
        return {random_key(rng): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return rng.choice(_LEAVES)(rng)


def random_key(rng: Any, keys: Sequence[str] = KEYS) -> Any:
    return rng.choice(keys) if rng.random() < 0.7 else random_text(rng, 8)


def _places(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _places(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _places(value, (*at, i))
    return found


def restructure(rng: Any, document: Any, keys: Sequence[str] = KEYS) -> Any:
    """``document`` (parsed YAML) with 1 to 4 values replaced, removed, wrapped or added."""
    data = copy.deepcopy(document)
    for _ in range(rng.randrange(1, 5)):
        at = rng.choice(_places(data))
        parent = data
        for part in at[:-1]:
            parent = parent[part]
        node = parent[at[-1]] if at else data
        op = rng.randrange(4)
        if op == 0 and isinstance(node, dict):
            node[random_key(rng, keys)] = random_value(rng)
        elif op == 0 and isinstance(node, list):
            node.append(random_value(rng))
        elif at and op == 1:
            del parent[at[-1]]
        elif at and op == 2:
            parent[at[-1]] = rng.choice(([node], {"k": node}, {"type": node}))
        elif at:
            parent[at[-1]] = random_value(rng)
    return data


# -- data-ingestion YAML -------------------------------------------------------------------------

_SMALL_PIPELINE = f"""source:
  type: kafka
  topic: t
  properties.sasl.jaas.config: 'x required password="{MARK}-small";'
  value.format: canal-json
sink:
  type: kafka
  properties.ssl.keystore.password: {MARK}-store
"""
_YAML_TOKENS = (*SPECIAL, "a: ", "- ", "&x ", "*x", "!!int ", "<<: ", *(f"{k}: " for k in KEYS))


class IngestionYaml(Target):
    """``parse_data_ingestion`` over YAML text (random, token soup, edited pipelines) and over
    mappings (the parsed pipeline restructured)."""

    name = "ingestion"
    batch = 500
    cap = 120_000

    def __init__(self) -> None:
        self.seeds = [PIPELINE, _SMALL_PIPELINE]
        self.document = yaml.safe_load(PIPELINE)

    def case(self, rng: Any, index: int = 0) -> Any:
        kind = rng.random()
        if kind < 0.05:
            return ["text", random_text(rng, 200)]
        if kind < 0.15:
            return ["text", soup(rng, _YAML_TOKENS, 60)]
        if kind < 0.85:
            seed = rng.choice(self.seeds)
            return ["text", mutate_text(rng, seed, TEXT_TOKENS + _YAML_TOKENS, self.seeds, SECRET)]
        data = restructure(rng, self.document)
        if rng.random() < 0.5:
            try:
                return ["text", yaml.safe_dump(data, allow_unicode=True)]
            except yaml.YAMLError:  # values only Python has: given as a mapping
                pass
        return ["mapping", data]

    def check(self, cases: list[Any], counts: Counts) -> list[Finding]:
        from dagster_kafka_flinklike.ingestion import parse_data_ingestion

        findings = []
        for i, (kind, data) in enumerate(cases):
            counted = (
                functools.partial(yaml_secrets_stay, data)
                if kind == "text"
                else functools.partial(_secrets_under_secret_keys, data)
            )
            found = check_one(counts, i, parse_data_ingestion, data, counted=counted)
            if found is not None:
                findings.append(found)
        return findings


# -- Flink SQL -----------------------------------------------------------------------------------

#: Small scripts, each with a planted secret: most edits of them reach the planner quickly.
_SMALL_SCRIPTS = (
    f"""CREATE TABLE s (a INT, b STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH (
  'connector' = 'kafka', 'topic' = 's', 'format' = 'csv',
  'properties.sasl.password' = '{MARK}-small', 'scan.startup.mode' = 'earliest-offset');
CREATE TABLE k (a INT, n BIGINT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',
  'topic' = 'k', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO k SELECT a, COUNT(*) FROM s GROUP BY a;
""",
    f"""SET 'table.local-time-zone' = 'UTC';
CREATE TABLE r (v STRING) WITH ('connector' = 'kafka', 'topic' = 'r', 'format' = 'raw',
  'properties.ssl.truststore.password' = '{MARK}-trust');
CREATE TABLE w WITH ('connector' = 'kafka', 'topic' = 'w', 'format' = 'json') AS
  SELECT UPPER(v) AS v FROM r WHERE v LIKE 'a%';
""",
)
_SQL_TOKENS = (*TEXT_TOKENS, *SQL_WORDS)


def _corpus() -> list[str]:
    """The project's example scripts (``tests/sql``), as further seeds without secrets."""
    directory = Path(__file__).resolve().parents[1] / "sql"
    return [p.read_text() for p in sorted(directory.glob("*.sql"))]


class FlinkSql(Target):
    """``parse_flink_sql`` (strict or not) and ``plan_flink_sql`` over random text, token soup
    and edited scripts."""

    name = "sql"
    batch = 500
    cap = 120_000

    def __init__(self) -> None:
        self.secret_seeds = [SCRIPT, *_SMALL_SCRIPTS]
        self.seeds = [*self.secret_seeds, *_corpus()]

    def case(self, rng: Any, index: int = 0) -> Any:
        kind, strict = rng.random(), rng.random() < 0.5
        if kind < 0.05:
            return [random_text(rng, 200), strict]
        if kind < 0.15:
            return [soup(rng, _SQL_TOKENS, 60), strict]
        seed = rng.choice(self.secret_seeds if rng.random() < 0.6 else self.seeds)
        return [mutate_text(rng, seed, _SQL_TOKENS, self.seeds, SECRET), strict]

    def check(self, cases: list[Any], counts: Counts) -> list[Finding]:
        from dagster_kafka_flinklike.sql import parse_flink_sql
        from dagster_kafka_flinklike.sql.pipeline import plan_flink_sql

        findings = []
        for i, (text, strict) in enumerate(cases):
            counted = functools.partial(sql_secrets_stay, text)

            refused = counts.refused
            parse = functools.partial(parse_flink_sql, strict=strict)
            found = check_one(counts, i, parse, text, counted=counted)
            if found is None and counts.refused == refused:
                # The plan parses again (strictly, which refuses what a lenient parse does).
                found = check_one(counts, i, plan_flink_sql, text, counted=counted)
            if found is not None:
                findings.append(found)
        return findings


# -- the Component's YAML ------------------------------------------------------------------------

_COMPONENT_KEYS = (
    "tables",
    "assets",
    "kafka",
    "translation",
    "spark",
    "options",
    "columns",
    "ddl",
    "query",
    "sql",
    "sources",
    "sink",
    "checks",
    "partitions",
    "allowed_lateness",
    "name",
    "type",
    "metadata_key",
    "properties",
    "group_name",
    "dirty_data",
    "max_ratio",
    "start",
    "end_offset",
    *KEYS[:20],
)


def _templated(text: str) -> bool:
    """Whether Dagster renders ``text`` as a Jinja template (an expression, a statement or a
    comment)."""
    return "{{" in text or "{%" in text or "{#" in text


def _holds_template(data: Any) -> bool:
    """Whether parsed YAML holds a text Dagster renders as a template, in a key or a value
    (Dagster renders the parsed values, not the YAML text: a template in a comment is none); a
    ``!!binary`` value counts as the text its bytes become (``!!binary AXt7`` is ``\\x01{{``)."""
    if isinstance(data, dict):
        return any(_holds_template(k) or _holds_template(v) for k, v in data.items())
    if isinstance(data, (list, tuple)):  # (``!!omap`` and ``!!pairs`` give tuples)
        return any(_holds_template(item) for item in data)
    if isinstance(data, bytes):
        return _templated(data.decode("utf-8", "ignore"))
    return isinstance(data, str) and _templated(data)


# libyaml where PyYAML has it (the same documents, an order of magnitude faster).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(data: Any) -> str:
    """``data`` as YAML text; PyYAML's own emitter for text libyaml cannot encode (a lone
    surrogate), which the pure-Python one writes as it is."""
    try:
        return yaml.dump(data, Dumper=_DUMPER, allow_unicode=True)
    except UnicodeEncodeError:
        return yaml.safe_dump(data, allow_unicode=True)


def _load(text: str) -> Any:
    """``text`` parsed; PyYAML's own parser for text libyaml cannot take (a lone surrogate)."""
    try:
        return yaml.load(text, Loader=_LOADER)
    except UnicodeEncodeError:
        return yaml.safe_load(text)


class ComponentYaml(Target):
    """``KafkaPipelineComponent``: its YAML attributes resolved (Dagster's schema) and built
    into definitions, over edited YAML text and restructured attributes. Text that is no YAML
    mapping is Dagster's loader's to refuse before the component sees it, and a Jinja template
    among the parsed keys and values is Dagster's to render: both are counted
    (``not_a_mapping``, ``templates``), not run."""

    name = "component"
    batch = 50
    cap = 120_000

    def __init__(self) -> None:
        self.text = yaml.safe_dump(ATTRIBUTES, allow_unicode=True)

    def case(self, rng: Any, index: int = 0) -> Any:
        if rng.random() < 0.25:
            return mutate_text(rng, self.text, (*TEXT_TOKENS, *SPECIAL), (self.text,), SECRET)
        data = restructure(rng, ATTRIBUTES, _COMPONENT_KEYS)
        try:
            return _dump(data)
        except yaml.YAMLError:
            return self.text

    def check(self, cases: list[Any], counts: Counts) -> list[Finding]:
        from pydantic import ValidationError

        findings = []
        for i, text in enumerate(cases):
            try:
                data = _load(text)
            except (yaml.YAMLError, ValueError, RecursionError):
                data = None
            if not isinstance(data, dict):
                counts.add("not_a_mapping")
                continue
            if _holds_template(data):
                counts.add("templates")
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = check_one(
                    counts,
                    i,
                    _build_component,
                    data,
                    counted=functools.partial(_secrets_under_secret_keys, data),
                    ours=(KafkaConnectorError, ValidationError),
                )
            if found is not None:
                findings.append(found)
        return findings


def _build_component(data: dict[str, Any]) -> None:
    """Resolve and build the component from parsed attributes, as Dagster's loader does once it
    has parsed the YAML (its schema's model, then the resolution): the YAML text is parsed once,
    by libyaml, rather than again by Dagster's pure-Python parser, which took most of each
    input's time and is not the component's code."""
    from dagster.components import build_defs_for_component
    from dagster.components.resolved.context import ResolutionContext

    from dagster_kafka_flinklike import KafkaPipelineComponent

    model = KafkaPipelineComponent.model().model_validate(data)
    component = KafkaPipelineComponent.resolve_from_model(ResolutionContext.default(), model)
    build_defs_for_component(component)


__all__ = [
    "ComponentYaml",
    "FlinkSql",
    "IngestionYaml",
    "check_one",
    "collect_logs",
    "random_value",
    "restructure",
    "shown_by",
    "sql_secrets_stay",
    "yaml_secrets_stay",
]
