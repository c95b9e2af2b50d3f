"""SkyRL: served trajectories as GeneratorOutput batches (one per task).

Field names read in SkyRL's source (names only): NovaSky-AI/SkyRL commit
a9564572eb8e91076be43c1bd5e4615e3de17265, skyrl/train/generators/base.py, `GeneratorOutput`
(prompt_token_ids, response_ids, rewards, loss_masks, rollout_logprobs, stop_reasons,
trajectory_ids, is_last_step) and `TrajectoryID` (instance_id, repetition_id). Each row is one
segment; `trajectory_ids` are TrajectoryID fields as dicts (`TrajectoryID(**d)`): the task and the
trajectory's index in the group, shared by the segments of one trajectory, whose last segment has
`is_last_step` true (SkyRL's step-wise training)."""

from flakegym_client import pieces


def to_skyrl(records, segments="final"):
    groups = {}
    for p in pieces(records, segments):
        groups.setdefault(p["record"]["task_id"], []).append(p)
    out = []
    for ps in groups.values():
        lps = [p["logprobs"] for p in ps]
        out.append({
            "prompt_token_ids": [p["prompt"] for p in ps],
            "response_ids": [p["ids"] for p in ps],
            "rewards": [p["reward"] for p in ps],
            "loss_masks": [p["mask"] for p in ps],
            "rollout_logprobs": None if any(lp is None for lp in lps) else lps,
            "stop_reasons": [p["record"]["outcome"]["kind"] for p in ps],
            "trajectory_ids": [{"instance_id": p["record"]["task_id"], "repetition_id": p["record"]["index"]}
                               for p in ps],
            "is_last_step": [p["segment"]["index"] == len(p["record"]["segments"]) - 1 for p in ps],
        })
    return out
