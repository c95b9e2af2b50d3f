"""verl: served trajectories as AgentLoopOutput-shaped dicts for an AgentLoop.

Field names read in verl's source (names only): volcengine/verl commit
b178a3cd56f58b2d502255daba591e92833930a7, verl/experimental/agent_loop/agent_loop.py,
`AgentLoopOutput` (prompt_ids, response_ids, response_mask, response_logprobs, reward_score,
num_turns, metrics, extra_fields) and `AgentLoopMetrics` (generate_sequences, tool_calls).
verl trains one sequence per output: `segments="final"` (default) keeps a trajectory's last
segment, `"split"` one output per segment with the reward shared (the trajectory id in
`extra_fields`)."""

from flakegym_client import pieces


def to_verl(records, segments="final"):
    return [{
        "prompt_ids": p["prompt"],
        "response_ids": p["ids"],
        "response_mask": p["mask"],
        "response_logprobs": p["logprobs"],
        "reward_score": p["reward"],
        "num_turns": p["record"]["turns"],
        "metrics": {"generate_sequences": p["record"]["timings_ms"]["agent"] / 1000, "tool_calls": 0},
        "extra_fields": p["meta"],
    } for p in pieces(records, segments)]
