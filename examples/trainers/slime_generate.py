"""slime: a custom generate function (`--custom-generate-function-path`) filling slime's `Sample`
from `flakegym serve` (docs/reference/trainers.md, slime). slime is not on PyPI; `sample` is slime's own
`Sample` (slime/utils/types.py), `sample.Status` its status enum."""

import asyncio

from flakegym_client import FlakegymClient
from flakegym_slime import to_slime


def make_generate(url, inference_of):
    client = FlakegymClient(url)

    async def generate(args, sample, sampling_params):
        records, _ = await asyncio.to_thread(client.group, {
            "request_id": "slime-%s" % sample.index, "task": sample.metadata["task"], "group_size": 1,
            "inference": inference_of(args), "sampling": {"temperature": sampling_params["temperature"]}})
        d = to_slime(records)[0]
        sample.tokens, sample.response_length = d["tokens"], d["response_length"]
        sample.loss_mask, sample.rollout_log_probs = d["loss_mask"], d["rollout_log_probs"]
        sample.reward, sample.status = d["reward"], type(sample).Status(d["status"])
        sample.metadata.update(d["metadata"])
        return sample

    return generate
