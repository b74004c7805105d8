"""corecode: collaborative reinforcement learning for code generation (CoRe-Code and beyond).

The public API is re-exported here; heavy parts (torch, trl, llama.cpp, vLLM) are imported only by the
modules that need them.
"""

from corecode.errors import (
    BackendError,
    ConfigError,
    CorecodeError,
    DatasetError,
    MissingDependencyError,
    SandboxError,
    UnknownNameError,
)
from corecode.types import (
    AssertTest,
    CallTest,
    Checker,
    ExecutionResult,
    IOMode,
    Problem,
    Status,
    StdioTest,
    TestResult,
)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "AssertTest",
    "CallTest",
    "Checker",
    "ExecutionResult",
    "IOMode",
    "Problem",
    "Status",
    "StdioTest",
    "TestResult",
    "BackendError",
    "ConfigError",
    "CorecodeError",
    "DatasetError",
    "MissingDependencyError",
    "SandboxError",
    "UnknownNameError",
]
