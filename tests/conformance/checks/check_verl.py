"""verl 0.9.1: the exported rows through verl's own agent-loop post-processing (the worker's
`_agent_loop_postprocess`, which pads each output to `rollout.prompt_length`/`response_length`, and
`_postprocess`, which stacks them into the batch with its `rm_scores`) and its GRPO advantage
(`compute_grpo_outcome_advantage`, grouped by uid = the task). Asserted: every sampled token of
the group is trained once (split), what `final` leaves out is reported, equal rewards get equal
advantages, a row longer than verl's lengths fails its post-processing unless cut by the adapter's
length policy (as verl's own loops cut), and the example agent loop's output is verl's type."""

import asyncio
import types

from conformance_common import (INFERENCE, SERVE_URL, TASKS, TOKENIZER, assert_credit, assert_members_reported, jsonl,
                                notes,
                                reported_untrained, run, sampled_total, served)


def worker(prompt_length, response_length):
    """verl's AgentLoopWorker with only what its post-processing reads (no Ray, no servers)."""
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    w = object.__new__(AgentLoopWorker)
    w.tokenizer = AutoTokenizer.from_pretrained(TOKENIZER)
    w.processor = None
    w.rollout_config = types.SimpleNamespace(prompt_length=prompt_length, response_length=response_length)
    w.reward_loop_worker_handles = None  # the outputs carry their reward (reward_score)
    w.mm_processor_kwargs = None
    w.distillation_enabled = False
    w.teacher_server_manager = None
    w.teacher_key = None
    return w


def postprocess(w, rows):
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

    async def one(row):
        out = AgentLoopOutput(**{**row, "metrics": AgentLoopMetrics(**row["metrics"])})
        return await w._agent_loop_postprocess(out, False, raw_prompt=[])

    internal = [asyncio.run(one(r)) for r in rows]
    return w._postprocess(internal)


def advantages(batch, rows):
    import numpy as np
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    index = np.array([r["extra_fields"]["task_id"] for r in rows], dtype=object)
    adv, _ = compute_grpo_outcome_advantage(batch.batch["rm_scores"], batch.batch["response_mask"], index)
    mask = batch.batch["response_mask"].bool()
    by = {}
    for i, r in enumerate(rows):
        by.setdefault(r["extra_fields"]["index"], []).append(float(adv[i][mask[i]].mean()))
    return by


def check():
    from flakegym_verl import to_verl
    from verl.experimental.agent_loop.agent_loop import AgentLoopOutput
    from verl_agent_loop import flakegym_output, make_client

    records = served()
    rows = jsonl("verl-split.jsonl")
    longest_p = max(len(r["prompt_ids"]) for r in rows)
    longest_r = max(len(r["response_ids"]) for r in rows)
    batch = postprocess(worker(longest_p, longest_r), rows)
    trained = int(batch.batch["response_mask"].sum())
    assert trained == sampled_total(records), (trained, sampled_total(records))
    one = assert_credit(advantages(batch, rows), records, "verl GRPO (split)")
    assert_members_reported(notes("verl-split"), records, "verl split")
    assert_members_reported(notes("verl-final"), records, "verl final")

    final = jsonl("verl-final.jsonl")
    fb = postprocess(worker(longest_p, longest_r), final)
    left = reported_untrained(notes("verl-final"))
    assert int(fb.batch["response_mask"].sum()) + left == sampled_total(records), "final: trained + reported"

    # verl's lengths below the longest row: the uncut rows fail verl's post-processing, the cut ones pass
    p_len, r_len = max(8, longest_p - 7), max(4, longest_r // 2)
    too_long = None
    try:
        postprocess(worker(p_len, r_len), rows)
    except Exception as err:  # noqa: BLE001 - verl's own failure on a too-long row is the point
        too_long = type(err).__name__
    assert too_long, "verl post-processed rows longer than its lengths: the length check proves nothing"
    cut_notes = []
    cut = to_verl(records, "split", cut_notes, max_prompt_tokens=p_len, max_response_tokens=r_len)
    cb = postprocess(worker(p_len, r_len), cut)
    assert int(cb.batch["response_mask"].sum()) + reported_untrained(cut_notes) == sampled_total(records)

    live = flakegym_output(make_client(SERVE_URL), "verl-live", TASKS["whole"], INFERENCE)
    assert isinstance(live, AgentLoopOutput) and live.metrics.generate_sequences >= 0
    return ("split: %d rows, %d of %d sampled tokens trained, GRPO advantages %s; final: %d trained + %d reported; "
            "lengths %d/%d: uncut rows fail verl (%s), cut rows pass (%d sampled tokens cut, reported)") % (
        len(rows), trained, sampled_total(records), {k: round(v, 3) for k, v in one.items()},
        int(fb.batch["response_mask"].sum()), left, p_len, r_len, too_long, reported_untrained(cut_notes))


if __name__ == "__main__":
    run("verl", "verl", check)
