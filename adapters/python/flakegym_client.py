"""Client of `flakegym serve` and the shared mapping helpers of the trainer adapters. Stdlib only.

A trainer asks for a group and reads scored trajectories back:

    client = FlakegymClient("http://127.0.0.1:8470", token=None)
    records, done = client.group({"request_id": "step-12-task-3", "task": "tinygauge-vertical",
                                  "group_size": 8, "inference": {"base_url": VLLM, "model": MODEL},
                                  "sampling": {"temperature": 1.0}})

Each record is a served trajectory (GET /v1/schema, `StreamLine`): `segments` of `tokens`,
`loss_mask` (1 = sampled by the policy), `logprobs`, plus `reward`, `outcome`, `timings_ms`,
`provenance`. A request id never runs twice: `group()` resubmits the same request after a dropped
connection and gets the whole group back. Every wait is bounded (`timeout_s` per read; the server
sends a heartbeat every 15 s while a group runs).
"""

import json
import logging
import time
import urllib.error
import urllib.request

SEGMENT_POLICIES = ("split", "final")
LOG = logging.getLogger("flakegym")


class FlakegymError(Exception):
    """The server refused a request (status and its error message), or a group did not complete."""


class FlakegymClient:
    def __init__(self, url, token=None, timeout_s=120.0, retries=5):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.retries = retries

    def _request(self, method, path, body=None):
        headers = {"content-type": "application/json"}
        if self.token:
            headers["authorization"] = "Bearer " + self.token
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        return urllib.request.urlopen(req, timeout=self.timeout_s)

    def schema(self):
        with self._request("GET", "/v1/schema") as res:
            return json.load(res)

    def cancel(self, request_id):
        with self._request("DELETE", "/v1/groups/" + request_id) as res:
            return json.load(res)

    def stream(self, request):
        """Yields the NDJSON lines of a group (heartbeats left out); raises FlakegymError on a refusal."""
        try:
            res = self._request("POST", "/v1/groups", request)
        except urllib.error.HTTPError as err:
            raise _refusal(err) from None
        with res:
            for raw in res:
                line = json.loads(raw)
                if line.get("type") != "heartbeat":
                    yield line

    def group(self, request):
        """The group's trajectories and its final line; waits out 429 and resubmits after a dropped stream."""
        last = None
        for attempt in range(self.retries + 1):
            records = {}
            try:
                for line in self.stream(request):
                    if line["type"] == "trajectory":
                        records[line["trajectory_id"]] = line
                    elif line["type"] == "done":
                        return sorted(records.values(), key=lambda r: r["index"]), line
                last = FlakegymError("the stream ended before its done line")
            except FlakegymError as err:
                if getattr(err, "retry_after", None) is None:
                    raise
                last = err
                time.sleep(min(float(err.retry_after), 60.0))
                continue
            except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
                last = err
            time.sleep(min(2.0 ** attempt, 30.0))
        raise FlakegymError("request %s: no complete answer after %d attempts: %s"
                            % (request["request_id"], self.retries + 1, last))


def _refusal(err):
    try:
        message = json.load(err)["error"]["message"]
    except Exception:  # the body is not the server's error shape
        message = str(err)
    out = FlakegymError("HTTP %d: %s" % (err.code, message))
    out.status = err.code
    out.retry_after = err.headers.get("retry-after") if err.code == 429 else None
    return out


def sampled_tokens(segment):
    """How many tokens of a segment the policy sampled."""
    return sum(1 for m in segment["loss_mask"] if m == 1)


def has_sample(rec):
    """Whether a record has a reward and at least one sampled token (a trainable member)."""
    return rec["reward"] is not None and any(sampled_tokens(s) > 0 for s in rec["segments"])


def member_problem(rec):
    """(reason, detail) of a record that is no trainable member, else None (credit.ts `memberProblem`)."""
    out = rec["outcome"]
    if rec["reward"] is None:
        return "no_reward", "%s: no reward after every retry (%s)" % (out["kind"], out.get("detail") or "no detail")
    if not has_sample(rec):
        return "no_sample", "%s before the policy sampled a token (%s)" % (out["kind"], out.get("detail") or "no detail")
    return None


def _note(rec, reason, handling, sampled, detail):
    return {"trajectory_id": rec["trajectory_id"], "task_id": rec["task_id"], "reason": reason,
            "sampled_tokens": sampled, "handling": handling, "detail": detail}


def _cap(piece, caps):
    """A piece within (max_prompt_tokens, max_response_tokens), cut as verl's agent loops cut
    (the prompt's last tokens, the response's first): (piece, note or None). length-cap.ts."""
    max_prompt, max_response = caps
    n_prompt, n_resp = len(piece["prompt"]), len(piece["ids"])
    keep_p = min(n_prompt, max_prompt or n_prompt)
    keep_r = min(n_resp, max_response or n_resp)
    if keep_p == n_prompt and keep_r == n_resp:
        return piece, None
    lost = sum(1 for m in piece["mask"][keep_r:] if m == 1)
    cut = dict(piece)
    cut["prompt"] = piece["prompt"][n_prompt - keep_p:]
    cut["ids"], cut["mask"] = piece["ids"][:keep_r], piece["mask"][:keep_r]
    cut["logprobs"] = None if piece["logprobs"] is None else piece["logprobs"][:keep_r]
    parts = (["prompt %d -> its last %d tokens" % (n_prompt, keep_p)] if keep_p < n_prompt else []) + \
            (["response %d -> its first %d tokens" % (n_resp, keep_r)] if keep_r < n_resp else [])
    note = _note(piece["record"], "length_cut", "cut", lost, "segment %d: %s (the length policy, as verl's agent "
                 "loops cut)" % (piece["segment"]["index"], ", ".join(parts)))
    return cut, note


def pieces(records, segments="split", notes=None, max_prompt_tokens=None, max_response_tokens=None):
    """The trainable pieces of served records, as src/export/formats/credit.ts `creditOf`: every
    segment with a sampled token carries the trajectory's whole reward (split, the default: every
    sampled token trained once) or only the last one does (final: each earlier segment's sampled
    tokens are a note). Members without a reward or a sampled token have no piece: a note says why.
    `notes`, when a list, receives those notes (and the length cuts)."""
    if segments not in SEGMENT_POLICIES:
        raise ValueError("segments must be one of %s, not %r" % (SEGMENT_POLICIES, segments))
    notes = [] if notes is None else notes
    out = []
    for rec in records:
        problem = member_problem(rec)
        if problem:
            notes.append(_note(rec, problem[0], "left_out", 0, problem[1]))
            continue
        sampled = [s for s in rec["segments"] if sampled_tokens(s) > 0]
        chosen = sampled[-1:] if segments == "final" else sampled
        dropped = sampled[:len(sampled) - len(chosen)]
        if dropped:
            n = sum(sampled_tokens(s) for s in dropped)
            notes.append(_note(rec, "earlier_segments", "left_out", n,
                               "segments=final trains its last segment only: %d earlier segment(s) with %d "
                               "sampled token(s) not trained (segments=split trains them)" % (len(dropped), n)))
        for i, seg in enumerate(chosen):
            p = seg["loss_mask"].index(1)
            lp = seg["logprobs"]
            piece = {
                "record": rec,
                "segment": seg,
                "reward": rec["reward"],
                "last": i == len(chosen) - 1,
                "prompt": seg["tokens"][:p],
                "ids": seg["tokens"][p:],
                "mask": seg["loss_mask"][p:],
                "logprobs": None if lp is None else lp[p:],
                "meta": {
                    "trajectory_id": rec["trajectory_id"],
                    "task_id": rec["task_id"],
                    "run_id": rec["run_id"],
                    "index": rec["index"],
                    "segment": seg["index"],
                    "segments": len(rec["segments"]),
                    "outcome": rec["outcome"]["kind"],
                },
            }
            if max_prompt_tokens or max_response_tokens:
                piece, note = _cap(piece, (max_prompt_tokens, max_response_tokens))
                if note:
                    notes.append(note)
            out.append(piece)
    return out


def no_logprobs_note(piece, fmt):
    """The note of a piece a format needs logprobs for and has none."""
    return _note(piece["record"], "no_logprobs", "left_out", sampled_tokens(piece["segment"]),
                 "segment %d: the inference server gave no logprobs, and %s records need them"
                 % (piece["segment"]["index"], fmt))


def note_line(n):
    """One line of what an adapter did with a member or tokens, and why (credit.ts `noteLine`)."""
    what = {"left_out": "left out", "placeholder": "a placeholder row (trains nothing)", "cut": "cut"}[n["handling"]]
    tokens = ", %d sampled token(s) not trained" % n["sampled_tokens"] if n["sampled_tokens"] else ""
    return "%s (%s): %s [%s%s]: %s" % (n["trajectory_id"], n["task_id"], what, n["reason"], tokens, n["detail"])


def log_notes(notes, where):
    """Logs each note (a warning: something sampled, or a member, is not trained as it is)."""
    for n in notes:
        LOG.warning("%s: %s", where, note_line(n))


def calls(segment):
    """Each maximal run of trained positions is one model call: (start, end)."""
    out = []
    for i, m in enumerate(segment["loss_mask"]):
        if m != 1:
            continue
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def piece_calls(segment):
    """The model calls of a segment: the record's `calls` (text, finish reason, latency) or, for
    records of older versions, the runs of its loss mask with nothing else known."""
    if segment.get("calls") is not None:
        return segment["calls"]
    return [{"seq": -1, "start": s, "end": e, "text": "", "tool_calls": [], "finish_reason": None,
             "latency_ms": 0} for s, e in calls(segment)]


def group_means(records):
    """Each task's mean reward over its members that sampled something (GRPO's baseline: each
    trajectory once, whatever its segments; members without a sample left out)."""
    sums = {}
    for rec in records:
        if not has_sample(rec):
            continue
        n, total = sums.get(rec["task_id"], (0, 0.0))
        sums[rec["task_id"]] = (n + 1, total + rec["reward"])
    return {task: total / n for task, (n, total) in sums.items()}


def model_of(policy):
    """The model name of a policy spec (`openai:<url>#<model>`), else the spec itself."""
    if "#" in policy:
        name = policy.split("#", 1)[1].split("?", 1)[0]
        if name:
            return name
    return policy
