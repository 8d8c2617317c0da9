"""What the embedded services share: a detached JVM in its own directory, found through a file.

The Kafka broker and the Schema Registry are both a ``java`` process started in the background
so that it outlives the Python process that started it (``dkf local-kafka start`` exits at
once). Everything a service needs lives in its directory: its configuration, data, logs and a
``state.json`` that lets any later process find, report or stop it. :class:`JvmService` holds
that life cycle once; each service says how to fetch, configure, launch and probe itself.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

from ..errors import EmbeddedServiceError
from .fetch import _file_lock

__all__ = ["JvmService", "default_home", "escape_property", "free_port"]

logger = logging.getLogger(__name__)

STATE_FILE = "state.json"
PORTS_FILE = "ports.json"
HOST = "127.0.0.1"
BIND_RETRIES = 3  # auto-picked ports can be taken by someone else before the service binds them


def default_home() -> Path:
    """Where the CLI and the demo keep local state: ``$DKF_HOME`` or ``<cwd>/.local``.

    The CLI's embedded broker lives in ``default_home() / "kafka"``, its Schema Registry in
    ``default_home() / "schema-registry"``.

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
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Whether a JVM could bind ``port`` on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the JVM's server sockets do: a port lingering in TIME_WAIT counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def port_answers(port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def escape_property(text: str, *, is_key: bool = False) -> str:
    """Escape text for a ``java.util.Properties`` file (read as ISO-8859-1 by Kafka).

    Example:
        >>> escape_property("a b", is_key=True)
        'a\\\\ b'
    """
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


def render_properties(
    header: str, props: list[tuple[str, str]], extra: Mapping[str, str], error: type[Exception]
) -> str:
    """A properties file: ``header`` comment lines, ``props``, then ``extra`` (which wins)."""
    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"{escape_property(k, is_key=True)}={escape_property(v)}" for k, v in props]
    if extra:
        lines.append("# extra_properties")
        for key, value in extra.items():
            if not key or not key.strip():
                raise error("extra_properties has an empty key.")
            lines.append(f"{escape_property(key, is_key=True)}={escape_property(value)}")
    return "\n".join(lines) + "\n"


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


def summarize_log(text: str, *, errors: int = 12, last: int = 15) -> str:
    """The first ERROR/FATAL lines with their exception lines, then the last lines of a log.

    A failing service logs its cause once and then hundreds of shutdown lines; the tail alone
    would hide the cause. Lines look like ``[<time>] ERROR <message> (<logger>)``.
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


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` so that readers see the old or the new file, whole."""
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


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# Services launched by this Python process: polling the Popen is the only way to both see a
# dead child and reap it (a zombie still answers os.kill(pid, 0)).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def _pid_alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        # Reaped: the pid is free, and after a wrap-around of pids it may be another
        # process's, so forget the child and ask the system about the pid.
        del _CHILDREN[pid]
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


def _cmdline(pid: int) -> list[bytes] | None:
    """The command line of ``pid``, or ``None`` where there is no procfs to tell."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None


def _wait_dead(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    _CHILDREN.pop(pid, None)
    return True


class _ExitedError(Exception):
    """The service process exited while we waited for it to become ready."""


class _PortTakenError(Exception):
    """The service could not bind one of its ports."""


#: ``probe(address, remaining_seconds)`` raises while the service is not ready yet.
Probe = Callable[[str, float], None]


class StartedWhileUsed:
    """``with service:`` starts it on entry and stops it on exit (its ``start`` and ``stop``)."""

    def start(self, timeout: float = 60) -> str:
        raise NotImplementedError

    def stop(self, timeout: float = 30) -> bool:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class JvmService(StartedWhileUsed):
    """A service run as a detached ``java`` process in ``data_dir``, listening on 127.0.0.1.

    ``state.json`` in ``data_dir`` records the running process, which makes :meth:`start`
    idempotent and lets any process (for example the ``dkf`` CLI) report or stop a service that
    another process started. ``ports.json`` keeps the last ports, reused when free.

    A subclass sets the class attributes and implements :meth:`_fetch`, :meth:`_prepare`,
    :meth:`_address`, :meth:`_make_probe` and :meth:`_is_ours`.
    """

    #: What the service is called in messages ("Kafka broker").
    label: ClassVar[str]
    #: The state-file key holding the address clients use ("bootstrap", "url").
    address_key: ClassVar[str]
    #: The names of its ports: the client port first, then any others it needs.
    port_names: tuple[str, ...] = ("port",)
    #: The error type its failures raise.
    error: ClassVar[type[EmbeddedServiceError]]
    #: How a user stops it, for messages.
    stop_hint: ClassVar[str]
    #: Files in ``data_dir``: the JVM's stdout and stderr, the service's own log, and its
    #: configuration (rewritten on every start).
    console_name: ClassVar[str]
    log_name: ClassVar[str]
    properties_name: ClassVar[str]

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        extra_properties: Mapping[str, str] | None = None,
    ) -> None:
        # Resolved: the running service is recognised by this path in its command line.
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.port = port
        #: Service settings appended to its configuration file (they override the defaults).
        self.extra_properties: dict[str, str] = dict(extra_properties or {})
        self._address_cache: str | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.data_dir)!r}, port={self.port!r})"

    # ------------------------------------------------------------------ what a service says

    def _fetch(self) -> Path:
        """Download the service once; returns what :meth:`_prepare` launches from."""
        raise NotImplementedError

    def _prepare(self, java: str, fetched: Path, ports: Mapping[str, int]) -> list[str]:
        """Write the configuration for ``ports`` and return the command that runs the service."""
        raise NotImplementedError

    def _address(self, ports: Mapping[str, int]) -> str:
        """The address clients use for a service on ``ports``."""
        raise NotImplementedError

    def _make_probe(self) -> Probe:
        """A fresh readiness probe (it may keep a client between calls)."""
        raise NotImplementedError

    def _is_ours(self, cmdline: list[bytes]) -> bool:
        """Whether a process with this command line is this directory's service."""
        raise NotImplementedError

    def _state_extra(self) -> dict[str, Any]:
        """More facts for ``state.json`` (the version that runs)."""
        return {}

    def _environment(self) -> dict[str, str] | None:
        """The process environment of the service; ``None`` inherits this process's."""
        return None

    def _after_ready(self, address: str, ports: Mapping[str, int]) -> None:
        """Called once a freshly launched service is ready."""

    def _adopted(self, state: Mapping[str, Any]) -> None:
        """Called when a running service is found in ``state``, or a launch recorded it."""

    # ------------------------------------------------------------------ paths and state files

    @property
    def state_file(self) -> Path:
        """``data_dir/state.json``: pid, ports and address of the running service."""
        return self.data_dir / STATE_FILE

    @property
    def server_log(self) -> Path:
        """The service's own log file (INFO level)."""
        return self.data_dir / self.log_name

    @property
    def console_log(self) -> Path:
        """The JVM's stdout and stderr; look here when the service dies before logging."""
        return self.data_dir / self.console_name

    @property
    def pid(self) -> int | None:
        """The process id of the running service (started by any process), else ``None``."""
        state = self._live_state()
        return int(state["pid"]) if state is not None else None

    @property
    def properties_file(self) -> Path:
        """The service's configuration file, written by each start."""
        return self.data_dir / self.properties_name

    def _running_address(self) -> str:
        """The address of the running service (started here or by another process)."""
        if self._address_cache is not None:
            return self._address_cache
        state = self._read_state()
        if state is not None and self.address_key in state:
            return str(state[self.address_key])
        raise self.error(f"The embedded {self.label} in {self.data_dir} is not running.")

    def _read_state(self) -> dict[str, Any] | None:
        """The state file's content, or ``None`` when absent; a corrupt file is removed."""
        try:
            text = self.state_file.read_text(encoding="utf-8")
        except OSError:
            return None
        try:
            state = json.loads(text)
            int(state["pid"])
            int(state["port"])
            str(state[self.address_key])
        except (ValueError, TypeError, KeyError):
            logger.warning("Removing unreadable %s state file %s.", self.label, self.state_file)
            self._remove_state()
            return None
        return dict(state)

    def _remove_state(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.state_file.unlink()

    def _live_state(self) -> dict[str, Any] | None:
        """The state of a service process that is still alive; stale state files are removed."""
        state = self._read_state()
        if state is None:
            return None
        pid = int(state["pid"])
        cmdline = _cmdline(pid) if _pid_alive(pid) else []
        # No procfs (None): cannot tell a reused pid, assume it is ours.
        if cmdline is None or (cmdline and self._is_ours(cmdline)):
            return state
        logger.info(
            "Removing stale %s state file %s (no %s runs as pid %d).",
            self.label,
            self.state_file,
            self.label,
            pid,
        )
        self._remove_state()
        return None

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with _file_lock(self.data_dir / ".lock"):
            yield

    # ------------------------------------------------------------------ public operations

    def status(self) -> str | None:
        """The address if this directory's service is running and answering.

        A state file whose process is gone is deleted. A process that is alive but not (yet)
        accepting connections, e.g. one still starting, reports ``None`` and is left alone.

        Example:
            >>> EmbeddedKafka(Path("/tmp/nothing-here")).status() is None  # doctest: +SKIP
            True
        """
        state = self._live_state()
        if state is None:
            return None
        if not port_answers(int(state["port"])):
            return None
        return str(state[self.address_key])

    def start(self, timeout: float = 60) -> str:
        """Start the service unless it already runs, and wait until it serves requests.

        The first start fetches the service (not counted in ``timeout``). When ``data_dir``
        already has a live service, its address is returned and nothing is started.

        Args:
            timeout: seconds to wait for the launched service to become ready.

        Returns:
            The address clients use.

        Raises:
            EmbeddedServiceError: Java or Maven is missing, or the service exited or did not
                become ready in time (the message ends with its log tail).

        Example:
            >>> EmbeddedKafka(Path(".local/kafka")).start()  # doctest: +SKIP
            '127.0.0.1:41234'
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self._lock():
            state = self._live_state()
            if state is not None:
                adopted = self._adopt_running(state, timeout)
                if adopted is not None:
                    return adopted
            java = self._find_java()
            fetched = self._fetch()
            for attempt in range(1, BIND_RETRIES + 1):
                try:
                    return self._launch(java, fetched, timeout, retry_ports=attempt > 1)
                except _PortTakenError as exc:
                    if self.port is not None or attempt == BIND_RETRIES:
                        raise self.error(str(exc)) from None
                    logger.info("%s port taken (%s); retrying with other ports.", self.label, exc)
        raise AssertionError("unreachable")

    def stop(self, timeout: float = 30) -> bool:
        """Stop the service: SIGTERM (a clean shutdown), then SIGKILL after ``timeout`` seconds.

        Works for a service started by any process, as long as ``state.json`` records it.

        Args:
            timeout: seconds to wait for the clean shutdown before killing the process.

        Returns:
            ``True`` if a running service was stopped, ``False`` if none was running.

        Example:
            >>> EmbeddedKafka(Path(".local/kafka")).stop()  # doctest: +SKIP
            True
        """
        if not self.data_dir.is_dir():
            return False
        with self._lock():
            state = self._live_state()
            self._address_cache = None
            if state is None:
                return False
            pid = int(state["pid"])
            logger.info("Stopping %s pid %d in %s...", self.label, pid, self.data_dir)
            self._terminate(pid, timeout)
            self._remove_state()
            return True

    # ------------------------------------------------------------------ internals

    def _find_java(self) -> str:
        """The ``java`` to run the service with (its error names the service)."""
        raise NotImplementedError

    def _adopt_running(self, state: Mapping[str, Any], timeout: float) -> str | None:
        """The address of the live service ``state`` describes; ``None`` if it dies meanwhile."""
        address = str(state[self.address_key])
        port = int(state["port"])
        if self.port is not None and port != self.port:
            logger.warning(
                "%s already running in %s at %s, not on the requested port %d.",
                self.label,
                self.data_dir,
                address,
                self.port,
            )
        pid = int(state["pid"])
        self._address_cache = address
        self._adopted(state)
        if port_answers(port):  # the client port opens once the service is ready
            logger.info("%s already running at %s (pid %d).", self.label, address, pid)
            return address
        # Another process launched it and is still waiting for it to become ready.
        try:
            self._wait_ready(address, port, time.monotonic() + timeout, lambda: _pid_alive(pid))
        except _ExitedError:
            self._remove_state()
            self._address_cache = None
            return None
        except EmbeddedServiceError as exc:
            raise self.error(
                f"A {self.label} process (pid {pid}) runs in {self.data_dir} but does not serve "
                f"requests: {exc} Stop it ({self.stop_hint}) and see {self.server_log}."
            ) from None
        logger.info("%s already running at %s (pid %d).", self.label, address, pid)
        return address

    def _choose_ports(self, fresh: bool) -> dict[str, int]:
        """The client port (explicit, else the previous one if free, else a free one), then the
        others (the previous ones if free and distinct, else free ones)."""
        previous: dict[str, Any] = {}
        if not fresh:
            with contextlib.suppress(OSError, ValueError):
                previous = json.loads((self.data_dir / PORTS_FILE).read_text(encoding="utf-8"))
        port = self.port
        if port is not None and not port_is_free(port):
            raise self.error(
                f"Cannot start the {self.label} on {HOST}:{port}: the port is in use. Pass "
                "another port or port=None to pick a free one."
            )
        if port is None:
            old = previous.get("port")
            port = int(old) if isinstance(old, int) and port_is_free(old) else free_port()
        ports = {"port": port}
        for name in self.port_names[1:]:
            old = previous.get(name)
            if isinstance(old, int) and old not in ports.values() and port_is_free(old):
                ports[name] = old
                continue
            other = free_port()
            while other in ports.values():
                other = free_port()
            ports[name] = other
        return ports

    def _launch(self, java: str, fetched: Path, timeout: float, *, retry_ports: bool) -> str:
        ports = self._choose_ports(fresh=retry_ports)
        cmd = self._prepare(java, fetched, ports)
        self.server_log.parent.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        with self.console_log.open("ab") as out:
            out.write(f"\n=== dkf: starting the {self.label} at {time.ctime()} ===\n".encode())
            out.flush()
            # Only what this launch writes goes into error messages.
            offsets = {p: _size(p) for p in (self.console_log, self.server_log)}
            proc = subprocess.Popen(
                cmd,
                cwd=self.data_dir,
                env=self._environment(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # detached: survives the CLI and Ctrl-C in a terminal
                close_fds=True,
            )
        _CHILDREN[proc.pid] = proc
        address = self._address(ports)
        state = {
            "pid": proc.pid,
            **ports,
            self.address_key: address,
            **self._state_extra(),
            "data_dir": str(self.data_dir),
            "started_at": time.time(),
            "server_log": str(self.server_log),
        }
        write_json_atomic(self.state_file, state)
        write_json_atomic(self.data_dir / PORTS_FILE, ports)

        def log_tail() -> str:
            parts = []
            for path, since in offsets.items():
                summary = summarize_log(_read_since(path, since))
                if summary:
                    parts.append(f"--- {path} ---\n{summary}")
            return "\n".join(parts) or f"(the {self.label} wrote no log)"

        def port_taken() -> bool:
            text = "".join(_read_since(path, since) for path, since in offsets.items())
            return "Address already in use" in text or "BindException" in text

        try:
            self._wait_ready(address, ports["port"], began + timeout, lambda: proc.poll() is None)
            self._after_ready(address, ports)
        except _ExitedError:
            self._remove_state()
            tail = log_tail()
            if port_taken():
                numbers = " or ".join(str(p) for p in ports.values())
                raise _PortTakenError(
                    f"The {self.label} could not bind port {numbers}:\n{tail}"
                ) from None
            raise self.error(
                f"The {self.label} in {self.data_dir} exited during startup with code "
                f"{proc.returncode}.\n{tail}"
            ) from None
        except EmbeddedServiceError as exc:
            self._terminate(proc.pid, 10)
            self._remove_state()
            raise self.error(f"{exc}\n{log_tail()}") from None
        except BaseException:  # e.g. KeyboardInterrupt: do not leave a half-started JVM
            self._terminate(proc.pid, 10)
            self._remove_state()
            raise
        logger.info(
            "%s ready at %s in %.1f s (pid %d, logs in %s).",
            self.label,
            address,
            time.monotonic() - began,
            proc.pid,
            self.server_log,
        )
        self._address_cache = address
        self._adopted(state)
        return address

    def _wait_ready(
        self, address: str, port: int, deadline: float, alive: Callable[[], bool]
    ) -> None:
        """Wait until the service at ``address`` passes its probe.

        ``alive()`` is false once the process exited, which raises :class:`_ExitedError` at
        once instead of waiting for the deadline.
        """
        probe = self._make_probe()
        last_error = "the port never accepted connections"
        while True:
            if not alive():
                raise _ExitedError()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.error(
                    f"The {self.label} at {address} was not ready in time ({last_error})."
                )
            if not port_answers(port, timeout=min(1.0, remaining)):
                time.sleep(0.2)
                continue
            try:
                probe(address, min(10.0, max(remaining, 1.0)))
                return
            except Exception as exc:  # client errors and timeouts: not ready yet
                last_error = f"last probe error: {exc}"
                time.sleep(0.3)

    def _terminate(self, pid: int, timeout: float) -> None:
        """SIGTERM ``pid``, wait up to ``timeout`` s, then SIGKILL its process group and wait."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if _wait_dead(pid, timeout):
            return
        logger.warning(
            "%s pid %d ignored SIGTERM for %.0f s; killing it.", self.label, pid, timeout
        )
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # the service leads its own session and process group
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if not _wait_dead(pid, 10):
            raise self.error(f"{self.label} pid {pid} survived SIGKILL.")


def from_env_or_status(env: str, service: JvmService) -> str | None:
    """``$env`` when set (another service of the kind is configured), else the local one's
    address while it runs; nothing is started."""
    return os.environ.get(env, "").strip() or service.status()


def from_env_or_start(env: str, service: JvmService, timeout: float) -> str:
    """``$env`` when set, else the local service's address, started if needed."""
    return os.environ.get(env, "").strip() or service.start(timeout=timeout)


def rolling_log4j2_properties(log: Path, name: str, what: str, extra: str = "") -> str:
    """A log4j2 configuration sending a service's INFO log to ``log`` (rolled over at 20 MB,
    three old files kept, so a long-lived local service does not fill the disk); ``extra``
    lines (logger levels) are appended."""
    path = escape_property(str(log))
    return f"""# Generated by dagster_kafka_flinklike.local: {what}.
status = warn
name = {name}
appender.server.type = RollingFile
appender.server.name = server
appender.server.fileName = {path}
appender.server.filePattern = {path}.%i
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
appender.server.policies.type = Policies
appender.server.policies.size.type = SizeBasedTriggeringPolicy
appender.server.policies.size.size = 20MB
appender.server.strategy.type = DefaultRolloverStrategy
appender.server.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.server.ref = server
{extra}"""
