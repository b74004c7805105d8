"""A guard against a llama.cpp build that crashes this machine: probe it in a child process first.

A llama-cpp-python built with ``-march=native`` on a virtual machine whose CPUID lists AMX dies with SIGILL at
the first matrix multiply (ggml's AMX kernels run ``tilezero``, which the hypervisor does not allow). A signal
kills the whole Python process with a bare "Illegal instruction", so no ``try`` can catch it. Before the
first real load of a model, :func:`safe_load_mode` loads it in a child process and generates a few tokens:

* the child succeeds: load normally (``"default"``);
* it dies on a signal, but succeeds with llama.cpp's extra buffer types off (no AMX / weight repacking):
  load that way (``"safe"``) and warn once, naming the cost and the command that rebuilds llama.cpp;
* it dies both ways: :class:`~corecode.errors.BackendError` with what happened and the command that fixes it;
* it fails without a signal (a file that is not a model, say): the load in this process reports the error.

The verdict is cached in ``$CORECODE_CACHE/llama_probe.json`` per build (llama-cpp-python's version and its
shared libraries' size and mtime) and model file, so the probe costs a few seconds once per build and model.
``CORECODE_LLAMA_MODE=default|safe`` skips the probe and forces a mode.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from corecode.errors import BackendError

__all__ = [
    "ProbeResult",
    "REBUILD_COMMAND",
    "build_fingerprint",
    "probe",
    "safe_load_mode",
    "cached_verdicts",
]

REBUILD_COMMAND = "bash scripts/setup.sh   (from a corecode checkout; builds llama.cpp for this CPU, see docs/backends.md)"
_PROBE_TOKENS = 4
_PROBE_PROMPT = "def add(a, b):\n    return"
_TIMEOUT_S = 300.0
_MODES = ("default", "safe")


@dataclass(frozen=True)
class ProbeResult:
    """What one probe child did."""

    mode: str  # "default" or "safe": the load mode it tried
    ok: bool
    returncode: int
    signal_name: str | None  # e.g. "SIGILL" when it died on a signal
    seconds: float
    detail: str  # the child's last stderr line, or its generated text when ok


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def build_fingerprint() -> str:
    """llama-cpp-python's version plus size and mtime of its shared libraries ('' when not installed)."""
    try:
        import importlib.metadata
        import importlib.util

        spec = importlib.util.find_spec("llama_cpp")
        if spec is None or spec.origin is None:
            return ""
        version = importlib.metadata.version("llama-cpp-python")
    except (ImportError, ValueError, importlib.metadata.PackageNotFoundError):
        return ""
    libdir = Path(spec.origin).parent / "lib"
    parts = [version]
    if libdir.is_dir():
        for lib in sorted(libdir.iterdir()):
            if lib.is_symlink():
                continue
            if lib.suffix in (".so", ".dylib", ".dll") or ".so." in lib.name:
                st = lib.stat()
                parts.append(f"{lib.name}:{st.st_size}:{int(st.st_mtime)}")
    return "|".join(parts)


def _model_key(path: Path) -> str:
    st = path.stat()
    return f"{path.resolve()}:{st.st_size}:{int(st.st_mtime)}"


def probe(path: str | Path, mode: str = "default", timeout_s: float = _TIMEOUT_S,
          python: str | None = None) -> ProbeResult:
    """Load ``path`` in a child process in ``mode`` and generate a few greedy tokens."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    cmd = [python or sys.executable, "-m", "corecode.backends.llama_probe", str(path), mode]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        return ProbeResult(mode, False, -1, None, time.monotonic() - start, f"no answer in {timeout_s:.0f} s")
    seconds = time.monotonic() - start
    rc = proc.returncode
    lines = [ln for ln in (proc.stderr or "").strip().splitlines() if ln.strip()]
    if rc == 0:
        return ProbeResult(mode, True, 0, None, seconds, (proc.stdout or "").strip()[-200:])
    return ProbeResult(mode, False, rc, _signal_name(-rc) if rc < 0 else None, seconds,
                       lines[-1][-300:] if lines else "")


def _cache_file() -> Path:
    from corecode.backends.builtin_models import cache_dir

    return cache_dir() / "llama_probe.json"


def cached_verdicts() -> dict[str, dict]:
    """The cached probe verdicts, keyed by build fingerprint and model (for `corecode doctor`)."""
    try:
        return json.loads(_cache_file().read_text())
    except (OSError, ValueError):
        return {}


def _store(key: str, verdict: dict) -> None:
    path = _cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = cached_verdicts()
        data[key] = verdict
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)


_WARNED: set[str] = set()


def safe_load_mode(path: str | Path, *, probe_fn=probe) -> str:
    """The mode this build can load ``path`` in: ``"default"`` or ``"safe"``; raises when neither works.

    The verdict is cached per build and model; ``CORECODE_LLAMA_MODE`` overrides it.
    """
    forced = os.environ.get("CORECODE_LLAMA_MODE", "").strip()
    if forced:
        if forced not in _MODES:
            raise BackendError(f"CORECODE_LLAMA_MODE must be one of {_MODES}, got {forced!r}")
        return forced
    path = Path(path)
    key = f"{build_fingerprint()}#{_model_key(path)}"
    verdict = cached_verdicts().get(key)
    if verdict is None:
        first = probe_fn(path, "default")
        results = [first]
        if not first.ok and first.signal_name is not None:
            results.append(probe_fn(path, "safe"))
        ok = [r for r in results if r.ok]
        verdict = {"mode": ok[0].mode if ok else None, "results": [asdict(r) for r in results],
                   "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
        if ok or first.signal_name is not None:  # a timeout or a load error is not cached: retry next time
            _store(key, verdict)
    mode = verdict["mode"]
    first = verdict["results"][0]
    if mode is None:
        if first.get("signal_name"):
            raise BackendError(
                f"llama.cpp crashed with {first['signal_name']} running {path.name} in a probe process, also with "
                "its extra buffer types off: this llama-cpp-python build uses an instruction this machine does "
                f"not run. Rebuild it for this CPU: {REBUILD_COMMAND}"
            )
        # an error that is not a signal (a bad file, a timeout) is not what this guard is for: the load in
        # this process raises it as a Python exception with llama.cpp's own message
        return "default"
    if mode == "safe" and key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(
            f"llama.cpp crashed with {first['signal_name']} on this machine with its default settings; "
            f"running {path.name} with extra buffer types off (no AMX, no weight repacking), which can be "
            f"slower (benchmarks/llama_modes.py measures it). To get the fast path back, rebuild llama.cpp for this CPU: {REBUILD_COMMAND}",
            RuntimeWarning,
            stacklevel=3,
        )
    return mode


def model_params_patch(mode: str):
    """A context manager under which ``llama_cpp.Llama(...)`` loads with extra buffer types off (mode "safe").

    llama-cpp-python 0.3.x has no constructor argument for ``use_extra_bufts``; its constructor starts from
    ``llama_model_default_params()``, so that function is wrapped while the model loads.
    """
    import contextlib

    @contextlib.contextmanager
    def patch():
        if mode != "safe":
            yield
            return
        import llama_cpp.llama as llama_module

        low = llama_module.llama_cpp
        original = low.llama_model_default_params

        def without_extra_bufts():
            params = original()
            params.use_extra_bufts = False
            return params

        low.llama_model_default_params = without_extra_bufts
        try:
            yield
        finally:
            low.llama_model_default_params = original

    return patch()


def _child(path: str, mode: str) -> int:
    from llama_cpp import Llama

    with model_params_patch(mode):
        llm = Llama(model_path=path, n_ctx=256, n_threads=1, n_batch=64, verbose=False)
    out = llm.create_completion(_PROBE_PROMPT, max_tokens=_PROBE_TOKENS, temperature=0.0)
    print(json.dumps({"text": out["choices"][0]["text"], "tokens": out["usage"]["completion_tokens"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1], sys.argv[2]))
