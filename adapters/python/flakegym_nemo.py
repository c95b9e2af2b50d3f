"""NeMo Gym: one BaseVerifyResponse-shaped dict per piece: `responses_create_params` (the request:
`input` holds the task prompt), `response` (a Responses API response whose `output` has one
assistant message per model call carrying `prompt_token_ids`, `generation_token_ids` and
`generation_log_probs`, native tool calls following it as function_call items) and `reward`.
Checked against nemo-gym 0.7.0 (nemo_gym/base_resources_server.py `BaseVerifyResponse`,
nemo_gym/openai_utils.py `NeMoGymResponse`, `TokenIDLogProbMixin`; validated by
`npm run conformance`). Each call's prompt is the segment up to its first sampled token, so the ids
are exactly those the inference server saw and sampled. A piece without logprobs is left out."""

from flakegym_client import model_of, no_logprobs_note, piece_calls, pieces


def to_nemo(records, segments="split", notes=None, **caps):
    notes = [] if notes is None else notes
    out = []
    for p in pieces(records, segments, notes, **caps):
        seg, rec = p["segment"], p["record"]
        lp = seg["logprobs"]
        if lp is None:
            notes.append(no_logprobs_note(p, "nemo"))
            continue
        tokens = seg["tokens"]
        output = []
        for i, c in enumerate(piece_calls(seg)):
            output.append({
                "id": "msg_%s_%d_%d" % (rec["trajectory_id"], seg["index"], i),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": c["text"], "annotations": []}],
                "prompt_token_ids": tokens[:c["start"]],
                "generation_token_ids": tokens[c["start"]:c["end"]],
                "generation_log_probs": lp[c["start"]:c["end"]],
            })
            for t in c["tool_calls"]:
                output.append({"type": "function_call", "id": "fc_" + t["id"], "call_id": t["id"],
                               "name": t["name"], "arguments": t["arguments"], "status": "completed"})
        row = {
            "responses_create_params": {
                "input": [{"role": "user", "content": rec.get("prompt") or "", "type": "message"}],
            },
            "response": {
                "id": "resp_%s_%d" % (rec["trajectory_id"], seg["index"]),
                "object": "response",
                "created_at": 0,
                "model": model_of(rec["policy"]),
                "output": output,
                "parallel_tool_calls": False,
                "tool_choice": "auto",
                "tools": [],
            },
            "reward": p["reward"],
        }
        row.update(p["meta"])
        out.append(row)
    return out
