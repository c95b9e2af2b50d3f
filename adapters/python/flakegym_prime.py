"""prime-rl: one TrainingSample-shaped dict per piece, and nothing else (prime-rl's TrainingSample
is a msgspec array-like struct: unknown keys are rejected): the whole sequence (`token_ids`),
`mask` (booleans: True = sampled by the policy), `logprobs`, `temperatures` (the trajectory's
sampling temperature per token), `env_name`, and `advantages` per token: GRPO's scalar — the
trajectory's reward minus its group's mean — on every sampled token, 0 elsewhere. A piece without
logprobs cannot be a TrainingSample and is left out.

Field names read in prime-rl's source: PrimeIntellect-ai/prime-rl commit
a608ad9367b41f952a4151308c46b7d83da1f989, src/prime_rl/transports/rollouts/types.py,
`TrainingSample` (prime-rl is not on PyPI; `npm run conformance` says so and skips it)."""

import re
import urllib.parse

from flakegym_client import group_means, no_logprobs_note, pieces

ENV_NAME = "flakegym"


def temperature_of(record):
    """The policy spec's temperature (`…?temperature=0.7`), 1.0 when it names none."""
    m = re.search(r"[?&]temperature=([^&#]+)", record["policy"])
    try:
        return float(urllib.parse.unquote(m.group(1))) if m else 1.0
    except ValueError:
        return 1.0


def to_prime(records, segments="split", notes=None, **caps):
    notes = [] if notes is None else notes
    means = group_means(records)
    out = []
    for p in pieces(records, segments, notes, **caps):
        seg = p["segment"]
        if seg["logprobs"] is None:
            notes.append(no_logprobs_note(p, "prime"))
            continue
        t = temperature_of(p["record"])
        adv = (p["record"]["reward"] or 0.0) - means.get(p["record"]["task_id"], 0.0)
        out.append({
            "token_ids": seg["tokens"],
            "mask": [m == 1 for m in seg["loss_mask"]],
            "logprobs": seg["logprobs"],
            "temperatures": [t] * len(seg["tokens"]),
            "env_name": ENV_NAME,
            "advantages": [adv if m == 1 else 0 for m in seg["loss_mask"]],
        })
    return out
