"""Parsers of the auxiliary roles: confidence, retrieval, test writer."""

import pytest

from corecode.parsing import parse_asserts, parse_confidence, parse_retrieval


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Looks right.\nConfidence: 85", 85),
        ("**Confidence:** 70/100", 70),
        ("Confidence score: 0.9", 90),
        ("confidence = 100%", 100),
        ("Confidence: 250", 100),
        ("Confidence: 10\n...on reflection...\nConfidence: 40", 40),
        ("The plan is fine.", None),
        ("", None),
    ],
)
def test_parse_confidence(text, expected):
    assert parse_confidence(text) == expected


RETRIEVAL = """Here are some problems.

## Problem 1
Description: Sum a list.
Plan: loop and add.
Code:
```python
def s(xs):
    return sum(xs)
```

## Problem 2
Description: Max of a list.
Plan: track the largest.

## Problem 3
Description: Reverse a string.
Plan: slice.

## Algorithm
Simple iteration: visit each element once.
"""


def test_parse_retrieval_respects_k_and_reads_fields():
    r = parse_retrieval(RETRIEVAL, k=2)
    assert len(r.exemplars) == 2
    assert r.exemplars[0].description == "Sum a list."
    assert r.exemplars[0].plan == "loop and add."
    assert "return sum(xs)" in r.exemplars[0].code
    assert r.exemplars[1].code == ""
    assert r.algorithm.startswith("Simple iteration")
    assert len(parse_retrieval(RETRIEVAL).exemplars) == 3


def test_parse_retrieval_without_structure():
    r = parse_retrieval("I don't remember any.")
    assert r.exemplars == () and r.algorithm == ""


def test_parse_asserts():
    text = "Tests:\n```python\nassert f(1) == 2\nassert f(0) == 1\nassert f(\n```\nprint(1)"
    assert parse_asserts(text) == ("assert f(1) == 2", "assert f(0) == 1")
