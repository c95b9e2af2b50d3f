"""TRL: a GRPOTrainer `rollout_func` over `flakegym serve` (docs/reference/trainers.md, TRL).

TRL's sampler has already repeated each prompt `num_generations` times, copies side by side, and
`rollout_func` must return one completion per prompt it gets. The dataset's prompt column holds
flakegym task ids; each run of equal prompts becomes one served group of that size. Use with
`reward_funcs=[flakegym_reward]`: the served reward rides along as the `reward` column."""

from flakegym_client import FlakegymClient
from flakegym_trl import as_rollout_func_output, completions_for, runs_of


def make_rollout_func(url, inference, **request):   # request: more fields, e.g. sampling, max_turns
    client = FlakegymClient(url)

    def rollout_func(prompts, trainer):
        rows = []
        for i, (task, n) in enumerate(runs_of(prompts)):
            records, _ = client.group({"request_id": "trl-%d-%d-%s" % (trainer.state.global_step, i, task),
                                       "task": task, "group_size": n, "inference": inference, **request})
            rows += completions_for(records, n, trainer.processing_class.pad_token_id)
        return as_rollout_func_output(rows)

    return rollout_func


def flakegym_reward(completions, reward, **_):
    """The served reward; None for a trajectory the server could not give (TRL leaves it out)."""
    return [None if r is None else float(r) for r in reward]
