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

from flakegym_client import log_notes, pieces


def to_trl(records, segments="split", notes=None, **caps):
    out = []
    for p in pieces(records, segments, notes, **caps):
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


def completions_for(records, n, pad_token_id, notes=None, **caps):
    """Exactly `n` rows for a group of `n` generations, in record index order: each trajectory's
    final segment, or — for a trajectory without a sample (infra error, a first-call policy error,
    one the server could not give) — a row that trains nothing (env_mask 0) with reward None, so
    TRL still gets one completion per prompt and, its reward being None, leaves it out of the
    group's baseline (TRL: unscorable, advantage 0).

    TRL's rollout_func returns one completion per prompt, and a segment after a truncation has a
    prompt of its own, so TRL cannot train a truncated trajectory's earlier segments: they are the
    one thing left out (the least wrong form: the last segment carries the whole reward, as a
    one-segment trajectory's would); each is a note (`notes`, when a list) and a logged warning."""
    notes = [] if notes is None else notes
    by_index = {r["index"]: r for r in records}
    rows = []
    for i in range(n):
        credit = []
        got = to_trl([by_index[i]], "final", credit, **caps) if i in by_index else []
        for note in credit:
            if note["reason"] in ("no_reward", "no_sample"):
                note = dict(note, handling="placeholder", detail=note["detail"] + "; TRL: env_mask 0, reward None "
                            "(left out of the group's baseline, advantage 0)")
            notes.append(note)
        if got:
            row = got[-1]
            if row["logprobs"] is None:
                row["logprobs"] = [None] * len(row["completion_ids"])
            rows.append(row)
        else:
            if i not in by_index:
                notes.append({"trajectory_id": None, "task_id": None, "reason": "no_reward", "sampled_tokens": 0,
                              "handling": "placeholder", "detail": "generation %d: the server gave no record; TRL: "
                              "env_mask 0, reward None" % i})
            rows.append({"prompt_ids": [pad_token_id], "completion_ids": [pad_token_id], "logprobs": [0.0],
                         "env_mask": [0], "reward": None, "trajectory_id": None})
    log_notes(notes, "flakegym_trl.completions_for")
    return rows


def as_rollout_func_output(rows):
    """The dict of lists TRL's rollout_func returns (extra columns ride along as reward kwargs)."""
    keys = ("prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "trajectory_id")
    return {k: [r.get(k) for r in rows] for k in keys}
