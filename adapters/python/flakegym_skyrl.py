"""SkyRL: served trajectories as GeneratorOutput batches.

Checked against skyrl 0.4.0 (skyrl/train/generators/base.py `GeneratorOutput`, `TrajectoryID`;
skyrl/train/utils/trainer_utils.py `validate_generator_output`; skyrl/train/trainer.py, which reads
`rollout_metrics` unconditionally), run by `npm run conformance`.

- `to_skyrl(records)`: one batch per task, as `flakegym export --format skyrl` writes it:
  `trajectory_ids` as TrajectoryID fields (`TrajectoryID(**d)`), `stop_reasons` the finish reason
  of each row's last model call ("length" when the length limit cut it, else "stop": SkyRL's
  overlong filtering reads them), `rollout_metrics` the group's own metrics.
- `generator_output(groups, trajectory_ids)`: what a `GeneratorInterface.generate` returns for its
  input batch, each input's own `TrajectoryID` objects.
  - `segments="split"` (default; SkyRL's `generator.step_wise_trajectories=true`): every segment a
    row carrying the trajectory's whole reward, its last with `is_last_step`; SkyRL computes the
    advantage from each trajectory's last step and broadcasts it to its earlier steps, so a
    truncated reward-1 trajectory gets the advantage of a one-segment one. A member without a
    sample (infra error, a first-call policy error) has no row: the baseline counts the sampled
    trajectories only (a group with none keeps one untrained row, reward 0).
  - `segments="final"` (plain training, which asserts one response per prompt): each trajectory's
    last segment (earlier ones are logged as not trained); a member without a sample is a row that
    trains nothing (loss mask 0) whose reward is the mean of the sampled members, so the GRPO
    baseline's mean is theirs (its std is x sqrt((m-1)/(n-1)) for m sampled of n rows: a common scale).
  Everything not trained as it is goes to `notes` (when a list) and the `flakegym` logger."""

from flakegym_client import log_notes, member_problem, piece_calls, pieces


def _stop_reason(p):
    last = piece_calls(p["segment"])[-1:]
    return "length" if last and last[0]["finish_reason"] == "length" else "stop"


def _metrics(records, rows):
    rewards = [r["reward"] for r in records if r["reward"] is not None]
    return {
        "flakegym/trajectories": len(records),
        "flakegym/rows": rows,
        "flakegym/mean_reward": sum(rewards) / len(rewards) if rewards else 0,
    }


def _rows(members, ps, segments, pad_token_id, notes):
    """The group's rows in member order, as skyrl-batch.ts `skyrlRows` decides: plain training
    ("final") one row per member, a member without a sample a placeholder (loss mask 0) whose reward
    is the mean of the sampled members (the baseline's mean stays theirs); step-wise ("split") such a
    member is left out (advantages come from sampled trajectories' last steps), unless no member
    sampled anything (one placeholder, reward 0, keeps the prompt in the batch)."""
    by_id = {}
    for p in ps:
        by_id.setdefault(p["record"]["trajectory_id"], []).append(p)
    sampled = [m for m in members if m["trajectory_id"] in by_id]
    mean = sum(m["reward"] for m in sampled) / len(sampled) if sampled else 0.0
    step_wise = segments == "split"
    rows = []
    for m in sorted(members, key=lambda r: r["index"]):
        own = by_id.get(m["trajectory_id"])
        if own:
            rows += [{"prompt": p["prompt"], "ids": p["ids"], "mask": p["mask"], "reward": p["reward"],
                      "logprobs": p["logprobs"], "stop": _stop_reason(p), "record": m, "last": p["last"]}
                     for p in own]
            continue
        reason, detail = member_problem(m) or ("no_sample", "no trainable segment")
        keep = not step_wise or (not sampled and not any(r.get("placeholder") for r in rows))
        if keep:
            rows.append({"prompt": [pad_token_id], "ids": [pad_token_id], "mask": [0],
                         "reward": 0.0 if step_wise else mean, "logprobs": [0.0], "stop": "stop",
                         "record": m, "last": True, "placeholder": True})
        how = ("no member of the group sampled anything: one row (loss mask 0, reward 0) keeps its prompt in "
               "the batch" if step_wise else "one response per prompt: loss mask 0, reward %s (the mean of %d "
               "sampled member(s)), so the group's baseline mean is theirs" % (mean, len(sampled))) if keep else \
            "step-wise advantages come from the sampled trajectories' last steps: the baseline counts them only"
        notes.append({"trajectory_id": m["trajectory_id"], "task_id": m["task_id"], "reason": reason,
                      "sampled_tokens": 0, "handling": "placeholder" if keep else "left_out",
                      "detail": "%s; SkyRL: %s" % (detail, how)})
    return rows


def _batch(rows, records, tid_of):
    lps = [r["logprobs"] for r in rows]
    return {
        "prompt_token_ids": [r["prompt"] for r in rows],
        "response_ids": [r["ids"] for r in rows],
        "rewards": [r["reward"] for r in rows],
        "loss_masks": [r["mask"] for r in rows],
        "rollout_logprobs": None if any(lp is None for lp in lps) else lps,
        "stop_reasons": [r["stop"] for r in rows],
        "rollout_metrics": _metrics(records, len(rows)),
        "trajectory_ids": [tid_of(r["record"]) for r in rows],
        "is_last_step": [r["last"] for r in rows],
    }


def _member_notes(notes):
    """Credit's notes without those of members SkyRL represents itself (its rows add their own)."""
    return [n for n in notes if n["reason"] not in ("no_reward", "no_sample")]


def to_skyrl(records, segments="split", notes=None, pad_token_id=0, **caps):
    """One batch per task (first-seen order), as `flakegym export --format skyrl` writes it."""
    notes = [] if notes is None else notes
    credit = []
    ps = pieces(records, segments, credit, **caps)
    notes += _member_notes(credit)
    out = []
    for task in dict.fromkeys(r["task_id"] for r in records):
        members = [r for r in records if r["task_id"] == task]
        rows = _rows(members, [p for p in ps if p["record"]["task_id"] == task], segments, pad_token_id, notes)
        out.append(_batch(rows, members, lambda r: {"instance_id": r["task_id"], "repetition_id": r["index"]}))
    return out


def generator_output(groups, trajectory_ids, segments="split", pad_token_id=0, notes=None, **caps):
    """A GeneratorOutput for SkyRL's input batch. `groups` maps each input instance id to the
    records its served group returned (record `index` = the TrajectoryID's repetition_id);
    `trajectory_ids` are the input batch's own TrajectoryID objects, returned as given. "split"
    needs SkyRL's `generator.step_wise_trajectories`; plain training takes "final" (one row per
    input: each trajectory's last segment, earlier ones logged as not trained)."""
    notes = [] if notes is None else notes
    rows = []
    for uid in dict.fromkeys(tid.instance_id for tid in trajectory_ids):
        tids = {tid.repetition_id: tid for tid in trajectory_ids if tid.instance_id == uid}
        recs = [r for r in groups.get(uid, []) if r["index"] in tids]
        members = recs + [_missing(uid, i) for i in tids if i not in {r["index"] for r in recs}]
        credit = []
        ps = pieces(recs, segments, credit, **caps)
        notes += _member_notes(credit)
        for r in _rows(members, ps, segments, pad_token_id, notes):
            r["tid"] = tids[r["record"]["index"]]
            rows.append(r)
    log_notes(notes, "flakegym_skyrl.generator_output")
    out = _batch(rows, [r for recs in groups.values() for r in recs], lambda r: None)
    out["trajectory_ids"] = [r["tid"] for r in rows]
    return out


def _missing(uid, index):
    """A member the server gave no record for (left out of its group)."""
    return {"trajectory_id": "%s/%d" % (uid, index), "task_id": uid, "index": index, "reward": None,
            "segments": [], "outcome": {"kind": "missing", "detail": "the server gave no record for it"}}
