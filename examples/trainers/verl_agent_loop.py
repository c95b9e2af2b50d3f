"""verl: an AgentLoopOutput per served trajectory (docs/trainers.md, verl).

`flakegym_output` is what an agent loop's `run` returns for one sample: it asks `flakegym serve`
for a group of one and builds verl's own `AgentLoopOutput` and `AgentLoopMetrics` from it. Wire it
into an `AgentLoopBase` subclass registered with verl's agent-loop registry; the flakegym URL and
the policy's OpenAI-compatible endpoint come from your configuration."""

from flakegym_client import FlakegymClient
from flakegym_verl import to_verl
from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput


def flakegym_output(client, request_id, task, inference, temperature=1.0):
    records, _ = client.group({"request_id": request_id, "task": task, "group_size": 1,
                               "inference": inference, "sampling": {"temperature": temperature}})
    out = to_verl(records)[0]
    return AgentLoopOutput(
        prompt_ids=out["prompt_ids"], response_ids=out["response_ids"], response_mask=out["response_mask"],
        response_logprobs=out["response_logprobs"], reward_score=out["reward_score"],
        num_turns=out["num_turns"], metrics=AgentLoopMetrics(**out["metrics"]),
        extra_fields=out["extra_fields"])


def make_client(url):
    return FlakegymClient(url)
