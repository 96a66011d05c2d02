"""The tap's ``/metrics`` endpoint: ``prometheus_client``'s HTTP server over the families ``inspector.tap.metrics``
made.

The tap's driver publishes a snapshot (:meth:`MetricsServer.publish`, about once a second: immutable values,
swapped in as one reference) and the server's threads render the latest one when Prometheus scrapes, in the text
format or OpenMetrics as the scraper asks (``Accept``); the decoding thread never waits for a scrape. The
process's own metrics (``process_*``: CPU seconds, resident memory, open files) come with them.
"""

from __future__ import annotations

import errno
import re
import threading
from collections.abc import Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from inspector.tap.metrics import LATENCY_BUCKETS, Family, Kind

_ADDRESS = re.compile(r"\[(?P<v6>[^\]]+)\]:(?P<port6>\d+)|(?P<host>[^:\[\]]*):(?P<port>\d+)")


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` (every interface) or ``[IPV6]:PORT`` → (host, port); ValueError naming the form.
    Port 0: one the system chooses (the tap says which)."""
    m = _ADDRESS.fullmatch(text.strip())
    port = int(m.group("port6") or m.group("port")) if m else -1
    if m is None or not 0 <= port < 65536:
        raise ValueError(f"not HOST:PORT: {text!r} (examples: 127.0.0.1:9464, :9464, [::1]:9464)")
    host = m.group("v6") or m.group("host") or "0.0.0.0"
    return host, port


def _bound(le: float) -> str:
    return f"{le:g}"


_BUCKET_NAMES = (*(_bound(b) for b in LATENCY_BUCKETS), "+Inf")


def render(families: tuple[Family, ...]) -> Iterator[Metric]:
    """The families as ``prometheus_client`` metric families."""
    for family in families:
        spec = family.spec
        labels = list(spec.labels)
        metric: CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily
        if spec.kind is Kind.HISTOGRAM:
            metric = HistogramMetricFamily(spec.name, spec.help, labels=labels)
            for values, hist in sorted(family.histograms.items()):
                metric.add_metric(list(values), list(zip(_BUCKET_NAMES, hist.buckets, strict=True)), hist.sum)
        elif spec.kind is Kind.COUNTER:
            metric = CounterMetricFamily(spec.name, spec.help, labels=labels)
            for values, value in sorted(family.values.items()):
                metric.add_metric(list(values), value)
        else:
            metric = GaugeMetricFamily(spec.name, spec.help, labels=labels)
            for values, value in sorted(family.values.items()):
                metric.add_metric(list(values), value)
        yield metric


class _Latest(Collector):
    def __init__(self) -> None:
        self.families: tuple[Family, ...] = ()

    def collect(self) -> Iterator[Metric]:
        return render(self.families)  # one reference read: the snapshot it names does not change


class MetricsServer:
    """``/metrics`` on ``host:port``, serving the last published snapshot."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._latest = _Latest()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self._latest)
        ProcessCollector(registry=self.registry)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Listen; OSError (with a message naming the address) when it cannot."""
        try:
            self._server, self._thread = start_http_server(self.port, addr=self.host, registry=self.registry)
        except OSError as exc:
            name = errno.errorcode.get(exc.errno or 0, "")
            why = f"{exc.strerror or exc} ({name})" if name else str(exc)
            raise OSError(exc.errno, f"cannot serve metrics on {self.host}:{self.port}: {why}: "
                                     "choose another --metrics address") from None

    @property
    def address(self) -> tuple[str, int]:
        """The address it listens on (the port the system chose for port 0)."""
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def publish(self, families: tuple[Family, ...]) -> None:
        self._latest.families = families

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
