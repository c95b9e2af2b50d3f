"""NeMo Gym: per model call, `prompt_token_ids`, `generation_token_ids` and
`generation_log_probs`. Field names read in NeMo Gym's source (names only): NVIDIA-NeMo/Gym commit
07d6b0d07b22fcf530b4c211dae2ee23100428e4, nemo_gym/openai_utils.py, `TokenIDLogProbMixin`. Each
call's prompt is the segment up to its first sampled token, so the ids are exactly those the
inference server saw and sampled."""

from flakegym_client import calls, pieces


def to_nemo(records, segments="final"):
    out = []
    for p in pieces(records, segments):
        seg = p["segment"]
        lp = seg["logprobs"]
        row = {
            "responses": [{
                "prompt_token_ids": seg["tokens"][:s],
                "generation_token_ids": seg["tokens"][s:e],
                "generation_log_probs": None if lp is None else lp[s:e],
            } for s, e in calls(seg)],
            "reward": p["reward"],
        }
        row.update(p["meta"])
        out.append(row)
    return out
