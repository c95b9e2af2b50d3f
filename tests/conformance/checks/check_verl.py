"""verl 0.9.1: the exported records and the example's output as verl's own AgentLoopOutput, turned
into tensors by its as_dict()."""

from conformance_common import INFERENCE, SERVE_URL, TASKS, jsonl, run


def check():
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput
    from verl_agent_loop import flakegym_output, make_client

    rows = jsonl("verl-final.jsonl") + jsonl("verl-split.jsonl")
    for row in rows:
        out = AgentLoopOutput(**{**row, "metrics": AgentLoopMetrics(**row["metrics"])})
        d = out.as_dict()
        assert d["responses"].shape[0] == len(row["response_ids"]) == d["response_mask"].shape[0]
        assert out.num_turns == row["num_turns"] >= 2
    live = flakegym_output(make_client(SERVE_URL), "verl-live", TASKS["whole"], INFERENCE)
    assert isinstance(live, AgentLoopOutput) and live.metrics.generate_sequences >= 0
    return "%d exported outputs and the example's validate and tensorize" % len(rows)


run("verl", "verl", check)
