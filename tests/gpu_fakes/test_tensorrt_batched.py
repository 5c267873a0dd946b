"""The batched TensorRT lane without a GPU: profile shapes, grouping, buffer sizing, and the whole lane
(pinned buffers, uploads, device-to-device gathers, one context per profile, unpadding) run against fake
CUDA and fake TensorRT contexts that execute the real batched graphs with ONNX Runtime on the bytes at the
addresses the lane bound. Each row must equal the sentence alone on the same graphs, and doctor's
row-by-row check must pass on it (~30 s on 2 cores: the graphs' CPU runs)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.backends.base import EngineError, SynthesisItem
from wyoming_fasttts.backends.onnxruntime import BatchedOnnxRuntimeEngine
from wyoming_fasttts.backends.plans import PlanCache, PlanKey, batch_shapes, batched_stage_profiles
from wyoming_fasttts.backends.tensorrt import choose_slots, slot_bytes
from wyoming_fasttts.backends.trt_batched import BatchedLane, BatchLimits, batched_tensor_bytes, stage2_groups
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.doctor.checks import _batch_parity as batch_parity
from wyoming_fasttts.doctor.parity import mel_distance_db
from wyoming_fasttts.graphs.batched import ensure_batched_graphs
from wyoming_fasttts.text import normalize, phonemize
from wyoming_fasttts.voices import VoiceBank

MB = 10**6


def _keys(settings) -> tuple[PlanKey, PlanKey]:
    profiles = batched_stage_profiles(settings)
    return tuple(PlanKey(stage, "00" * 32, "tensorrt-rtx", "1.7.1.116", "8.6", "fp32", profiles[stage], True)
                 for stage in ("stage1", "stage2"))


def test_profiles_keep_rows_times_frames_within_the_budget() -> None:
    assert batch_shapes(16, 1024, 2048) == [(2, 1024), (4, 512), (8, 256), (16, 128)]
    assert batch_shapes(16, 1024, 512) == [(1, 512), (2, 256), (4, 128), (8, 64), (16, 32)]
    assert batch_shapes(6, 1024, 2048) == [(2, 1024), (4, 512), (6, 341)]
    assert batch_shapes(1, 1024, 2048) == [(1, 1024)]
    settings = load_settings()
    limits = BatchLimits.from_keys(*_keys(settings))
    assert limits == BatchLimits(16, 512, ((2, 1024), (4, 512), (8, 256), (16, 128)))
    stage2 = batched_stage_profiles(settings)["stage2"]
    assert stage2[3].shapes["alignment"] == ((1, 1, 1), (16, 64, 128), (16, 512, 128))
    assert stage2[0].shapes["t_en"][2] == (2, 512, 512) and stage2[0].shapes["frames"][2] == (2,)


def test_plan_key_of_batched_plans_differs_and_has_its_own_file_family() -> None:
    settings = load_settings()
    _, stage2 = _keys(settings)
    batch1 = PlanKey("stage2", "00" * 32, "tensorrt-rtx", "1.7.1.116", "8.6", "fp32", stage2.profiles, False)
    assert stage2.filename.startswith("batched-stage2-tensorrt-rtx-sm86-") and stage2.digest() != batch1.digest()
    smaller = load_settings(overrides={"engine.batch_frames": 1024})
    assert _keys(smaller)[1].digest() != stage2.digest()


def test_batched_and_batch1_plans_do_not_supersede_each_other(tmp_path: Path) -> None:
    """``engine.batched`` can be switched back and forth without rebuilding what was built before."""
    _, stage2 = _keys(load_settings())
    batch1 = PlanKey("stage2", "11" * 32, "tensorrt-rtx", "1.7.1.116", "8.6", "fp32", stage2.profiles, False)
    cache = PlanCache(tmp_path)
    cache.store(stage2, b"batched", 1.0, {})
    cache.store(batch1, b"batch-1", 1.0, {})
    assert cache.load(stage2)[0] == b"batched" and cache.load(batch1)[0] == b"batch-1"


@pytest.mark.parametrize(("frames", "expected"), [
    ([55, 100, 120, 128], [(3, [0, 1, 2, 3])]),                    # all short: one call of the 16-row profile
    ([55, 138, 168, 205], [(2, [0, 1, 2, 3])]),
    ([900, 60, 70, 80], [(0, [0, 3]), (3, [1, 2])]),               # the long row takes the 2 x 1024 profile
    ([300] * 5 + [100] * 9, [(1, [0, 1, 2, 3]), (1, [4, 5, 6, 7]), (3, list(range(8, 14)))]),
])
def test_stage2_groups_take_the_fewest_calls_the_profiles_allow(frames, expected) -> None:
    shapes = ((2, 1024), (4, 512), (8, 256), (16, 128))
    groups = [(k, rows.tolist()) for k, rows in stage2_groups(np.array(frames), shapes)]
    assert groups == expected
    with pytest.raises(EngineError, match="1025 frames"):
        stage2_groups(np.array([1025]), shapes)


def test_memory_at_the_defaults_fits_one_slot_in_two_gib() -> None:
    """Scratch measured from real builds (docs/TENSORRT.md): stage 1 at 16 x 512 tokens 742.6 MB, stage 2
    1351.4 MB at every profile (rows x frames 2048); weights 85.0 + 246.7 MB."""
    limits = BatchLimits.from_keys(*_keys(load_settings()))
    tensors = batched_tensor_bytes(limits)
    assert tensors["alignment"] == 2048 * 512 * 4 and tensors["audio"] == 2048 * 600 * 4
    assert tensors["d"] == tensors["d2"] == 16 * 512 * 640 * 4
    per_slot = slot_bytes({"stage1": 742_646_784, "stage2": 1_351_437_312}, tensors)
    assert 1_351_437_312 + sum(tensors.values()) <= per_slot < 1_351_437_312 + sum(tensors.values()) + 256 * 20
    weights = 84_997_504 + 246_707_456
    assert weights + per_slot < 1800 * MB
    assert choose_slots(0, 2048 * 2**20, weights, per_slot) == 1


# ---- the lane against fake CUDA and fake TensorRT -------------------------------------------------------

class FakeCuda:
    """Device memory is one numpy arena at a fake address; pinned buffers are numpy arrays by fake pointer."""

    BASE = 1 << 36

    def __init__(self, size: int) -> None:
        self.arena = np.zeros(size, np.uint8)
        self.pinned_buffers: dict[int, np.ndarray] = {}
        self._ptrs = itertools.count(1 << 20, 1 << 20)
        self.copies = 0

    def bind(self) -> None:
        pass

    def _dev(self, ptr: int, nbytes: int) -> np.ndarray:
        start = ptr - self.BASE
        assert start >= 0 and start + nbytes <= len(self.arena), "device access outside the pool"
        return self.arena[start:start + nbytes]

    def pinned(self, nbytes: int) -> tuple[int, np.ndarray]:
        ptr = next(self._ptrs)
        self.pinned_buffers[ptr] = np.zeros(nbytes, np.uint8)
        return ptr, self.pinned_buffers[ptr]

    def to_device(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        self._dev(dst, nbytes)[:] = self.pinned_buffers[src][:nbytes]

    def to_host(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        self.pinned_buffers[dst][:nbytes] = self._dev(src, nbytes)

    def on_device(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        self._dev(dst, nbytes)[:] = self._dev(src, nbytes).copy()
        self.copies += 1

    def stream(self) -> int:
        return 7

    def synchronize(self, stream: int) -> None:
        pass

    # CUDA graphs: enqueues made while capturing are recorded, and a launch replays them
    capturing: list | None = None
    launches = 0

    def begin_capture(self, stream: int) -> None:
        assert self.capturing is None, "capture inside capture"
        self.capturing = []

    def end_capture(self, stream: int) -> list:
        graph, self.capturing = self.capturing, None
        return graph

    def launch(self, graph: list, stream: int) -> None:
        self.launches += 1
        for replay in graph:
            replay()

    def destroy_graph(self, graph: list) -> None:
        graph.clear()

    def free_pinned(self, ptr: int) -> None:
        del self.pinned_buffers[ptr]

    def destroy_stream(self, stream: int) -> None:
        pass


_INT64 = {"tokens", "lengths", "frames", "audio_lengths"}


class FakeContext:
    """Runs the stage graph with ONNX Runtime on the bytes at the bound addresses, inside the active profile."""

    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.profile, self.addresses, self.shapes, self.scratch = 0, {}, {}, None
        self.profiles_used: list[int] = []

    def set_device_memory(self, ptr: int, nbytes: int) -> None:
        assert nbytes >= self.engine.device_memory_size_v2
        self.scratch = (ptr, nbytes)

    def set_optimization_profile_async(self, index: int, stream: int) -> bool:
        self.profile = index
        return True

    def set_tensor_address(self, name: str, ptr: int) -> None:
        self.addresses[name] = ptr

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> None:
        lo, _, hi = self.engine.profiles[self.profile].shapes[name]
        assert all(a <= s <= b for a, s, b in zip(lo, shape, hi, strict=True)), (name, shape, lo, hi)
        self.shapes[name] = tuple(shape)

    def _array(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        dtype = np.int64 if name in _INT64 else np.float32
        nbytes = int(np.prod(shape)) * 8 if dtype is np.int64 else int(np.prod(shape)) * 4
        return self.engine.cuda._dev(self.addresses[name], nbytes).view(dtype).reshape(shape)

    def execute_async_v3(self, stream: int) -> bool:
        """Runs now, or, inside a capture, records a run with the shapes set now (a graph replays fixed shapes)."""
        if self.engine.cuda.capturing is not None:
            shapes = dict(self.shapes)
            self.engine.cuda.capturing.append(lambda: self._run(shapes))
            return True
        return self._run(self.shapes)

    def _run(self, shapes: dict[str, tuple[int, ...]]) -> bool:
        assert self.scratch is not None
        self.shapes = dict(shapes)
        session = self.engine.session
        feeds = {i.name: self._array(i.name, self.shapes[i.name]).copy() for i in session.get_inputs()}
        names = [o.name for o in session.get_outputs()]
        for name, value in zip(names, session.run(names, feeds), strict=True):
            self._array(name, value.shape)[...] = value
        self.profiles_used.append(self.profile)
        return True


class FakeEngine:
    def __init__(self, cuda: FakeCuda | None, graph: Path, key: PlanKey) -> None:
        self.cuda, self.profiles = cuda, key.profiles
        self.session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
        self.device_memory_size_v2 = 4096 * (2 if key.stage == "stage2" else 1)
        self.contexts: list[FakeContext] = []

    def create_execution_context(self, strategy: object) -> FakeContext:
        self.contexts.append(FakeContext(self))
        return self.contexts[-1]


class FakeTrt:
    class ExecutionContextAllocationStrategy:
        USER_MANAGED = "user-managed"


SENTENCES = ["好的。", "打开客厅的灯。", "现在是下午三点二十五分。", "今天天气很好，我们一起去公园散步吧。"]
VOICES = ["zf_xiaobei", "zm_yunxi", "zf_xiaoyi", "zm_yunjian"]


@pytest.fixture(scope="module")
def batch():
    settings = load_settings(overrides={"scheduler.max_batch": 4, "scheduler.preferred_batch_sizes": [2, 4],
                                        "engine.batch_frames": 600})
    assets = ensure_assets(settings.assets)
    vocab, voices = load_vocab(assets.vocab), VoiceBank(assets)
    items = []
    for text, voice in zip(SENTENCES, VOICES, strict=True):
        ids = phoneme_ids(phonemize(normalize(text)), vocab)
        items.append(SynthesisItem(ids, voices.style(voice, len(ids)), speed=1.1 if voice == "zm_yunxi" else 1.0))
    return settings, ensure_batched_graphs(assets, settings.assets.data_path), items


def test_lane_rows_equal_each_sentence_alone(batch) -> None:
    settings, graphs, items = batch
    key1, key2 = _keys(settings)
    limits = BatchLimits.from_keys(key1, key2)
    assert limits.shapes == ((1, 600), (2, 300), (4, 150))
    tensors = batched_tensor_bytes(limits)
    cuda = FakeCuda(slot_bytes({"stage1": 4096, "stage2": 8192}, tensors))
    engines = {"stage1": FakeEngine(cuda, graphs.stage1, key1), "stage2": FakeEngine(cuda, graphs.stage2, key2)}
    lane = BatchedLane(FakeTrt, engines, cuda, FakeCuda.BASE, limits, None, settings.engine.tail_frames)
    assert [c.profile for c in engines["stage2"].contexts] == [0, 1, 2]
    assert len({c.scratch for ctx in engines.values() for c in ctx.contexts}) == 1   # one shared scratch

    rows = lane.run(items)

    used = [k for c in engines["stage2"].contexts for k in c.profiles_used]
    assert len(used) >= 2, f"this batch should need more than one stage-2 call ({used})"
    stage2_calls = [key for key in lane.replay.graphs if key[0] == "stage2"]
    assert cuda.copies == 2 * sum(key[2] for key in stage2_calls)   # each call's rows gathered on the device
    assert {key[1:] for key in stage2_calls} <= set(lane.stage2_shapes()), "a shape warm-up would not meet"
    again = lane.run(items)  # the same shapes: every call now replays its captured graph
    assert cuda.launches == 1 + len(stage2_calls) and len(lane.replay.graphs) == 1 + len(stage2_calls)
    for (audio, frames), (replayed, replayed_frames) in zip(rows, again, strict=True):
        assert np.array_equal(audio, replayed) and np.array_equal(frames, replayed_frames)
    reference = BatchedOnnxRuntimeEngine(graphs.stage1, graphs.stage2, max_batch=1, threads=2,
                                         tail_frames=settings.engine.tail_frames)
    expected = [reference.synthesize(item) for item in items]
    reference.close()
    for (audio, frames), (alone_audio, alone_frames) in zip(rows, expected, strict=True):
        assert np.array_equal(frames, alone_frames)
        assert len(audio) == len(alone_audio) == frames.sum() * 600
        # bucket padding of frames changes float32 rounding, which the vocoder's phase amplifies (0.2-0.4 dB,
        # docs/BATCHING.md); what leaked between rows would be far above it (another voice: 10-15 dB)
        assert mel_distance_db(audio, alone_audio) < 0.5

    class _Engine:  # what doctor sees of a batching engine
        max_batch = limits.max_batch

        @staticmethod
        def run(batch: list[SynthesisItem]) -> list[np.ndarray]:
            return [audio for audio, _ in lane.run(batch)]

    assert batch_parity(_Engine(), items, expected, runs=1), "doctor's row-by-row check must pass here"
    with pytest.raises(EngineError, match="exceeds"):
        lane.run(items + items[:1])
    lane.close()
    assert not cuda.pinned_buffers


def test_engine_on_batched_plans_sizes_its_pool_from_the_plans_and_batches(batch, monkeypatch) -> None:
    """``TensorRTEngine`` with the TensorRT module and CUDA faked: max_batch, slots and pool come from the plans'
    profiles, and a batch renders through the lane (two short sentences: ~5 s)."""
    from wyoming_fasttts.backends import tensorrt
    from wyoming_fasttts.backends.plans import Plan, PlanRecord

    settings, graphs, items = batch
    keys = dict(zip(("stage1", "stage2"), _keys(settings), strict=True))
    pool: list[FakeCuda] = []
    loaded: list[FakeEngine] = []

    class Cuda(FakeCuda):
        def __init__(self, device_id: int) -> None:
            pass

        def malloc(self, size: int) -> int:
            super().__init__(size)
            pool.append(self)
            return self.BASE

        def free(self, ptr: int) -> None:
            pool.remove(self)

        def mem_info(self) -> tuple[int, int]:
            return 10 * 2**30, 12 * 2**30

    class Module(FakeTrt):
        __version__ = "1.7.1.116"

        class Logger:
            WARNING = 2

            def __init__(self, level: int) -> None:
                pass

        class Runtime:
            def __init__(self, logger: object) -> None:
                pass

            @staticmethod
            def deserialize_cuda_engine(data: bytes) -> FakeEngine:
                stage = data.decode()
                loaded.append(FakeEngine(None, getattr(graphs, stage), keys[stage]))  # its memory: the pool, below
                return loaded[-1]

    monkeypatch.setattr(tensorrt, "import_tensorrt", lambda backend: Module)
    monkeypatch.setattr(tensorrt, "Cuda", Cuda)
    plans = {s: Plan(k, s.encode(), PlanRecord(k.fields(), "", 0, 0.0, weights_bytes=100 * MB), False)
             for s, k in keys.items()}
    engine = tensorrt.TensorRTEngine("tensorrt-rtx", plans, device_id=0, limits=tensorrt.Limits(512, 1024),
                                     slots=0, budget_bytes=2048 * 2**20, tail_frames=settings.engine.tail_frames)
    assert engine.max_batch == 4 and engine.slots >= 1
    assert engine.pool_bytes == engine.slots * slot_bytes({"stage1": 4096, "stage2": 8192},
                                                          batched_tensor_bytes(BatchLimits.from_keys(*keys.values())))
    for fake in loaded:
        fake.cuda = pool[0]   # fake engines read and write the pool the engine allocated
    rows = engine.synthesize_batch(items[:2])
    assert [len(audio) for audio, _ in rows] == [frames.sum() * 600 for _, frames in rows]
    assert engine.memory().workspace_bytes == engine.pool_bytes
    engine.close()
    assert not pool


class _ShapeOnlySession:
    """Stands in for a stage graph where only shapes matter: outputs of the right shapes, one frame per token."""

    def __init__(self, stage: str) -> None:
        from types import SimpleNamespace

        self.stage = stage
        names = (("tokens", "lengths", "style", "speed"), ("durations", "d", "t_en")) if stage == "stage1" else \
            (("alignment", "d", "t_en", "style", "frames"), ("audio", "audio_lengths"))
        self._inputs = [SimpleNamespace(name=n) for n in names[0]]
        self._outputs = [SimpleNamespace(name=n) for n in names[1]]

    def get_inputs(self) -> list:
        return self._inputs

    def get_outputs(self) -> list:
        return self._outputs

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        if self.stage == "stage1":
            b, t = feeds["tokens"].shape
            return [np.ones((b, t), np.float32), np.zeros((b, t, 640), np.float32), np.zeros((b, 512, t), np.float32)]
        b, _, f = feeds["alignment"].shape
        return [np.zeros((b, f * 600), np.float32), feeds["frames"] * 600]


def test_warm_up_captures_every_shape_a_batch_can_meet(batch) -> None:
    """``warm`` runs every bucket shape inside its profile's limits (the fake contexts assert them) and captures
    each once; batches afterwards only replay. Shapes only: the graphs are stood in for."""
    settings, _, items = batch
    key1, key2 = _keys(settings)
    limits = BatchLimits.from_keys(key1, key2)
    cuda = FakeCuda(slot_bytes({"stage1": 4096, "stage2": 8192}, batched_tensor_bytes(limits)))
    engines = {}
    for stage, key in (("stage1", key1), ("stage2", key2)):
        engine = FakeEngine.__new__(FakeEngine)
        engine.cuda, engine.profiles, engine.contexts = cuda, key.profiles, []
        engine.session, engine.device_memory_size_v2 = _ShapeOnlySession(stage), 4096
        engines[stage] = engine
    lane = BatchedLane(FakeTrt, engines, cuda, FakeCuda.BASE, limits, None, settings.engine.tail_frames)
    shapes = lane.warm(np.zeros(256, np.float32))
    assert shapes == len(lane.replay.graphs) == len(lane.buckets.rows) * len(lane.buckets.tokens) + len(
        lane.stage2_shapes())
    for size in (1, 2, 3, 4):
        lane.run(items[:size])
    assert len(lane.replay.graphs) == shapes, "a batch met a shape warm-up did not"
    lane.close()
