"""Run Flink SQL scripts on Apache Flink (PyFlink's local mini-cluster) and wait for each.

Runs in the oracle's own virtual environment (see :mod:`tests.oracle`), never in the project's,
as a server: ``python flink_job.py --serve`` answers one request a line on stdin (JSON: ``id``,
``op``, ``args``, ``out``) in one JVM, so that each job pays for Flink's mini-cluster only, not
for Python, PyFlink and its gateway JVM again. The operations: ``run SCRIPT CONNECTOR_JAR``,
``evaluate FILE`` (Flink's value of each expression of FILE, one a line) and ``reserved FILE``.
What an operation prints goes to the request's ``out`` file; the server then prints
``@@done ID EXIT_CODE``.

A script's statements are separated by ``;`` at the end of a line; its ``INSERT`` statements
run together as one statement set, as a Flink SQL client runs a script's ``EXECUTE STATEMENT
SET``; ``SET 'key' = 'value'`` configures the job, as in the SQL client. Every Kafka source of a
script given to the oracle is bounded (``'scan.bounded.mode' = 'latest-offset'``), so the job
ends."""

from __future__ import annotations

import re
import sys
import time

_SET = re.compile(r"SET\s+'([^']+)'\s*=\s*'([^']*)'", re.I | re.S)
_STATEMENT_SET = re.compile(
    r"^(?:EXECUTE\s+STATEMENT\s+SET\s+)?BEGIN(?:\s+STATEMENT\s+SET)?\s+", re.I
)


def statements(text: str) -> list[str]:
    """The script's statements: split at ``;`` ending a line, comments and blanks dropped."""
    lines = [line for line in text.splitlines() if not line.strip().startswith("--")]
    parts = "\n".join(lines).split(";\n")
    return [p.strip().rstrip(";").strip() for p in parts if p.strip().rstrip(";").strip()]


def main(script: str, jar: str) -> int:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    began = time.monotonic()
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("pipeline.jars", f"file://{jar}")
    config.set("parallelism.default", "1")
    config.set("table.local-time-zone", "UTC")
    inserts = []
    with open(script, encoding="utf-8") as f:
        for statement in statements(f.read()):
            statement = _STATEMENT_SET.sub("", statement, count=1)  # the SQL client's sets
            if statement.upper() == "END":
                continue
            setting = _SET.fullmatch(statement)
            if setting:  # the SQL client's SET: a configuration of the job
                config.set(setting.group(1), setting.group(2))
            elif statement.upper().startswith("INSERT"):
                inserts.append(statement)
            else:
                env.execute_sql(statement)
    job = env.create_statement_set()
    for statement in inserts:
        job.add_insert_sql(statement)
    job.execute().wait()
    print(f"flink job done in {time.monotonic() - began:.1f} s", flush=True)
    return 0


def evaluate(expressions_file: str) -> int:
    """Evaluate each line of ``expressions_file`` as ``SELECT <line>`` (batch mode): one JSON
    line per expression, ``{"value": ...}`` or ``{"error": "..."}`` (the innermost cause)."""
    import json

    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    env.get_config().set("parallelism.default", "1")
    env.get_config().set("table.local-time-zone", "UTC")
    with open(expressions_file, encoding="utf-8") as f:
        expressions = [line.strip() for line in f if line.strip()]
    for expression in expressions:
        try:
            with env.execute_sql(f"SELECT {expression}").collect() as rows:
                values = [row[0] for row in rows]
            out: dict[str, object] = {"value": values[0] if values else None}
        except Exception as exc:  # the expression fails in Flink: what it says
            causes = [line for line in str(exc).splitlines() if "Exception:" in line]
            out = {"error": (causes[-1] if causes else str(exc).splitlines()[0]).strip()}
        print(json.dumps(out, default=str), flush=True)
    return 0


def reserved(words_file: str) -> int:
    """Print each word of ``words_file`` (one a line) that Flink's parser refuses as a table
    name unless it is quoted: ``CREATE TEMPORARY VIEW word AS SELECT 1`` fails to parse while
    the quoted name parses."""
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    with open(words_file, encoding="utf-8") as f:
        words = [line.strip() for line in f if line.strip()]
    for word in words:
        try:
            env.execute_sql(f"CREATE TEMPORARY VIEW {word} AS SELECT 1")
            env.execute_sql(f"DROP TEMPORARY VIEW {word}")
        except Exception as exc:  # refused unquoted: reserved if the quoted name is fine
            if "SqlParseException" not in str(exc) and "parse" not in str(exc).lower():
                continue
            env.execute_sql(f"CREATE TEMPORARY VIEW `{word}` AS SELECT 1")
            env.execute_sql(f"DROP TEMPORARY VIEW `{word}`")
            print(word, flush=True)
    return 0


OPERATIONS = {"run": main, "evaluate": evaluate, "reserved": reserved}


def serve() -> int:
    """Answer the requests of stdin until it closes (see the module's docstring)."""
    import contextlib
    import io
    import json
    import traceback

    from pyflink.table import EnvironmentSettings, TableEnvironment

    reply = sys.stdout
    TableEnvironment.create(EnvironmentSettings.in_batch_mode())  # the gateway JVM, once
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                code = OPERATIONS[request["op"]](*request["args"])
        except Exception:  # the job failed: its traceback is the answer
            traceback.print_exc(file=printed)
            code = 1
        with open(request["out"], "w", encoding="utf-8") as f:
            f.write(printed.getvalue())
        print(f"@@done {request['id']} {code}", file=reply, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve())
