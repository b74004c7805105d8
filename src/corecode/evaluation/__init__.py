"""Evaluation: generate samples with a pipeline, score them in the sandbox, summarize, compare runs.

``corecode eval`` and ``corecode report`` are thin layers over :func:`run_eval` and
:func:`corecode.evaluation.report.build_report`.
"""

from corecode.evaluation.config import EvalConfig
from corecode.evaluation.runner import run_eval
from corecode.evaluation.summary import load_summary

__all__ = ["EvalConfig", "run_eval", "load_summary"]
