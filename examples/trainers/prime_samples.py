"""prime-rl: TrainingSample-shaped dicts with GRPO advantages (docs/reference/trainers.md, prime-rl).
prime-rl is not on PyPI: build its `TrainingSample(**d)` where prime-rl is installed."""

from flakegym_client import FlakegymClient
from flakegym_prime import to_prime


def training_samples(url, request_id, task, inference, group_size=8):
    records, _ = FlakegymClient(url).group({"request_id": request_id, "task": task, "group_size": group_size,
                                            "inference": inference})
    return to_prime(records, segments="split")
