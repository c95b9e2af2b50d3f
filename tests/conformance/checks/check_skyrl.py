"""SkyRL 0.4.0: the example generator under SkyRL's own input preparation, output validation and
the trainer's reads; the exported batches as GeneratorOutput with TrajectoryID objects."""

import asyncio

from conformance_common import INFERENCE, SERVE_URL, TASKS, jsonl, run


def check():
    from skyrl.train.generators.base import TrajectoryID
    from skyrl.train.generators.utils import prepare_generator_input
    from skyrl.train.utils.trainer_utils import validate_generator_output
    from skyrl_generator import FlakegymGenerator

    n = TASKS["group_size"]
    prompts = [{"prompt": [{"role": "user", "content": task}], "env_class": None,
                "env_extras": {"task": task}, "uid": "uid-" + name}
               for name, task in (("whole", TASKS["whole"]), ("odd", TASKS["odd"]))]
    notes = []
    for segments, step_wise in (("final", False), ("split", True)):
        batch, uids = prepare_generator_input(prompts, n, {}, "flakegym", "train", 1)
        out = asyncio.run(FlakegymGenerator(SERVE_URL, INFERENCE, segments).generate(batch))
        # what SkyRL's trainer does with a generator's output (trainer.py generate())
        metrics = out["rollout_metrics"]
        assert metrics["flakegym/trajectories"] == 2 * n - 1, metrics  # the odd group lost one record
        out.pop("rollout_metrics", None)
        validate_generator_output(len(batch["prompts"]), out, step_wise=step_wise)
        assert all(isinstance(t, TrajectoryID) for t in out["trajectory_ids"])
        assert set(out["stop_reasons"]) <= {"stop", "length"}, out["stop_reasons"]
        if not step_wise:
            assert [t.instance_id for t in out["trajectory_ids"]] == uids
        notes.append("%s: %d rows for %d prompts" % (segments, len(out["response_ids"]), len(batch["prompts"])))
    # the exported batches (flakegym export --format skyrl), TrajectoryID(**d)
    for segments, step_wise in (("final", False), ("split", True)):
        for b in jsonl("skyrl-%s.jsonl" % segments):
            b["trajectory_ids"] = [TrajectoryID(**d) for d in b["trajectory_ids"]]
            b.pop("rollout_metrics")
            prompts_n = sum(1 for last in b["is_last_step"] if last)
            validate_generator_output(prompts_n, b, step_wise=step_wise)
    return "; ".join(notes) + "; exported batches validate"


run("skyrl", "skyrl", check)
