"""Kafka clients kept by a Spark Python worker between tasks, as Spark keeps its own on executors.

Spark reuses its Python workers across tasks. A new confluent-kafka client costs connections,
threads, fresh memory and, for an idempotent producer, a producer id: a worker keeps the client
of a task that ended cleanly for its next task with the same settings. At most one client per
settings and :data:`MAX_SETTINGS` settings are kept; a client idle for ``timeout_s`` is closed
by a timer thread, so an idle worker does not hold broker connections for long; a forked child
drops (never uses) its parent's clients.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

#: At most this many distinct client settings have an idle client in one process.
MAX_SETTINGS = 4

Key = tuple[tuple[str, str], ...]


class IdleClients:
    """Clients of finished tasks, kept by this process for its next task with the same settings.

    Args:
        create: makes a new client from its settings.
        close: releases a client that is no longer kept.
        timeout_s: how long a client may stay idle.
    """

    def __init__(
        self,
        create: Callable[[dict[str, Any]], Any],
        close: Callable[[Any], None],
        timeout_s: float,
    ) -> None:
        self._create, self._close = create, close
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._idle: dict[Key, tuple[Any, float]] = {}
        self._timer: threading.Timer | None = None
        os.register_at_fork(after_in_child=self.forget)

    @staticmethod
    def key(settings: Mapping[str, Any]) -> Key:
        """The identity of a client configuration."""
        return tuple(sorted((name, repr(value)) for name, value in settings.items()))

    def take(
        self, settings: Mapping[str, Any], prepare: Callable[[Any], None] | None = None
    ) -> Any:
        """The idle client with exactly ``settings``, or a new one (given to ``prepare`` first)."""
        with self._lock:
            idle = self._idle.pop(self.key(settings), None)
        if idle is not None:
            return idle[0]
        client = self._create(dict(settings))
        if prepare is not None:
            prepare(client)
        return client

    def put(self, settings: Mapping[str, Any], client: Any) -> None:
        """Keep ``client`` (in a clean state) for the next :meth:`take` with the same settings."""
        key = self.key(settings)
        evicted: list[Any] = []
        with self._lock:
            if key not in self._idle and len(self._idle) >= MAX_SETTINGS:
                evicted = [old for old, _ in self._idle.values()]
                self._idle.clear()
            if key in self._idle:
                evicted.append(self._idle[key][0])
            self._idle[key] = (client, time.monotonic())
            if self._timer is None:
                self._timer = threading.Timer(self.timeout_s, self._expire)
                self._timer.daemon = True
                self._timer.start()
        for old in evicted:
            self._close(old)

    def _expire(self) -> None:
        """Close the clients idle for ``timeout_s``; check again later while any are left."""
        now = time.monotonic()
        with self._lock:
            expired = [k for k, (_, since) in self._idle.items() if now - since >= self.timeout_s]
            closing = [self._idle.pop(k)[0] for k in expired]
            self._timer = None
            if self._idle:
                wait = min(since for _, since in self._idle.values()) + self.timeout_s - now
                self._timer = threading.Timer(max(wait, 0.1), self._expire)
                self._timer.daemon = True
                self._timer.start()
        for client in closing:
            self._close(client)

    def close(self) -> int:
        """Close every idle client now; how many there were."""
        with self._lock:
            closing = [client for client, _ in self._idle.values()]
            self._idle.clear()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        for client in closing:
            self._close(client)
        return len(closing)

    def forget(self) -> None:
        """Drop the idle clients without closing them: in a forked child, whose copies of
        librdkafka's handles have no threads behind them and must not be used."""
        self._lock = threading.Lock()
        self._idle = {}
        self._timer = None
