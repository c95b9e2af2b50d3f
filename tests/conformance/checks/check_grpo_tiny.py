"""TRL 1.16.0, for real: examples/grpo-tiny/grpo_tiny.py — one GRPO step on CPU where a tiny random
Qwen3 (real Qwen3 tokenizer, no download), served on loopback as the policy, drives the real Cline
agent through its own `flakegym serve`; the trained ids are the ids it sampled and the weights
changed (the example asserts both)."""

from conformance_common import TOKENIZER, run


def check():
    from grpo_tiny import main

    r = main(["--tokenizer", TOKENIZER])
    assert r["unsampled_runs"] == 0, r
    r = dict(r, untrained_calls=r["model_calls"] - r["trained_runs"])
    # TRL's rollout_func takes one completion per prompt: a trajectory's earlier segments (here split
    # by Qwen3's template rewriting past turns) are not trained, and the adapter logs them
    return ("%(task)s: %(model_calls)d model calls sampled by the trained model, rewards %(served_rewards)s; "
            "%(trained_runs)d of them trained, each trained run exactly one sampled call (%(trained_ids)d ids); "
            "%(untrained_calls)d in earlier segments TRL cannot take (logged); %(changed_tensors)d/%(tensors)d "
            "tensors changed, %(seconds)ss in the trainer" % r)


run("trl-grpo-tiny", "trl", check)
