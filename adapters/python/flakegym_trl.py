"""TRL: rows of a GRPOTrainer `rollout_func` result (prompt_ids, completion_ids, logprobs, env_mask:
1 = sampled by the model, 0 = tool output inside the completion).

Checked against trl 1.16.0 (trl/trainer/grpo_trainer.py, run by `npm run conformance`): rollout_func
receives the prompts of the batch *already repeated* num_generations times (its RepeatSampler puts
the copies of a prompt next to each other) and must return one completion per prompt it was given;
it returns prompt_ids, completion_ids and logprobs; env_mask becomes its tool mask; every other key
is passed to the reward functions.

    def rollout_func(prompts, trainer):
        rows = []
        for task, n in runs_of(prompts):        # [t1, t1, t1, t1, t2, …] → (t1, 4), (t2, …)
            records, _ = client.group({...group_size: n...})
            rows += completions_for(records, n, trainer.processing_class.pad_token_id)
        return as_rollout_func_output(rows)
"""

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


def runs_of(prompts):
    """Consecutive equal prompts as (prompt, count): the groups TRL's sampler made."""
    out = []
    for p in prompts:
        if out and out[-1][0] == p:
            out[-1] = (p, out[-1][1] + 1)
        else:
            out.append((p, 1))
    return out


def completions_for(records, n, pad_token_id):
    """Exactly `n` rows for a group of `n` generations, in record index order: each trajectory's
    final segment, or — for a trajectory the server could not give — a row that trains nothing
    (env_mask 0) with reward None, so TRL still gets one completion per prompt and, its reward
    being None, leaves it out of the group's baseline (TRL: unscorable, advantage 0)."""
    by_index = {r["index"]: r for r in records}
    rows = []
    for i in range(n):
        got = to_trl([by_index[i]]) if i in by_index else []
        if got:
            row = got[-1]
            if row["logprobs"] is None:
                row["logprobs"] = [None] * len(row["completion_ids"])
            rows.append(row)
        else:
            rows.append({"prompt_ids": [pad_token_id], "completion_ids": [pad_token_id], "logprobs": [0.0],
                         "env_mask": [0], "reward": None, "trajectory_id": None})
    return rows


def as_rollout_func_output(rows):
    """The dict of lists TRL's rollout_func returns (extra columns ride along as reward kwargs)."""
    keys = ("prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "trajectory_id")
    return {k: [r.get(k) for r in rows] for k in keys}
