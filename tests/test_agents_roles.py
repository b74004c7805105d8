"""Agent: calls a backend with the role's prompt and records each answer as an AgentCall."""

import json

import pytest

from corecode.agents import Agent, TaskView
from corecode.backends.base import SamplingConfig
from corecode.backends.scripted import ScriptedBackend
from corecode.errors import BackendError, BackendTimeoutError
from corecode.types import IOMode

VIEW = TaskView(id="p/7", source="test", statement="Read n, print 2n.", io_mode=IOMode.STDIO)


def test_agent_records_each_sample():
    backend = ScriptedBackend(["one two", "three"], name="m1")
    calls = Agent("planner", backend, SamplingConfig(temperature=1.0)).call(VIEW, n=2)
    assert [c.output for c in calls] == ["one two", "three"]
    assert all(c.role == "planner" and c.model == "m1" for c in calls)
    assert calls[0].completion_tokens == 2 and calls[0].prompt_tokens > 0
    assert calls[0].messages[0]["role"] == "system" and "Read n" in calls[0].messages[1]["content"]
    assert backend.calls[0] == list(calls[0].messages)
    json.dumps([c.to_dict() for c in calls])


def test_call_batch_keeps_order():
    backend = ScriptedBackend(lambda conv: "plan for " + conv[1]["content"].split("Plan")[1][:12])
    requests = [(VIEW, {"plan": "A"}), (VIEW, {"plan": "B"})]
    groups = Agent("coder_with_plan", backend).call_batch(requests)
    assert [len(g) for g in groups] == [1, 1]
    assert "A" in groups[0][0].messages[1]["content"] and "B" in groups[1][0].messages[1]["content"]


def test_backend_error_propagates_with_role_model_and_problem():
    backend = ScriptedBackend([BackendTimeoutError("no answer in 30 s")], name="slow-model")
    with pytest.raises(BackendTimeoutError) as info:
        Agent("coder", backend).call(VIEW)
    message = str(info.value)
    assert "coder agent" in message and "slow-model" in message and "p/7" in message and "30 s" in message
    assert isinstance(info.value, BackendError) and isinstance(info.value.__cause__, BackendTimeoutError)
