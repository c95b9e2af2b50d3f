"""NeMo Gym: served trajectories as BaseVerifyResponse records (docs/reference/trainers.md, NeMo Gym)."""

from flakegym_client import FlakegymClient
from flakegym_nemo import to_nemo
from nemo_gym.base_resources_server import BaseVerifyResponse


def verify_responses(url, request_id, task, inference, group_size=4):
    records, _ = FlakegymClient(url).group({"request_id": request_id, "task": task, "group_size": group_size,
                                            "inference": inference})
    return [BaseVerifyResponse.model_validate(row) for row in to_nemo(records)]
