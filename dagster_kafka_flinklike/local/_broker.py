"""A real single-node Apache Kafka broker (KRaft combined mode) on 127.0.0.1 for demos and tests.

The broker runs the pinned :data:`KAFKA_VERSION` in a detached JVM so that it outlives the
Python process that started it (the ``dkf local-kafka start`` command exits at once). Everything
it needs lives in one directory: its configuration, its data, its logs and a ``state.json``
that lets any later process find, report or stop it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import EmbeddedKafkaError
from ._fetch import KAFKA_VERSION, _file_lock, fetch_kafka, find_java

__all__ = [
    "EmbeddedKafka",
    "default_home",
    "ensure_local_kafka",
    "free_port",
    "render_log4j2_properties",
    "render_server_properties",
    "resolve_bootstrap_servers",
]

logger = logging.getLogger(__name__)

STATE_FILE = "state.json"
PORTS_FILE = "ports.json"
SERVER_PROPERTIES = "server.properties"
LOG4J2_PROPERTIES = "log4j2.properties"
CONSOLE_LOG = "broker.out"  # the JVM's stdout and stderr (crashes, JVM errors)
SERVER_LOG = "logs/server.log"  # the broker's own log4j2 log, INFO level
DATA_DIR = "data"  # log.dirs: topic partitions and the KRaft metadata log

_HOST = "127.0.0.1"
_JVM_OPTS = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
_BIND_RETRIES = 3  # auto-picked ports can be taken by someone else before the broker binds them

# Defaults for a single-node development broker. Kafka's own defaults assume three brokers
# (replication factor 3 for internal topics), which a single node can never satisfy.
_BASE_PROPERTIES: tuple[tuple[str, str], ...] = (
    ("process.roles", "broker,controller"),
    ("node.id", "1"),
    ("controller.listener.names", "CONTROLLER"),
    ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
    ("inter.broker.listener.name", "PLAINTEXT"),
    ("num.partitions", "1"),
    ("default.replication.factor", "1"),
    ("min.insync.replicas", "1"),
    ("offsets.topic.replication.factor", "1"),
    # 50 partitions by default: creating them delays the first consumer group / transaction by
    # seconds on a small machine and buys nothing on a single node.
    ("offsets.topic.num.partitions", "5"),
    ("transaction.state.log.replication.factor", "1"),
    ("transaction.state.log.min.isr", "1"),
    ("transaction.state.log.num.partitions", "5"),
    ("share.coordinator.state.topic.replication.factor", "1"),
    ("share.coordinator.state.topic.min.isr", "1"),
    ("group.initial.rebalance.delay.ms", "0"),
    # Kafka's default (true) is kept on purpose: it is what a fresh local Kafka does. Tests
    # that need "missing topics fail" pass auto.create.topics.enable=false in extra_properties.
    ("auto.create.topics.enable", "true"),
    ("delete.topic.enable", "true"),
    # 128 MiB by default, allocated once a compacted topic is cleaned: too much for -Xmx512m.
    ("log.cleaner.dedupe.buffer.size", "33554432"),
)


def default_home() -> Path:
    """Where the CLI and the demo keep local state: ``$DKF_HOME`` or ``<cwd>/.local``.

    The CLI's embedded broker lives in ``default_home() / "kafka"``.

    Example:
        >>> default_home()  # doctest: +SKIP
        PosixPath('/work/project/.local')
    """
    env = os.environ.get("DKF_HOME", "").strip()
    if env:
        return Path(env).expanduser().absolute()
    return Path.cwd() / ".local"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it).

    Example:
        >>> 0 < free_port() < 65536
        True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the JVM's server sockets do: a port lingering in TIME_WAIT counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((_HOST, port))
        except OSError:
            return False
        return True


def _port_answers(port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((_HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def _escape_property(text: str, *, is_key: bool = False) -> str:
    """Escape text for a ``java.util.Properties`` file (read as ISO-8859-1 by Kafka)."""
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif (is_key and ch in "=: ") or (i == 0 and ch in " #!"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.extend(f"\\u{unit:04x}" for unit in _utf16_units(ch))
        else:
            out.append(ch)
    return "".join(out)


def _utf16_units(ch: str) -> list[int]:
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def _substitute(value: str, port: int, controller_port: int, data_dir: Path) -> str:
    return (
        value.replace("{port}", str(port))
        .replace("{controller_port}", str(controller_port))
        .replace("{data_dir}", str(data_dir))
    )


def render_server_properties(
    data_dir: Path,
    *,
    port: int,
    controller_port: int,
    extra_properties: Mapping[str, str] | None = None,
) -> str:
    """The ``server.properties`` of a single-node KRaft broker+controller on 127.0.0.1.

    The controller quorum is static (``controller.quorum.voters``, formatted without
    ``--standalone``) so that a restart may use different ports on the same formatted storage.
    ``extra_properties`` come last and so override the defaults (``java.util.Properties`` keeps
    the last value of a key). In their values, ``{port}``, ``{controller_port}`` and
    ``{data_dir}`` are replaced by the broker's, e.g. to add a SASL listener next to the
    PLAINTEXT one.

    Args:
        data_dir: the broker directory; partitions go to ``data_dir / "data"``.
        port: the PLAINTEXT client port.
        controller_port: the KRaft controller port.
        extra_properties: more broker settings, appended verbatim.

    Example:
        >>> text = render_server_properties(Path("/k"), port=9092, controller_port=9093)
        >>> "advertised.listeners=PLAINTEXT://127.0.0.1:9092" in text
        True
    """
    lines = [
        f"# Generated by dagster_kafka_flinklike.local for Apache Kafka {KAFKA_VERSION}.",
        "# Rewritten on every start: put changes in EmbeddedKafka(extra_properties=...).",
    ]
    props: list[tuple[str, str]] = [
        *_BASE_PROPERTIES,
        ("listeners", f"PLAINTEXT://{_HOST}:{port},CONTROLLER://{_HOST}:{controller_port}"),
        ("advertised.listeners", f"PLAINTEXT://{_HOST}:{port}"),
        ("controller.quorum.voters", f"1@{_HOST}:{controller_port}"),
        ("log.dirs", str(data_dir / DATA_DIR)),
    ]
    lines += [f"{_escape_property(k, is_key=True)}={_escape_property(v)}" for k, v in props]
    if extra_properties:
        lines.append("# extra_properties")
        for key, value in extra_properties.items():
            if not key or not key.strip():
                raise EmbeddedKafkaError("extra_properties has an empty key.")
            text = _substitute(str(value), port, controller_port, data_dir)
            lines.append(f"{_escape_property(key, is_key=True)}={_escape_property(text)}")
    return "\n".join(lines) + "\n"


def render_log4j2_properties(data_dir: Path) -> str:
    """A log4j2 configuration sending the broker's INFO log to ``data_dir/logs/server.log``.

    The file rolls over at 20 MB and keeps three old files, so a long-lived demo broker does not
    fill the disk.

    Example:
        >>> "rootLogger.level = INFO" in render_log4j2_properties(Path("/k"))
        True
    """
    log = _escape_property(str(data_dir / SERVER_LOG))
    return f"""# Generated by dagster_kafka_flinklike.local: the embedded broker's log.
status = warn
name = dkf-embedded-kafka
appender.server.type = RollingFile
appender.server.name = server
appender.server.fileName = {log}
appender.server.filePattern = {log}.%i
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
appender.server.policies.type = Policies
appender.server.policies.size.type = SizeBasedTriggeringPolicy
appender.server.policies.size.size = 20MB
appender.server.strategy.type = DefaultRolloverStrategy
appender.server.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.server.ref = server
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def _new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (as Kafka's Uuid)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):  # Kafka avoids ids that look like command-line flags
            return text


def _read_since(path: Path, since: int, limit: int = 4 * 1024 * 1024) -> str:
    """What was appended to ``path`` after byte ``since`` (at most the last ``limit`` bytes)."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = since if 0 <= since <= size else 0
            fh.seek(max(start, size - limit))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _summarize_log(text: str, *, errors: int = 12, last: int = 15) -> str:
    """The first ERROR/FATAL lines with their exception lines, then the last lines of a log.

    A failing broker logs its cause once and then hundreds of shutdown lines; the tail alone
    would hide the cause.
    """
    lines = text.strip().splitlines()
    picked: list[str] = []
    for i, line in enumerate(lines):
        if len(picked) >= errors:
            break
        if "] ERROR " in line or "] FATAL " in line:
            picked.append(line)
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if following and not following.startswith(("[", "\tat ", " ")):
                picked.append(following)
        elif line.startswith("Caused by: ") and line not in picked:
            picked.append(line)
    parts = []
    if picked:
        parts.append("first errors:\n" + "\n".join(picked[:errors]))
    if lines:
        parts.append("last lines:\n" + "\n".join(lines[-last:]))
    return "\n".join(parts)


def _write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# Brokers launched by this Python process: polling the Popen is the only way to both see a
# dead child and reap it (a zombie still answers os.kill(pid, 0)).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def _pid_alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs (macOS): trust os.kill
    # "pid (comm) S ..." where comm may contain spaces or parentheses.
    return stat.rsplit(")", 1)[-1].split()[0:1] != ["Z"]


def _pid_is_broker(pid: int, server_properties: Path) -> bool:
    """False when ``pid`` is provably some other program (a reused pid after a reboot)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no procfs: cannot tell, assume it is ours
    return b"kafka.Kafka" in cmdline and str(server_properties).encode() in cmdline


class EmbeddedKafka:
    """A single-node Kafka broker in ``data_dir``, started as a detached ``java`` process.

    The broker listens on 127.0.0.1 only, with a PLAINTEXT client listener and a KRaft
    controller listener. Its storage is formatted on the first start and reused afterwards, so
    topics and records survive a stop and restart. ``state.json`` in ``data_dir`` records the
    running process, which makes :meth:`start` idempotent and lets any process (for example the
    ``dkf`` CLI) report or stop a broker that another process started.

    Files in ``data_dir``: ``server.properties`` and ``log4j2.properties`` (rewritten on every
    start), ``data/`` (partitions and metadata), ``logs/server.log`` (broker log),
    ``broker.out`` (JVM console), ``ports.json`` (last ports, reused when free) and
    ``state.json`` (only while running).

    Args:
        data_dir: the broker's directory, created if needed.
        port: the client port; ``None`` reuses the previous port if free, else picks a free one.
        extra_properties: broker settings appended to ``server.properties`` (they override the
            defaults); ``{port}``, ``{controller_port}`` and ``{data_dir}`` in values are
            replaced, see :func:`render_server_properties`.

    Example:
        >>> with EmbeddedKafka(Path("/tmp/kafka")) as kafka:  # doctest: +SKIP
        ...     producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        extra_properties: Mapping[str, str] | None = None,
    ) -> None:
        # Resolved: the running broker is recognised by this path in its command line.
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.port = port
        self.extra_properties: dict[str, str] = dict(extra_properties or {})
        self._controller_port: int | None = None
        self._bootstrap: str | None = None

    def __repr__(self) -> str:
        return f"EmbeddedKafka({str(self.data_dir)!r}, port={self.port!r})"

    # ------------------------------------------------------------------ paths and state files

    @property
    def state_file(self) -> Path:
        """``data_dir/state.json``: pid, ports and bootstrap of the running broker."""
        return self.data_dir / STATE_FILE

    @property
    def server_log(self) -> Path:
        """The broker's own log file (log4j2, INFO level)."""
        return self.data_dir / SERVER_LOG

    @property
    def console_log(self) -> Path:
        """The JVM's stdout and stderr; look here when the broker dies before logging."""
        return self.data_dir / CONSOLE_LOG

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:<port>"`` of the running broker (started here or by another process).

        Raises:
            EmbeddedKafkaError: the broker is not running.
        """
        if self._bootstrap is not None:
            return self._bootstrap
        state = self._read_state()
        if state is not None and "bootstrap" in state:
            return str(state["bootstrap"])
        raise EmbeddedKafkaError(f"The embedded Kafka broker in {self.data_dir} is not running.")

    @property
    def controller_port(self) -> int | None:
        """The KRaft controller port of the last start, or ``None`` before a start."""
        if self._controller_port is None:
            state = self._read_state()
            if state is not None and "controller_port" in state:
                return int(state["controller_port"])
        return self._controller_port

    def _read_state(self) -> dict[str, Any] | None:
        """The state file's content, or ``None`` when absent; a corrupt file is removed."""
        try:
            text = self.state_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError:
            return None
        try:
            state = json.loads(text)
            int(state["pid"])
            int(state["port"])
            str(state["bootstrap"])
        except (ValueError, TypeError, KeyError):
            logger.warning("Removing unreadable Kafka state file %s.", self.state_file)
            self._remove_state()
            return None
        return dict(state)

    def _remove_state(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.state_file.unlink()

    def _live_state(self) -> dict[str, Any] | None:
        """The state of a broker process that is still alive; stale state files are removed."""
        state = self._read_state()
        if state is None:
            return None
        pid = int(state["pid"])
        if _pid_alive(pid) and _pid_is_broker(pid, self.data_dir / SERVER_PROPERTIES):
            return state
        logger.info(
            "Removing stale Kafka state file %s (no broker runs as pid %d).", self.state_file, pid
        )
        self._remove_state()
        return None

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with _file_lock(self.data_dir / ".lock"):
            yield

    # ------------------------------------------------------------------ public operations

    def status(self) -> str | None:
        """The bootstrap address if this directory's broker is running and answering.

        A state file whose process is gone is deleted. A process that is alive but not (yet)
        accepting connections, e.g. one still starting, reports ``None`` and is left alone.

        Returns:
            ``"127.0.0.1:<port>"``, or ``None`` when no broker answers.

        Example:
            >>> EmbeddedKafka(Path("/tmp/nothing-here")).status() is None  # doctest: +SKIP
            True
        """
        state = self._live_state()
        if state is None:
            return None
        if not _port_answers(int(state["port"])):
            return None
        return str(state["bootstrap"])

    def start(self, timeout: float = 60) -> str:
        """Start the broker unless it already runs, and wait until it serves requests.

        The first start fetches the jars (see :func:`fetch_kafka`, not counted in ``timeout``)
        and formats the storage. The broker counts as ready once a client sees it in the
        cluster metadata and can create and delete a probe topic. When ``data_dir`` already
        has a live broker, its address is returned and nothing is started.

        Args:
            timeout: seconds to wait for the launched broker to become ready.

        Returns:
            The bootstrap address, ``"127.0.0.1:<port>"``.

        Raises:
            EmbeddedKafkaError: Java or Maven is missing, formatting failed, or the broker
                exited or did not become ready in time (the message ends with its log tail).

        Example:
            >>> kafka = EmbeddedKafka(Path(".local/kafka"))  # doctest: +SKIP
            >>> kafka.start()  # doctest: +SKIP
            '127.0.0.1:41234'
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self._lock():
            state = self._live_state()
            if state is not None:
                adopted = self._adopt_running(state, timeout)
                if adopted is not None:
                    return adopted
            java = find_java()
            libs = fetch_kafka()
            for attempt in range(1, _BIND_RETRIES + 1):
                try:
                    return self._launch(java, libs, timeout, retry_ports=attempt > 1)
                except _PortTakenError as exc:
                    if self.port is not None or attempt == _BIND_RETRIES:
                        raise EmbeddedKafkaError(str(exc)) from None
                    logger.info("Kafka port taken (%s); retrying with other ports.", exc)
        raise AssertionError("unreachable")

    def stop(self, timeout: float = 30) -> bool:
        """Stop the broker: SIGTERM (a clean shutdown), then SIGKILL after ``timeout`` seconds.

        Works for a broker started by any process, as long as ``state.json`` records it.

        Args:
            timeout: seconds to wait for the clean shutdown before killing the process.

        Returns:
            ``True`` if a running broker was stopped, ``False`` if none was running.

        Example:
            >>> EmbeddedKafka(Path(".local/kafka")).stop()  # doctest: +SKIP
            True
        """
        if not self.data_dir.is_dir():
            return False
        with self._lock():
            state = self._live_state()
            self._bootstrap = None
            if state is None:
                return False
            pid = int(state["pid"])
            logger.info("Stopping Kafka broker pid %d in %s...", pid, self.data_dir)
            _terminate(pid, timeout)
            self._remove_state()
            return True

    def __enter__(self) -> EmbeddedKafka:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals

    def _adopt_running(self, state: Mapping[str, Any], timeout: float) -> str | None:
        """The address of the live broker ``state`` describes; ``None`` if it dies meanwhile."""
        bootstrap = str(state["bootstrap"])
        if self.port is not None and int(state["port"]) != self.port:
            logger.warning(
                "Kafka broker already running in %s on %s, not on the requested port %d.",
                self.data_dir,
                bootstrap,
                self.port,
            )
        pid = int(state["pid"])
        self._bootstrap = bootstrap
        self._controller_port = int(state.get("controller_port") or 0) or None
        if _port_answers(int(state["port"])):  # Kafka opens the client port once it is ready
            logger.info("Kafka broker already running at %s (pid %d).", bootstrap, pid)
            return bootstrap
        # Another process launched it and is still waiting for it to become ready.
        try:
            _wait_ready(
                bootstrap,
                int(state["port"]),
                time.monotonic() + timeout,
                lambda: pid if _pid_alive(pid) else None,
            )
        except _BrokerExitedError:
            self._remove_state()
            self._bootstrap = None
            return None
        except EmbeddedKafkaError as exc:
            raise EmbeddedKafkaError(
                f"A Kafka broker process (pid {pid}) runs in {self.data_dir} but does not serve "
                f"requests: {exc} Stop it (`dkf local-kafka stop` or EmbeddedKafka.stop()) and "
                f"see {self.server_log}."
            ) from None
        logger.info("Kafka broker already running at %s (pid %d).", bootstrap, pid)
        return bootstrap

    def _choose_ports(self, fresh: bool) -> tuple[int, int]:
        previous: dict[str, Any] = {}
        if not fresh:
            with contextlib.suppress(OSError, ValueError):
                previous = json.loads((self.data_dir / PORTS_FILE).read_text(encoding="utf-8"))
        port = self.port
        if port is not None and not _port_is_free(port):
            raise EmbeddedKafkaError(
                f"Cannot start Kafka on 127.0.0.1:{port}: the port is in use. Pass another port "
                "or port=None to pick a free one."
            )
        if port is None:
            old = previous.get("port")
            port = int(old) if isinstance(old, int) and _port_is_free(old) else free_port()
        old_c = previous.get("controller_port")
        if isinstance(old_c, int) and old_c != port and _port_is_free(old_c):
            controller = old_c
        else:
            controller = free_port()
            while controller == port:
                controller = free_port()
        return port, controller

    def _format_storage(self, java: str, libs: Path, props: Path) -> None:
        if (self.data_dir / DATA_DIR / "meta.properties").is_file():
            return
        cluster_id = _new_cluster_id()
        cmd = [java, "-cp", f"{libs}/*", "kafka.tools.StorageTool", "format"]
        cmd += ["-t", cluster_id, "-c", str(props), "--ignore-formatted"]
        logger.info("Formatting Kafka storage in %s (cluster id %s).", self.data_dir, cluster_id)
        try:
            result = subprocess.run(
                cmd,
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise EmbeddedKafkaError(f"Formatting Kafka storage timed out: {cmd}") from exc
        if result.returncode != 0:
            raise EmbeddedKafkaError(
                f"Formatting Kafka storage in {self.data_dir} failed (exit code "
                f"{result.returncode}):\n{(result.stdout + result.stderr).strip()[-4000:]}"
            )

    def _launch(self, java: str, libs: Path, timeout: float, *, retry_ports: bool) -> str:
        port, controller_port = self._choose_ports(fresh=retry_ports)
        props = self.data_dir / SERVER_PROPERTIES
        log4j = self.data_dir / LOG4J2_PROPERTIES
        props.write_text(
            render_server_properties(
                self.data_dir,
                port=port,
                controller_port=controller_port,
                extra_properties=self.extra_properties,
            ),
            encoding="latin-1",
        )
        log4j.write_text(render_log4j2_properties(self.data_dir), encoding="latin-1")
        (self.data_dir / SERVER_LOG).parent.mkdir(parents=True, exist_ok=True)
        self._format_storage(java, libs, props)

        cmd = [java, *_JVM_OPTS, f"-Dlog4j2.configurationFile={log4j}"]
        cmd += [f"-Dkafka.logs.dir={self.server_log.parent}", "-cp", f"{libs}/*"]
        cmd += ["kafka.Kafka", str(props)]
        began = time.monotonic()
        with self.console_log.open("ab") as out:
            out.write(f"\n=== dkf: starting Kafka {KAFKA_VERSION} at {time.ctime()} ===\n".encode())
            out.flush()
            # Only what this launch writes goes into error messages.
            offsets = {p: _size(p) for p in (self.console_log, self.server_log)}
            proc = subprocess.Popen(
                cmd,
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # detached: survives the CLI and Ctrl-C in a terminal
                close_fds=True,
            )
        _CHILDREN[proc.pid] = proc
        bootstrap = f"{_HOST}:{port}"
        _write_json_atomic(
            self.state_file,
            {
                "pid": proc.pid,
                "port": port,
                "controller_port": controller_port,
                "bootstrap": bootstrap,
                "kafka_version": KAFKA_VERSION,
                "data_dir": str(self.data_dir),
                "started_at": time.time(),
                "server_log": str(self.server_log),
            },
        )
        _write_json_atomic(
            self.data_dir / PORTS_FILE, {"port": port, "controller_port": controller_port}
        )

        def log_tail() -> str:
            parts = []
            for path, since in offsets.items():
                summary = _summarize_log(_read_since(path, since))
                if summary:
                    parts.append(f"--- {path} ---\n{summary}")
            return "\n".join(parts) or "(the broker wrote no log)"

        def port_taken() -> bool:
            text = "".join(_read_since(path, since) for path, since in offsets.items())
            return "Address already in use" in text or "BindException" in text

        def pid_if_alive() -> int | None:
            return proc.pid if proc.poll() is None else None

        try:
            _wait_ready(bootstrap, port, began + timeout, pid_if_alive)
        except _BrokerExitedError:
            self._remove_state()
            tail = log_tail()
            if port_taken():
                raise _PortTakenError(
                    f"Kafka could not bind port {port} or {controller_port}:\n{tail}"
                ) from None
            raise EmbeddedKafkaError(
                f"The Kafka broker in {self.data_dir} exited during startup with code "
                f"{proc.returncode}.\n{tail}"
            ) from None
        except EmbeddedKafkaError as exc:
            _terminate(proc.pid, 10)
            self._remove_state()
            raise EmbeddedKafkaError(f"{exc}\n{log_tail()}") from None
        except BaseException:  # e.g. KeyboardInterrupt: do not leave a half-started JVM
            _terminate(proc.pid, 10)
            self._remove_state()
            raise
        logger.info(
            "Kafka %s broker ready at %s in %.1f s (pid %d, logs in %s).",
            KAFKA_VERSION,
            bootstrap,
            time.monotonic() - began,
            proc.pid,
            self.server_log,
        )
        self._bootstrap = bootstrap
        self._controller_port = controller_port
        return bootstrap


class _BrokerExitedError(Exception):
    pass


class _PortTakenError(Exception):
    pass


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _terminate(pid: int, timeout: float) -> None:
    """SIGTERM ``pid``, wait up to ``timeout`` s, then SIGKILL its process group and wait."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if _wait_dead(pid, timeout):
        return
    logger.warning("Kafka broker pid %d ignored SIGTERM for %.0f s; killing it.", pid, timeout)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # the broker leads its own session and process group
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if not _wait_dead(pid, 10):
        raise EmbeddedKafkaError(f"Kafka broker pid {pid} survived SIGKILL.")


def _wait_dead(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    _CHILDREN.pop(pid, None)
    return True


def _wait_ready(
    bootstrap: str, port: int, deadline: float, alive: Callable[[], int | None]
) -> None:
    """Wait until the broker at ``bootstrap`` serves metadata and topic creation.

    ``alive()`` returns the broker's pid while it runs and ``None`` once it exited, which
    raises :class:`_BrokerExitedError` at once instead of waiting for the deadline.
    """
    from confluent_kafka.admin import AdminClient  # lazy: keep `import local` cheap

    admin: AdminClient | None = None
    last_error = "the port never accepted connections"
    while True:
        if alive() is None:
            raise _BrokerExitedError()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise EmbeddedKafkaError(
                f"The Kafka broker at {bootstrap} was not ready in time ({last_error})."
            )
        if not _port_answers(port, timeout=min(1.0, remaining)):
            time.sleep(0.2)
            continue
        if admin is None:
            config: dict[str, Any] = {
                "bootstrap.servers": bootstrap,
                "client.id": "dkf-embedded-kafka-probe",
                "logger": logging.getLogger(__name__ + ".probe"),  # not librdkafka's stderr
            }
            admin = AdminClient(config)
        try:
            _probe(admin, min(10.0, max(remaining, 1.0)))
            return
        except Exception as exc:  # KafkaException and timeouts: not ready yet
            last_error = f"last probe error: {exc}"
            time.sleep(0.3)


def _probe(admin: Any, timeout: float) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    metadata = admin.list_topics(timeout=timeout)
    if not metadata.brokers:
        raise RuntimeError("no broker in the cluster metadata yet")
    topic = f"_dkf_ready_probe_{uuid.uuid4().hex[:12]}"
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=1)],
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    try:
        futures[topic].result(timeout=timeout + 1)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    admin.delete_topics([topic], operation_timeout=timeout, request_timeout=timeout)[topic].result(
        timeout=timeout + 1
    )


def resolve_bootstrap_servers() -> str | None:
    """Where Kafka is, if anywhere: ``$KAFKA_BOOTSTRAP_SERVERS``, else the CLI's local broker.

    The local broker is the one in ``default_home() / "kafka"`` (``dkf local-kafka start``),
    and counts only while it runs. Nothing is started.

    Returns:
        A bootstrap servers string, or ``None`` when neither is available.

    Example:
        >>> os.environ["KAFKA_BOOTSTRAP_SERVERS"] = "kafka:9092"
        >>> resolve_bootstrap_servers()
        'kafka:9092'
        >>> del os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    """
    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if env:
        return env
    return EmbeddedKafka(default_home() / "kafka").status()


def ensure_local_kafka(timeout: float = 120) -> str:
    """A Kafka to talk to: ``$KAFKA_BOOTSTRAP_SERVERS``, else the local broker, started if needed.

    The local broker lives in ``default_home() / "kafka"`` and keeps running after this process
    exits (stop it with ``dkf local-kafka stop``).

    Args:
        timeout: seconds to wait for a freshly launched broker to become ready.

    Returns:
        A bootstrap servers string.

    Example:
        >>> bootstrap = ensure_local_kafka()  # doctest: +SKIP
        >>> bootstrap
        '127.0.0.1:41234'
    """
    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if env:
        return env
    return EmbeddedKafka(default_home() / "kafka").start(timeout=timeout)
