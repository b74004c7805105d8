#!/usr/bin/env bash
# corecode setup: install corecode with every extra, with a llama.cpp built for what this machine runs.
#
#   bash scripts/setup.sh [extra pip arguments]
#
# Why not plain `pip install -e ".[all]"`: pip builds llama-cpp-python from source with -march=native, which
# compiles in every instruction set the CPU *lists*. On some virtual machines CPUID lists AMX but the tile
# instructions fault, and the first generation dies with SIGILL. So:
#   1. src/corecode/backends/cpu_features.py compiles and runs a few lines per instruction set (SSE4.2,
#      AVX, AVX2, FMA, F16C, BMI2, AVX-512 and its extensions, AVX-VNNI) and turns on exactly those that run;
#      AMX and -march=native stay off;
#   2. the llama-cpp-python wheel is built once per flag set into ~/.cache/corecode/wheels/<version>-<hash>
#      with pip's own wheel cache off (a wheel pip cached from an earlier -march=native build would be reused
#      whatever the flags), and installed from there (a later setup with the same flags reuses it);
#   3. corecode and its extras are installed with the constraints file (CPU torch).
# To build something else set CORECODE_LLAMA_CMAKE_ARGS, e.g. "-DGGML_NATIVE=ON" on a machine you trust
# (docs/backends.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LLAMA_VERSION=$(sed -n 's/^llama-cpp-python==//p' constraints.txt)
ARGS=${CORECODE_LLAMA_CMAKE_ARGS:-$("$PY" src/corecode/backends/cpu_features.py --cmake-args)}
KEY=$("$PY" -c 'import sys; sys.path.insert(0, "src/corecode/backends"); import cpu_features as c; print(c.build_key(sys.argv[1], sys.argv[2]))' "$ARGS" "$LLAMA_VERSION")
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/corecode/wheels/$KEY"
echo "corecode setup: llama-cpp-python $LLAMA_VERSION with CMAKE_ARGS=\"$ARGS\""
if ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "corecode setup: building llama.cpp (several minutes on 2 cores) into $WHEELS"
    rm -rf "$WHEELS.tmp"
    CMAKE_ARGS="$ARGS" "$PY" -m pip wheel --no-cache-dir --no-deps "llama-cpp-python==$LLAMA_VERSION" -w "$WHEELS.tmp" "$@"
    mkdir -p "$(dirname "$WHEELS")"
    rm -rf "$WHEELS"
    mv "$WHEELS.tmp" "$WHEELS"
else
    echo "corecode setup: reusing $(ls "$WHEELS"/llama_cpp_python-*.whl)"
fi
# replaces any llama-cpp-python already installed (a -march=native build, say) with this one
"$PY" -m pip install --no-deps --force-reinstall "$WHEELS"/llama_cpp_python-*.whl "$@"
printf '%s\n' "$ARGS" > "$WHEELS/CMAKE_ARGS"
"$PY" -m pip install -c constraints.txt --find-links "$WHEELS" -e ".[all]" "$@"
