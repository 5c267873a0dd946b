"""Prometheus metrics: what the scheduler, the request paths and the watchdog report, in one registry.

Each server gets its own registry rather than prometheus-client's global one, so several runtimes in one
process (tests, benchmarks) never collide over metric names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from .core import AllocationError, EngineError, PeerStatus

CONTENT_TYPE = CONTENT_TYPE_LATEST

# Seconds: a short sentence on a GPU takes milliseconds, a long reply on a busy CPU tens of seconds.
_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32)
# Compute seconds per second of audio; below 1 is faster than real time.
_RTF_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


def failure_kind(error: BaseException) -> str:
    """The label an engine failure is counted under; allocation failures are what the watchdog acts on."""
    if isinstance(error, AllocationError):
        return "allocation"
    if isinstance(error, EngineError):
        return "engine"
    return "internal"


class PeerCollector(Collector):
    """The remote servers an engine sends work to (``--engine triton``), read at each scrape."""

    def __init__(self) -> None:
        self.source: Callable[[], list[PeerStatus]] = list

    def collect(self) -> Iterator[Metric]:
        peers = self.source()
        if not peers:
            return
        families = (
            (GaugeMetricFamily, "fasttts_triton_server_ready", "1 while the server has the model ready", "ready"),
            (GaugeMetricFamily, "fasttts_triton_outstanding", "Requests this front end has in flight there",
             "outstanding"),
            (CounterMetricFamily, "fasttts_triton_requests", "Sentences the Triton server returned", "requests"),
            (CounterMetricFamily, "fasttts_triton_failures", "Requests that failed there (retried elsewhere when "
             "the server went away)", "failures"),
        )
        for family, name, doc, attr in families:
            metric = family(name, doc, labels=["url"])
            for peer in peers:
                metric.add_metric([peer.url], float(getattr(peer, attr)))
            yield metric


class Metrics:
    """All server metrics; implements ``SchedulerObserver`` so the scheduler can report into it directly."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)  # process_resident_memory_bytes, CPU seconds, open fds
        r = self.registry
        self.requests = Counter("fasttts_requests", "Synthesis requests started", ["api"], registry=r)
        self.active = Gauge("fasttts_requests_active", "Synthesis requests in progress", registry=r)
        self.errors = Counter("fasttts_request_errors", "Errors returned to clients", ["api", "code"], registry=r)
        self.request_seconds = Histogram(
            "fasttts_request_seconds", "Whole synthesis request, first event to last audio", ["api"],
            buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.first_audio_seconds = Histogram(
            "fasttts_first_audio_seconds", "Request received to first audio ready", ["api"],
            buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.batch_seconds = Histogram(
            "fasttts_batch_seconds", "Engine time per batch", ["engine"], buckets=_LATENCY_BUCKETS, registry=r
        )
        self.batch_size = Histogram(
            "fasttts_batch_size", "Sentences per engine batch", ["engine"], buckets=_BATCH_BUCKETS, registry=r
        )
        self.batch_rtf = Histogram(
            "fasttts_batch_realtime_factor", "Engine seconds per second of audio produced", ["engine"],
            buckets=_RTF_BUCKETS, registry=r,
        )
        self.batch_failures = Counter(
            "fasttts_batch_failures", "Engine batches that failed", ["engine", "kind"], registry=r
        )
        self.audio_seconds = Counter("fasttts_audio_seconds", "Seconds of audio synthesised", registry=r)
        self.queue = Gauge("fasttts_queue_depth", "Sentences waiting for an engine slot", registry=r)
        self.ready = Gauge("fasttts_ready", "1 once the engine is loaded and warmed up", registry=r)
        self.engine_info = Gauge("fasttts_engine_info", "The engine serving new work", ["engine", "device"], registry=r)
        self.reloads = Counter("fasttts_engine_reloads", "Engine reloads completed", ["trigger"], registry=r)
        self.reload_failures = Counter(
            "fasttts_engine_reload_failures", "Engine reloads that failed (the old engine kept serving)", registry=r
        )
        self.reload_seconds = Histogram(
            "fasttts_engine_reload_seconds", "Time to build and warm a replacement engine",
            buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.degraded = Counter(
            "fasttts_watchdog_degraded", "Watchdog checks that found degradation", ["evidence"], registry=r
        )
        self.rss = Gauge("fasttts_process_rss_bytes", "Process resident memory at the last sample", registry=r)
        self.working_set = Gauge("fasttts_engine_working_set_bytes",
                                 "Memory the engine holds: a GPU engine's pool sized at start-up, else its weights",
                                 registry=r)
        self.peers = PeerCollector()
        r.register(self.peers)
        self._gpu: dict[str, Gauge] = {}

    # -- SchedulerObserver ----------------------------------------------------------------------------------

    def batch_done(self, engine: str, size: int, seconds: float, audio_seconds: float) -> None:
        self.batch_seconds.labels(engine).observe(seconds)
        self.batch_size.labels(engine).observe(size)
        self.audio_seconds.inc(audio_seconds)
        if audio_seconds > 0:
            self.batch_rtf.labels(engine).observe(seconds / audio_seconds)

    def batch_failed(self, engine: str, size: int, error: BaseException) -> None:
        self.batch_failures.labels(engine, failure_kind(error)).inc()

    def queue_depth(self, depth: int) -> None:
        self.queue.set(depth)

    # -- server and watchdog --------------------------------------------------------------------------------

    def engine_changed(self, name: str, device: str) -> None:
        self.engine_info.clear()
        self.engine_info.labels(name, device).set(1)

    def memory(self, rss_bytes: int, gpu_used: int | None, gpu_free: int | None, gpu_total: int | None,
               working_set: int | None = None) -> None:
        """Latest memory sample; the GPU gauges appear only once a GPU reading exists. ``working_set``: what
        the engine holds (a GPU engine's pool, sized at start-up: weights, arenas, captured graphs)."""
        self.rss.set(rss_bytes)
        if working_set:
            self.working_set.set(working_set)
        for name, value in (("used", gpu_used), ("free", gpu_free), ("total", gpu_total)):
            if value is None:
                continue
            if name not in self._gpu:
                self._gpu[name] = Gauge(
                    f"fasttts_gpu_memory_{name}_bytes", f"GPU memory {name} on the engine's device",
                    registry=self.registry,
                )
            self._gpu[name].set(value)

    def render(self) -> bytes:
        return generate_latest(self.registry)
