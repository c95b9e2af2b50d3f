"""verl: an AgentLoopOutput per served trajectory (docs/reference/trainers.md, verl).

`flakegym_output` is what an agent loop's `run` returns for one sample: it asks `flakegym serve`
for a group of one and builds verl's own `AgentLoopOutput` and `AgentLoopMetrics` from it. Wire it
into an `AgentLoopBase` subclass registered with verl's agent-loop registry; the flakegym URL and
the policy's OpenAI-compatible endpoint come from your configuration.

verl's agent loop returns one output per sample, and a segment after a truncation has a prompt of
its own: here a truncated trajectory trains its last segment (with the whole reward) and the earlier
segments' sampled tokens are logged as not trained. `flakegym export --format verl` (segments
"split") has every segment as a row. `max_prompt_tokens`/`max_response_tokens` are verl's
`rollout.prompt_length`/`response_length`, cut as verl's own loops cut."""

from flakegym_client import FlakegymClient, log_notes
from flakegym_verl import to_verl
from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput


def flakegym_output(client, request_id, task, inference, temperature=1.0, max_prompt_tokens=None,
                    max_response_tokens=None):
    records, _ = client.group({"request_id": request_id, "task": task, "group_size": 1,
                               "inference": inference, "sampling": {"temperature": temperature}})
    notes = []
    rows = to_verl(records, "final", notes, max_prompt_tokens=max_prompt_tokens,
                   max_response_tokens=max_response_tokens)
    log_notes(notes, "verl_agent_loop")
    out = rows[0] if rows else unsampled_output(records, notes)
    return AgentLoopOutput(
        prompt_ids=out["prompt_ids"], response_ids=out["response_ids"], response_mask=out["response_mask"],
        response_logprobs=out["response_logprobs"], reward_score=out["reward_score"],
        num_turns=out["num_turns"], metrics=AgentLoopMetrics(**out["metrics"]),
        extra_fields=out["extra_fields"])


def unsampled_output(records, notes, pad_token_id=0):
    """A sample the policy never sampled (infra error, a first-call policy error): one untrained
    token (response_mask 0) with reward 0. verl's GRPO has no way to leave a row out of its group's
    baseline, and one agent loop cannot see its group to impute the mean, so this row's 0 is in it
    (the export, `flakegym export --format verl`, leaves such members out instead); logged."""
    why = "; ".join(n["detail"] for n in notes) or "the server gave no record"
    return {"prompt_ids": [pad_token_id], "response_ids": [pad_token_id], "response_mask": [0],
            "response_logprobs": [0.0], "reward_score": 0.0, "num_turns": 1,
            "metrics": {"generate_sequences": 0.0, "tool_calls": 0.0},
            "extra_fields": {"flakegym_unsampled": why,
                             "trajectory_id": records[0]["trajectory_id"] if records else None}}


def make_client(url):
    return FlakegymClient(url)
