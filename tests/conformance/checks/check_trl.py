"""TRL 1.16.0: the example rollout_func under TRL's own RepeatSampler and GRPOTrainer: its reward
path (`_generate_and_score_completions`: rollout_func, reward functions, the group baseline and
advantages) on the five-member groups, then one real GRPO step on CPU of a tiny randomly
initialised Qwen3 (built from a config, no download) with the real Qwen3 tokenizer. Asserted: one
completion per prompt; the truncated reward-1 trajectory and the untruncated one get equal advantages; the infra and first-call-error members (reward None) get 0
and stay out of the baseline; what the trainer's loss trained (read from its own loss inputs) is
exactly each trajectory's last segment — TRL takes one completion per prompt — and every other
sampled token is one the adapter reported (`completions_for`'s notes); the weights changed.

Speed on CPU (rows of ~14.5k tokens: Cline's ~12k-token prompts): TRL's fused LM head scores
only the completion positions (`score_only_completions`: TRL's GPU path, the same values; scoring
every position over the 152k vocabulary was ~10x the step), one row per forward (gradient
accumulation over the generation batch), no gradient checkpointing, eager attention."""

import tempfile
import time

from conformance_common import (INFERENCE, MEMBERS, SERVE_URL, TASKS, TOKENIZER, assert_credit,
                                assert_members_reported, reported_untrained, run, sampled_total, served)


def last_segment_tokens(records):
    """Sampled tokens of each scored trajectory's last sampled segment: what TRL can train."""
    return sum(sum([s for s in r["segments"] if 1 in s["loss_mask"]][-1]["loss_mask"])
               for r in records if r["reward"] is not None and any(1 in s["loss_mask"] for s in r["segments"]))


def recording(trainer_class, trained):
    """`trainer_class` whose loss records, per row, the ids and mask it trains (its own inputs)."""

    class Recording(trainer_class):
        def _compute_loss(self, model, inputs):
            mask = inputs["completion_mask"] * inputs.get("tool_mask", 1)
            for ids, m in zip(inputs["completion_ids"].tolist(), mask.tolist()):
                trained.append([t for t, k in zip(ids, m) if k])
            return super()._compute_loss(model, inputs)

    return Recording


def tiny_model(tok):
    """One layer, one head (hidden 32) over the real vocabulary, random weights; eager attention:
    on CPU, sdpa's flash kernel takes ~30x its forward time for its backward at ~14k tokens."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    return Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                        num_attention_heads=1, num_key_value_heads=1, head_dim=16,
                                        max_position_embeddings=32768, tie_word_embeddings=True,
                                        attn_implementation="eager"))


def assert_reported(records, env_mask, pad_token_id):
    """The whole group's rows (the first n of `env_mask`) train its last segments; every other sampled
    token, and every member without a sample, is in `completions_for`'s notes. (trained, reported)."""
    from flakegym_trl import completions_for

    notes = []
    completions_for(records, TASKS["group_size"], pad_token_id, notes)
    assert_members_reported(notes, records, "TRL completions_for")
    trained = sum(sum(m) for m in env_mask[:TASKS["group_size"]])
    assert trained == last_segment_tokens(records), (trained, last_segment_tokens(records))
    reported = reported_untrained(notes)
    assert trained + reported == sampled_total(records), (
        "TRL: %d trained + %d reported != %d sampled" % (trained, reported, sampled_total(records)))
    return trained, reported


def check():
    import torch
    from datasets import Dataset
    from grpo_tiny import score_only_completions
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.trainer.utils import RepeatSampler
    from trl_rollout_func import flakegym_reward, make_rollout_func

    n = TASKS["group_size"]
    tasks = [TASKS["whole"], TASKS["odd"]]
    # the prompts rollout_func gets: TRL's sampler repeats each prompt n times, copies side by side
    sampler = RepeatSampler(tasks, mini_repeat_count=n, batch_size=len(tasks), shuffle=False)
    prompts = [tasks[i] for i in sampler]
    assert prompts == [t for t in tasks for _ in range(n)], prompts

    score_only_completions()
    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    model = tiny_model(tok)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    rollout_func = make_rollout_func(SERVE_URL, INFERENCE)
    trained = []
    with tempfile.TemporaryDirectory() as out:
        # one row per forward (gradient accumulation over the generation batch of 2 groups)
        args = GRPOConfig(output_dir=out, per_device_train_batch_size=1, gradient_accumulation_steps=len(prompts),
                          num_generations=n, max_steps=1, learning_rate=1e-2, use_cpu=True, report_to=[],
                          logging_steps=1, save_strategy="no", bf16=False, gradient_checkpointing=False,
                          max_completion_length=8192, seed=0, shuffle_dataset=False)
        trainer = recording(GRPOTrainer, trained)(
            model=model, reward_funcs=[flakegym_reward], args=args, train_dataset=Dataset.from_dict({"prompt": tasks}),
            processing_class=tok, rollout_func=rollout_func)
        direct = rollout_func(prompts, trainer)
        assert len(direct["completion_ids"]) == len(prompts), len(direct["completion_ids"])
        records = served()
        whole, reported = assert_reported(records, direct["env_mask"], tok.pad_token_id)  # before the slow step
        scored = trainer._generate_and_score_completions([{"prompt": p} for p in prompts])
        adv = [float(a) for a in scored["advantages"].reshape(len(prompts), -1)[:, 0]]
        by = {i: [adv[i]] for i in range(n) if i not in (MEMBERS["infra"], MEMBERS["turn1"])}
        one = assert_credit(by, records, "TRL GRPO")
        assert adv[MEMBERS["infra"]] == 0 and adv[MEMBERS["turn1"]] == 0, adv[:n]
        assert abs(sum(one.values())) < 1e-3, one  # the None rows are out of the baseline
        t0 = time.monotonic()
        trainer.train()
        seconds = time.monotonic() - t0
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed, "one GRPO step on flakegym groups changed no weight"
    # what the loss trained, row by row, is exactly what rollout_func gave as sampled (env_mask 1)
    given = sorted(tuple(t for t, k in zip(ids, m) if k) for ids, m in zip(direct["completion_ids"], direct["env_mask"]))
    assert sorted(tuple(r) for r in trained) == given, "TRL's loss trained other ids than rollout_func's sampled ones"
    return ("rollout_func: %d completions for %d repeated prompts (%d untrained, reward None); advantages %s; "
            "%d of %d sampled tokens trained (last segments), %d of earlier segments reported; the loss trained "
            "%d ids in %d rows, exactly the sampled ones; one GRPO step (%.0f s) changed %d tensors") % (
                len(direct["completion_ids"]), len(prompts), sum(1 for m in direct["env_mask"] if not any(m)),
                {k: round(v, 3) for k, v in sorted(one.items())}, whole, sampled_total(records), reported,
                sum(len(r) for r in trained), len(trained), seconds, len(changed))


run("trl", "trl", check)
