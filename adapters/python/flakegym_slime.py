"""slime / miles: served trajectories as Sample-shaped dicts for a custom generate function.

Field names read in slime's source (names only): THUDM/slime commit
624b824a898ab0ec1fcb4d373004c7f3852bf515, slime/utils/types.py, `Sample` (tokens,
response_length, loss_mask of length response_length, rollout_log_probs, reward, status, metadata,
rollout_id) and `Sample.Status` (completed, truncated, failed, aborted). `rollout_id` is an int
there, shared by the samples one rollout was split into: here the first 52 bits of
sha256("<run id>/<trajectory id>"), as `flakegym export --format slime` writes it.
`segments="split"` emits each segment with its share of the reward, `"final"` the last."""

import hashlib

from flakegym_client import pieces


def slime_status(kind):
    if kind == "completed":
        return "completed"
    if kind in ("limits_exceeded", "timeout"):
        return "truncated"
    if kind == "policy_error":
        return "failed"
    return "aborted"


def rollout_id(record):
    key = "%s/%s" % (record["run_id"], record["trajectory_id"])
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:13], 16)


def to_slime(records, segments="split", notes=None, **caps):
    return [{
        "tokens": p["segment"]["tokens"],
        "response_length": len(p["ids"]),
        "loss_mask": p["mask"],
        "rollout_log_probs": p["logprobs"],
        "reward": p["reward"],
        "status": slime_status(p["record"]["outcome"]["kind"]),
        "metadata": p["meta"],
        "rollout_id": rollout_id(p["record"]),
    } for p in pieces(records, segments, notes, **caps)]
