"""verl: served trajectories as AgentLoopOutput-shaped dicts for an AgentLoop.

Checked against verl 0.9.1 (verl/experimental/agent_loop/agent_loop.py, read and run by
`npm run conformance`): `AgentLoopOutput` (prompt_ids, response_ids, response_mask,
response_logprobs, reward_score, num_turns, metrics, extra_fields) and `AgentLoopMetrics`, whose
`generate_sequences` and `tool_calls` are seconds spent generating and in tools. `num_turns` counts
user, assistant and tool turns as verl's ToolAgentLoop does (user_turns + assistant_turns + 1):
twice the model calls of the piece. verl trains one sequence per output: `segments="final"`
(default) keeps a trajectory's last segment, `"split"` one output per segment with the reward
shared (the trajectory id in `extra_fields`)."""

from flakegym_client import piece_calls, pieces


def to_verl(records, segments="split", notes=None, **caps):
    out = []
    for p in pieces(records, segments, notes, **caps):
        t = p["record"]["timings_ms"]
        model = t.get("model", t["agent"])
        out.append({
            "prompt_ids": p["prompt"],
            "response_ids": p["ids"],
            "response_mask": p["mask"],
            "response_logprobs": p["logprobs"],
            "reward_score": p["reward"],
            "num_turns": max(1, 2 * len(piece_calls(p["segment"]))),
            "metrics": {"generate_sequences": model / 1000, "tool_calls": max(0, t["agent"] - model) / 1000},
            "extra_fields": p["meta"],
        })
    return out
