"""TRL 1.16.0: the example rollout_func under TRL's own RepeatSampler and GRPOTrainer: its reward
path (`_generate_and_score_completions`: rollout_func, reward functions, the group baseline and
advantages) on the five-member groups, then one real GRPO step on CPU of a tiny randomly
initialised Qwen3 (built from a config, no download) with the real Qwen3 tokenizer; its loss used
the served ids (weights changed). Asserted: one completion per prompt; the truncated reward-1
trajectory and the untruncated one get equal advantages; the infra and first-call-error members
(reward None) get 0 and stay out of the baseline; TRL takes one completion per prompt, so what it
trains is each trajectory's last segment, and the rest is exactly what the adapter reports."""

import tempfile

from conformance_common import INFERENCE, MEMBERS, SERVE_URL, TASKS, TOKENIZER, assert_credit, run, sampled_total, served


def check():
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM
    from trl import GRPOConfig, GRPOTrainer
    from trl.trainer.utils import RepeatSampler
    from trl_rollout_func import flakegym_reward, make_rollout_func

    n = TASKS["group_size"]
    tasks = [TASKS["whole"], TASKS["odd"]]
    # the prompts rollout_func gets: TRL's sampler repeats each prompt n times, copies side by side
    sampler = RepeatSampler(tasks, mini_repeat_count=n, batch_size=len(tasks), shuffle=False)
    prompts = [tasks[i] for i in sampler]
    assert prompts == [t for t in tasks for _ in range(n)], prompts

    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                         head_dim=16, max_position_embeddings=4096, tie_word_embeddings=True))
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    rollout_func = make_rollout_func(SERVE_URL, INFERENCE)
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(output_dir=out, per_device_train_batch_size=len(prompts), num_generations=n,
                          max_steps=1, learning_rate=1e-2, use_cpu=True, report_to=[], logging_steps=1,
                          save_strategy="no", bf16=False, max_completion_length=512, seed=0, shuffle_dataset=False)
        trainer = GRPOTrainer(model=model, reward_funcs=[flakegym_reward], args=args,
                              train_dataset=Dataset.from_dict({"prompt": tasks}), processing_class=tok,
                              rollout_func=rollout_func)
        direct = rollout_func(prompts, trainer)
        assert len(direct["completion_ids"]) == len(prompts), len(direct["completion_ids"])
        scored = trainer._generate_and_score_completions([{"prompt": p} for p in prompts])
        adv = [float(a) for a in scored["advantages"].reshape(len(prompts), -1)[:, 0]]
        trained_rows = [sum(m) for m in direct["env_mask"][:n]]
        records = served()
        last = sum(sum([s for s in r["segments"] if 1 in s["loss_mask"]][-1]["loss_mask"])
                   for r in records if r["reward"] is not None and any(1 in s["loss_mask"] for s in r["segments"]))
        assert sum(trained_rows) == last, (trained_rows, last)
        reported = sampled_total(records) - last
        by = {i: [adv[i]] for i in range(n) if i not in (MEMBERS["infra"], MEMBERS["turn1"])}
        one = assert_credit(by, records, "TRL GRPO")
        assert adv[MEMBERS["infra"]] == 0 and adv[MEMBERS["turn1"]] == 0, adv[:n]
        assert abs(sum(one.values())) < 1e-3, one  # the None rows are out of the baseline
        trainer.train()
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed, "one GRPO step on flakegym groups changed no weight"
    padded = sum(1 for m in direct["env_mask"] if not any(m))
    return ("rollout_func: %d completions for %d repeated prompts (%d untrained, reward None); advantages %s; "
            "%d sampled tokens trained (last segments), %d of earlier segments reported; one GRPO step changed "
            "%d tensors") % (len(direct["completion_ids"]), len(prompts), padded,
                             {k: round(v, 3) for k, v in sorted(one.items())}, last, reported, len(changed))


run("trl", "trl", check)
