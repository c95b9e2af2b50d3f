"""SkyRL: a generator whose groups come from `flakegym serve` (docs/reference/trainers.md, SkyRL).

SkyRL calls `generate(input_batch)` with its prompts already expanded per sample: one
`TrajectoryID(instance_id, repetition_id)` per row. Each instance becomes one served group of as
many trajectories as it has repetitions. "split" (default; set SkyRL's
`generator.step_wise_trajectories`): one row per segment with `is_last_step`, every sampled token
trained once; "final" (plain training): exactly one row per input row (each trajectory's last
segment, earlier ones logged as not trained). Members without a sample: see flakegym_skyrl. The
dataset's `env_extras` carry the flakegym task id."""

import asyncio

from flakegym_client import FlakegymClient
from flakegym_skyrl import generator_output
from skyrl.train.generators.base import GeneratorInterface


class FlakegymGenerator(GeneratorInterface):
    def __init__(self, url, inference, segments="split", pad_token_id=0):
        self.client, self.inference = FlakegymClient(url), inference
        self.segments, self.pad_token_id = segments, pad_token_id

    async def generate(self, input_batch):
        step = input_batch["batch_metadata"].global_step
        runs = {}  # instance id -> [task, repetitions]
        for tid, extras in zip(input_batch["trajectory_ids"], input_batch["env_extras"]):
            runs.setdefault(tid.instance_id, [extras["task"], 0])[1] += 1
        groups = {}
        for uid, (task, n) in runs.items():
            records, _ = await asyncio.to_thread(self.client.group, {
                "request_id": "skyrl-%s-%s-%s" % (step, uid, self.segments), "task": task, "group_size": n,
                "inference": self.inference})
            groups[uid] = records
        return generator_output(groups, input_batch["trajectory_ids"], self.segments, self.pad_token_id)
