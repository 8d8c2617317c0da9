"""Run one Flink SQL script on Apache Flink (PyFlink's local mini-cluster) and wait for it.

Runs in the oracle's own virtual environment (see :mod:`tests.oracle`), never in the project's:
``python flink_job.py SCRIPT CONNECTOR_JAR``. The script's statements are separated by ``;``
at the end of a line; its ``INSERT`` statements run together as one statement set, as a Flink
SQL client runs a script's ``EXECUTE STATEMENT SET``; ``SET 'key' = 'value'`` configures the
job, as in the SQL client. Every Kafka source of a script given to
the oracle is bounded (``'scan.bounded.mode' = 'latest-offset'``), so the job ends.
"""

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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
