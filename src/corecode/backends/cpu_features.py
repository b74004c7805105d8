"""Which x86 instruction sets this machine actually executes, and the llama.cpp build flags that follow.

A CPU's feature list (``/proc/cpuinfo``) is not proof that an instruction runs: on some virtual machines
CPUID lists AMX while the tile instructions fault, and a ``-march=native`` build of llama.cpp then dies with
SIGILL at the first matrix multiply. So every instruction set that a build would use is checked by compiling
a few lines that use it and running them in a child process; only the sets that run make it into the flags.
AMX is never enabled (it needs an extra permission from the kernel and helps only some quantisations).

Standard library only, and runnable as a script before corecode is installed (``scripts/setup.sh`` does)::

    python3 src/corecode/backends/cpu_features.py --cmake-args   # the CMAKE_ARGS for a portable build
    python3 src/corecode/backends/cpu_features.py                # a JSON report of what was probed
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

# Each entry: ggml CMake option -> (compiler flags, C body that uses the instruction set, cpuinfo flags that
# must be listed). The body reads volatile data so that the compiler cannot fold it away.
_PROBES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "GGML_SSE42": ("-msse4.2", "return (int)_mm_crc32_u32(v, 7) == 0x1234;", ("sse4_2",)),
    "GGML_AVX": (
        "-mavx",
        "__m256 a = _mm256_set1_ps((float)v); a = _mm256_add_ps(a, a);"
        " float o[8]; _mm256_storeu_ps(o, a); return o[0] == 3.0f;",
        ("avx",),
    ),
    "GGML_AVX2": (
        "-mavx2",
        "__m256i a = _mm256_set1_epi32((int)v); a = _mm256_add_epi32(a, a);"
        " return _mm256_extract_epi32(a, 0) == 3;",
        ("avx2",),
    ),
    "GGML_FMA": (
        "-mfma",
        "__m256 a = _mm256_set1_ps((float)v); a = _mm256_fmadd_ps(a, a, a);"
        " float o[8]; _mm256_storeu_ps(o, a); return o[0] == 3.0f;",
        ("fma",),
    ),
    "GGML_F16C": (
        "-mf16c",
        "__m128i h = _mm_set1_epi16((short)v); __m256 f = _mm256_cvtph_ps(h);"
        " float o[8]; _mm256_storeu_ps(o, f); return o[0] == 3.0f;",
        ("f16c",),
    ),
    "GGML_BMI2": ("-mbmi2", "return (int)_pdep_u32(v, 0xff) == 3;", ("bmi2",)),
    "GGML_AVX512": (
        "-mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512cd",
        "__m512 a = _mm512_set1_ps((float)v); a = _mm512_add_ps(a, a);"
        " return _mm512_reduce_add_ps(a) == 3.0f;",
        ("avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"),
    ),
    "GGML_AVX512_VBMI": (
        "-mavx512f -mavx512vbmi",
        "__m512i a = _mm512_set1_epi8((char)v); a = _mm512_permutexvar_epi8(a, a);"
        " return _mm512_reduce_add_epi32(a) == 3;",
        ("avx512vbmi",),
    ),
    "GGML_AVX512_VNNI": (
        "-mavx512f -mavx512vnni",
        "__m512i a = _mm512_set1_epi32((int)v); a = _mm512_dpbusd_epi32(a, a, a);"
        " return _mm512_reduce_add_epi32(a) == 3;",
        ("avx512_vnni",),
    ),
    "GGML_AVX512_BF16": (
        "-mavx512f -mavx512bf16",
        "__m512 a = _mm512_set1_ps((float)v); __m512bh b = _mm512_cvtne2ps_pbh(a, a);"
        " __m512 c = _mm512_dpbf16_ps(a, b, b); return _mm512_reduce_add_ps(c) == 3.0f;",
        ("avx512_bf16",),
    ),
    "GGML_AVX_VNNI": (
        "-mavxvnni",
        "__m256i a = _mm256_set1_epi32((int)v); a = _mm256_dpbusd_avx_epi32(a, a, a);"
        " return _mm256_extract_epi32(a, 0) == 3;",
        ("avx_vnni",),
    ),
}
# Options a portable build always turns off, whatever the CPU lists.
_ALWAYS_OFF = ("GGML_NATIVE", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")
_X86 = ("x86_64", "amd64", "i686", "i386")


@dataclass(frozen=True)
class FeatureProbe:
    option: str
    listed: bool  # named in /proc/cpuinfo
    runs: bool | None  # the probe program ran (None: not probed: not listed, or no compiler)
    detail: str = ""


def cpuinfo_flags() -> set[str]:
    """The CPU flags the kernel reports (empty off Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _compiler() -> str | None:
    for name in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    return None


def _probe_one(cc: str, option: str, workdir: str) -> tuple[bool, str]:
    cflags, body, _ = _PROBES[option]
    src = os.path.join(workdir, f"{option}.c")
    exe = os.path.join(workdir, option)
    with open(src, "w", encoding="utf-8") as fh:
        fh.write(
            "#include <immintrin.h>\n#include <stdio.h>\n"
            "volatile unsigned v = 1;\n"
            f"static int probe(void) {{ {body} }}\n"
            'int main(void) { printf("%d\\n", probe()); return 0; }\n'
        )
    comp = subprocess.run(
        [cc, "-O1", *cflags.split(), src, "-o", exe], capture_output=True, text=True, timeout=60
    )
    if comp.returncode != 0:
        return False, "the compiler cannot build it: " + comp.stderr.strip().splitlines()[-1][:200]
    run = subprocess.run([exe], capture_output=True, text=True, timeout=30)
    if run.returncode < 0:
        return False, f"killed by signal {-run.returncode} (the CPU lists it but does not run it)"
    if run.returncode != 0:
        return False, f"exit status {run.returncode}"
    return True, "runs"


def probe_features() -> list[FeatureProbe]:
    """Probe every instruction set a llama.cpp CPU build may use (x86 only; [] elsewhere)."""
    if platform.machine().lower() not in _X86:
        return []
    flags = cpuinfo_flags()
    cc = _compiler()
    out: list[FeatureProbe] = []
    with tempfile.TemporaryDirectory(prefix="corecode-cpu-") as tmp:
        for option, (_, _, needed) in _PROBES.items():
            listed = all(f in flags for f in needed)
            if not listed:
                out.append(FeatureProbe(option, False, None, "not listed by the CPU"))
            elif cc is None:
                out.append(FeatureProbe(option, True, None, "no C compiler to probe with"))
            else:
                try:
                    ok, detail = _probe_one(cc, option, tmp)
                except (OSError, subprocess.TimeoutExpired) as exc:
                    ok, detail = False, f"probe failed: {exc}"
                out.append(FeatureProbe(option, True, ok, detail))
    return out


def portable_cmake_args(probes: list[FeatureProbe] | None = None) -> str:
    """CMAKE_ARGS for a llama.cpp build that uses exactly the instruction sets that run here.

    An instruction set is on when the CPU lists it and the probe program ran (or, without a compiler to
    probe with, when it is listed); AMX and ``-march=native`` are always off. Off x86 only GGML_NATIVE=OFF.
    """
    probes = probe_features() if probes is None else probes
    args = [f"-D{opt}=OFF" for opt in _ALWAYS_OFF]
    for p in probes:
        on = p.listed and p.runs is not False
        args.append(f"-D{p.option}={'ON' if on else 'OFF'}")
    return " ".join(args)


def build_key(cmake_args: str, package_version: str) -> str:
    """A short key naming one build variant (package version + flags), for a wheel directory."""
    digest = hashlib.sha256(f"{package_version}|{cmake_args}".encode()).hexdigest()[:12]
    return f"{package_version}-{digest}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    probes = probe_features()
    if "--cmake-args" in argv:
        print(portable_cmake_args(probes))
        return 0
    report = {
        "machine": platform.machine(),
        "cmake_args": portable_cmake_args(probes),
        "probes": [p.__dict__ for p in probes],
        "amx_listed": sorted(f for f in cpuinfo_flags() if f.startswith("amx")),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
