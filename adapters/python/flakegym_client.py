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
import time
import urllib.error
import urllib.request

SEGMENT_POLICIES = ("final", "split")


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


def pieces(records, segments="final"):
    """The trainable pieces of served records, as src/export/formats/trainer-formats.ts `piecesOf`:
    final = each trajectory's last segment with the whole reward; split = every segment with its
    share, linked by the trajectory id. Trajectories without a reward or tokens are left out."""
    if segments not in SEGMENT_POLICIES:
        raise ValueError("segments must be one of %s, not %r" % (SEGMENT_POLICIES, segments))
    out = []
    for rec in records:
        if rec["reward"] is None or not rec["segments"]:
            continue
        chosen = rec["segments"][-1:] if segments == "final" else rec["segments"]
        for seg in chosen:
            if 1 not in seg["loss_mask"]:
                continue
            p = seg["loss_mask"].index(1)
            if segments == "final":
                reward = rec["reward"]
            else:
                reward = seg["reward"] if seg["reward"] is not None else rec["reward"] / len(rec["segments"])
            lp = seg["logprobs"]
            out.append({
                "record": rec,
                "segment": seg,
                "reward": reward,
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
            })
    return out


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
    """Each task's mean trajectory reward over its records with a reward (GRPO's baseline)."""
    sums = {}
    for rec in records:
        if rec["reward"] is None:
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
