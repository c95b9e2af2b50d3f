"""SkyRL: served trajectories as GeneratorOutput batches.

Checked against skyrl 0.4.0 (skyrl/train/generators/base.py `GeneratorOutput`, `TrajectoryID`;
skyrl/train/utils/trainer_utils.py `validate_generator_output`; skyrl/train/trainer.py, which reads
`rollout_metrics` unconditionally), run by `npm run conformance`.

- `to_skyrl(records)`: one batch per task, as `flakegym export --format skyrl` writes it:
  `trajectory_ids` as TrajectoryID fields (`TrajectoryID(**d)`), `stop_reasons` the finish reason
  of each row's last model call ("length" when the length limit cut it, else "stop": SkyRL's
  overlong filtering reads them), `rollout_metrics` the group's own metrics.
- `generator_output(groups, trajectory_ids)`: what a `GeneratorInterface.generate` returns for its
  input batch: exactly one row per input trajectory id in input order (SkyRL asserts as many
  responses as prompts), each input's own `TrajectoryID` objects; a trajectory the server could not
  give (no reward, no tokens, left out) becomes a row that trains nothing (loss mask 0, reward 0).
  With `segments="split"` (SkyRL's step-wise training) a trajectory gives one row per segment, its
  last with `is_last_step` true."""

from flakegym_client import piece_calls, pieces


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


def to_skyrl(records, segments="final"):
    groups = {}
    for p in pieces(records, segments):
        groups.setdefault(p["record"]["task_id"], []).append(p)
    out = []
    for task, ps in groups.items():
        lps = [p["logprobs"] for p in ps]
        out.append({
            "prompt_token_ids": [p["prompt"] for p in ps],
            "response_ids": [p["ids"] for p in ps],
            "rewards": [p["reward"] for p in ps],
            "loss_masks": [p["mask"] for p in ps],
            "rollout_logprobs": None if any(lp is None for lp in lps) else lps,
            "stop_reasons": [_stop_reason(p) for p in ps],
            "rollout_metrics": _metrics([r for r in records if r["task_id"] == task], len(ps)),
            "trajectory_ids": [{"instance_id": p["record"]["task_id"], "repetition_id": p["record"]["index"]}
                               for p in ps],
            "is_last_step": [p["segment"]["index"] == len(p["record"]["segments"]) - 1 for p in ps],
        })
    return out


def generator_output(groups, trajectory_ids, segments="final", pad_token_id=0):
    """A GeneratorOutput for SkyRL's input batch. `groups` maps each input instance id to the
    records its served group returned (record `index` = the TrajectoryID's repetition_id);
    `trajectory_ids` are the input batch's own TrajectoryID objects, returned as given."""
    rows = []
    for tid in trajectory_ids:
        recs = [r for r in groups.get(tid.instance_id, []) if r["index"] == tid.repetition_id]
        ps = pieces(recs, segments)
        if not ps:
            rows.append({"prompt": [pad_token_id], "ids": [pad_token_id], "mask": [0], "reward": 0.0,
                         "logprobs": [0.0], "stop": "stop", "tid": tid, "last": True})
            continue
        for i, p in enumerate(ps):
            rows.append({"prompt": p["prompt"], "ids": p["ids"], "mask": p["mask"], "reward": p["reward"],
                         "logprobs": p["logprobs"], "stop": _stop_reason(p), "tid": tid,
                         "last": i == len(ps) - 1})
    all_records = [r for recs in groups.values() for r in recs]
    lps = [r["logprobs"] for r in rows]
    out = {
        "prompt_token_ids": [r["prompt"] for r in rows],
        "response_ids": [r["ids"] for r in rows],
        "rewards": [r["reward"] for r in rows],
        "loss_masks": [r["mask"] for r in rows],
        "stop_reasons": [r["stop"] for r in rows],
        "rollout_metrics": _metrics(all_records, len(rows)),
        "rollout_logprobs": None if any(lp is None for lp in lps) else lps,
        "trajectory_ids": [r["tid"] for r in rows],
        "is_last_step": [r["last"] for r in rows],
    }
    return out
