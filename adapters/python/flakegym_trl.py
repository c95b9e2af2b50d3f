"""TRL: rows of a GRPOTrainer `rollout_func` result (prompt_ids, completion_ids, logprobs, env_mask:
1 = sampled by the model, 0 = tool output inside the completion). Field names read in TRL's source
(names only): huggingface/trl commit f2cd57710ae345ea6428ae95363267fcf38a3dc8,
trl/trainer/grpo_trainer.py (rollout_func must return prompt_ids, completion_ids and logprobs;
env_mask becomes its tool mask; every other key is passed to the reward functions). `rollout_func`
returns the columns: `as_rollout_func_output(to_trl(records))`."""

from flakegym_client import pieces


def to_trl(records, segments="final"):
    out = []
    for p in pieces(records, segments):
        row = {
            "prompt_ids": p["prompt"],
            "completion_ids": p["ids"],
            "logprobs": p["logprobs"],
            "env_mask": p["mask"],
            "reward": p["reward"],
        }
        row.update(p["meta"])
        out.append(row)
    return out


def as_rollout_func_output(rows):
    """The dict of lists TRL's rollout_func returns (extra columns ride along as reward kwargs)."""
    keys = ("prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "trajectory_id")
    return {k: [r[k] for r in rows] for k in keys}
