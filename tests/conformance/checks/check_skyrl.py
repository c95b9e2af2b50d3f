"""SkyRL 0.4.0: the example generator under SkyRL's own input preparation and output validation,
then the trainer's own post-processing and advantages — `RayPPOTrainer.postprocess_generator_output`
→ `convert_to_training_input` (which computes the mini-batch boundaries from the prompts) →
`compute_advantages_and_returns` (GRPO; step-wise: from each trajectory's last step, broadcast) —
in plain training (`final`) and step-wise training (`split`). Asserted: as many responses as
prompts in plain training, every sampled token trained once step-wise (plain: the last segments,
the rest reported), equal rewards get equal advantages, the unsampled members move no baseline.
The exported batches validate too."""

import asyncio
import types

from conformance_common import (INFERENCE, MEMBERS, SERVE_URL, TASKS, TOKENIZER, assert_credit, assert_members_reported,
                                jsonl, notes,
                                reported_untrained, run, sampled_total, served)


def trainer(step_wise, n, prompts):
    """SkyRL's trainer with only what these methods read (no Ray, no workers)."""
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.trainer import RayPPOTrainer
    from transformers import AutoTokenizer

    cfg = SkyRLTrainConfig()
    cfg.generator.step_wise_trajectories = step_wise
    cfg.generator.n_samples_per_prompt = n
    cfg.trainer.train_batch_size = prompts
    cfg.trainer.policy_mini_batch_size = prompts
    t = object.__new__(RayPPOTrainer)
    t.cfg, t.all_metrics = cfg, {}
    t.dispatch = types.SimpleNamespace(get_lcm_dp_size=lambda: 1)  # one data-parallel rank: no padding rows
    t.tokenizer = AutoTokenizer.from_pretrained(TOKENIZER)
    return t


def last_segment_tokens(records):
    return sum(m for r in records if r["reward"] is not None and r["segments"]
               for m in [s for s in r["segments"] if 1 in s["loss_mask"]][-1]["loss_mask"])


def check():
    from skyrl.train.generators.base import TrajectoryID
    from skyrl.train.generators.utils import prepare_generator_input
    from skyrl.train.utils.trainer_utils import validate_generator_output
    from skyrl_generator import FlakegymGenerator

    n = TASKS["group_size"]
    records = served()
    prompts = [{"prompt": [{"role": "user", "content": task}], "env_class": None,
                "env_extras": {"task": task}, "uid": "uid-" + name}
               for name, task in (("whole", TASKS["whole"]), ("odd", TASKS["odd"]))]
    said = []
    for segments, step_wise in (("final", False), ("split", True)):
        batch, uids = prepare_generator_input(prompts, n, {}, "flakegym", "train", 1)
        out = asyncio.run(FlakegymGenerator(SERVE_URL, INFERENCE, segments).generate(batch))
        validate_generator_output(len(batch["prompts"]), out, step_wise=step_wise)
        assert all(isinstance(t, TrajectoryID) for t in out["trajectory_ids"])
        if step_wise:
            uids = [t.instance_id for t in out["trajectory_ids"]]
        else:
            assert [t.instance_id for t in out["trajectory_ids"]] == uids
        t = trainer(step_wise, n, len(prompts))
        out, uids = t.postprocess_generator_output(out, uids)
        data = t.convert_to_training_input(out, uids)
        data["values"] = None
        data = t.compute_advantages_and_returns(data)
        mask, adv = data["loss_mask"], data["advantages"]
        whole = [i for i, u in enumerate(uids) if u == "uid-whole"]
        trained = int(sum(mask[i].sum() for i in whole))
        want = sampled_total(records) if step_wise else last_segment_tokens(records)
        assert trained == want, "%s: %d trained, %d expected" % (segments, trained, want)
        by = {}
        for i in whole:
            if mask[i].sum() > 0:
                by.setdefault(out["trajectory_ids"][i].repetition_id, []).append(
                    float(adv[i][data["response_mask"][i].bool()].mean()))
        one = assert_credit(by, records, "SkyRL %s" % segments)
        # the unsampled members move no baseline: the sampled members' advantages sum to 0
        assert abs(sum(one.values())) < 1e-3, (segments, one)
        said.append("%s: %d rows for %d prompts, %d tokens trained, advantages %s" % (
            segments, len(out["response_ids"]), len(batch["prompts"]), trained,
            {k: round(v, 3) for k, v in sorted(one.items())}))
    for segments, step_wise in (("final", False), ("split", True)):
        for b in jsonl("skyrl-%s.jsonl" % segments):
            b["trajectory_ids"] = [TrajectoryID(**d) for d in b["trajectory_ids"]]
            b.pop("rollout_metrics")
            validate_generator_output(n if not step_wise else 1, b, step_wise=step_wise)
    assert reported_untrained(notes("skyrl-final")) + last_segment_tokens(records) == sampled_total(records)
    for segments in ("final", "split"):
        assert_members_reported(notes("skyrl-" + segments), records, "SkyRL " + segments)
    assert MEMBERS["infra"] in {r["index"] for r in records}
    return "; ".join(said) + "; exported batches validate"


if __name__ == "__main__":
    run("skyrl", "skyrl", check)
