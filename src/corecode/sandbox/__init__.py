"""Run untrusted, model-written programs against tests: fast, measured, and hard to fool.

Public API::

    from corecode.sandbox import Sandbox, SandboxConfig, program_from_completion

    with Sandbox(SandboxConfig(workers=4)) as sb:
        result = sb.run(program, problem)            # -> corecode.types.ExecutionResult
        results = sb.run_batch([(program, problem), ...])
        result = await sb.arun(program, problem)
        result = sb.execute(program, tests, setup_code="", time_limit_s=2.0)   # explicit tests
        results = run_measured(sb, [(program, problem), ...])   # + whole-program CPU/memory of passing ones

See ``docs/sandbox.md`` for what it protects against, and what it does not.
"""

from corecode.sandbox.config import SandboxConfig
from corecode.sandbox.measure import (
    MeasureConfig,
    attach_measurements,
    measure,
    measure_batch,
    normalized_source,
    run_measured,
)
from corecode.sandbox.outputs import outputs_match
from corecode.sandbox.pool import Sandbox, program_from_completion
from corecode.sandbox.refcache import ReferenceCache

__all__ = ["Sandbox", "SandboxConfig", "program_from_completion", "outputs_match", "MeasureConfig", "measure",
           "measure_batch", "run_measured", "attach_measurements", "normalized_source", "ReferenceCache"]
