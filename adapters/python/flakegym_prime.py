"""prime-rl: one TrainingSample-shaped dict per segment: the whole sequence (`token_ids`), `mask`
(booleans: True = sampled by the policy), `logprobs`, `temperatures` (the trajectory's sampling
temperature per token) and `env_name`.

Field names read in prime-rl's source (names only): PrimeIntellect-ai/prime-rl commit
559b44772e471d1538537b8805cc77f3824a5e64, src/prime_rl/transports/rollouts/types.py,
`TrainingSample`. (verifiers, PrimeIntellect-ai/verifiers a60a606ecc4d309247edf9ff92c3eabca362781f,
keeps tokens per model call instead: verifiers/legacy/types.py `TrajectoryStepTokens`; prime-rl's
orchestrator flattens them into these samples.)"""

import re
import urllib.parse

from flakegym_client import pieces

ENV_NAME = "flakegym"


def temperature_of(record):
    """The policy spec's temperature (`…?temperature=0.7`), 1.0 when it names none."""
    m = re.search(r"[?&]temperature=([^&#]+)", record["policy"])
    try:
        return float(urllib.parse.unquote(m.group(1))) if m else 1.0
    except ValueError:
        return 1.0


def to_prime(records, segments="final"):
    out = []
    for p in pieces(records, segments):
        t = temperature_of(p["record"])
        tokens = p["segment"]["tokens"]
        row = {
            "token_ids": tokens,
            "mask": [m == 1 for m in p["segment"]["loss_mask"]],
            "logprobs": p["segment"]["logprobs"],
            "temperatures": [t] * len(tokens),
            "env_name": ENV_NAME,
            "reward": p["reward"],
        }
        row.update(p["meta"])
        out.append(row)
    return out
