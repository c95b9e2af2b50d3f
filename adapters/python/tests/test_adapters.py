"""Every adapter against a real `flakegym serve` (run by tests/e2e/serve-adapters.test.ts, which
starts the server with the real Cline core and a vLLM-style inference double, and exports the same
run with `flakegym export`). Each test checks its record shape, that every trained token id is one
the double sampled, in order, and that the adapter agrees with the TypeScript export.

Environment: FLAKEGYM_SERVE_URL, FLAKEGYM_TEST_REQUEST (the group request JSON),
FLAKEGYM_TEST_SAMPLED (JSON: the ids the double samples for each call of a trajectory, in order),
FLAKEGYM_TEST_EXPORT_DIR (the TS export: <format>-<final|split>.jsonl)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import flakegym_client  # noqa: E402
from flakegym_nemo import to_nemo  # noqa: E402
from flakegym_prime import to_prime  # noqa: E402
from flakegym_skyrl import to_skyrl  # noqa: E402
from flakegym_slime import to_slime  # noqa: E402
from flakegym_trl import as_rollout_func_output, to_trl  # noqa: E402
from flakegym_verl import to_verl  # noqa: E402

ENV = ("FLAKEGYM_SERVE_URL", "FLAKEGYM_TEST_REQUEST", "FLAKEGYM_TEST_SAMPLED", "FLAKEGYM_TEST_EXPORT_DIR")
MISSING = [k for k in ENV if k not in os.environ]
REASON = "needs %s (tests/e2e/serve-adapters.test.ts sets them)" % ", ".join(MISSING)
RECORDS = []


def setUpModule():
    if MISSING:
        print("skipping the adapter tests: " + REASON, file=sys.stderr)
        return
    client = flakegym_client.FlakegymClient(os.environ["FLAKEGYM_SERVE_URL"], timeout_s=60)
    records, done = client.group(json.loads(os.environ["FLAKEGYM_TEST_REQUEST"]))
    assert done["status"] == "complete", done
    RECORDS.extend(records)


def sampled():
    return [i for call in json.loads(os.environ["FLAKEGYM_TEST_SAMPLED"]) for i in call]


def exported(fmt, segments):
    path = os.path.join(os.environ["FLAKEGYM_TEST_EXPORT_DIR"], "%s-%s.jsonl" % (fmt, segments))
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


@unittest.skipIf(MISSING, REASON)
class AdapterTest(unittest.TestCase):
    def assert_sampled(self, trained_per_trajectory):
        """Each trajectory's trained ids are the double's sampled ids, in order (none re-tokenized)."""
        self.assertEqual(len(trained_per_trajectory), len(RECORDS))
        for ids in trained_per_trajectory.values():
            self.assertEqual(ids, sampled())

    def assert_agrees(self, fmt, fn):
        for segments in ("final", "split"):
            self.assertEqual(fn(RECORDS, segments), exported(fmt, segments), "%s --segments %s" % (fmt, segments))

    def test_group(self):
        self.assertGreaterEqual(len(RECORDS), 2)
        for r in RECORDS:
            self.assertEqual(r["type"], "trajectory")
            self.assertIn(r["outcome"]["kind"], ("completed", "limits_exceeded", "timeout", "policy_error",
                                                 "agent_error", "infra_error"))
            for s in r["segments"]:
                self.assertEqual(len(s["tokens"]), len(s["loss_mask"]))
                self.assertEqual(len(s["tokens"]), len(s["logprobs"]))

    def test_verl(self):
        rows = to_verl(RECORDS, "split")
        trained = {}
        for row in rows:
            self.assertEqual(set(row), {"prompt_ids", "response_ids", "response_mask", "response_logprobs",
                                        "reward_score", "num_turns", "metrics", "extra_fields"})
            self.assertEqual(len(row["response_ids"]), len(row["response_mask"]))
            self.assertEqual(len(row["response_ids"]), len(row["response_logprobs"]))
            self.assertEqual(row["response_mask"][0], 1)
            ids = [t for t, m in zip(row["response_ids"], row["response_mask"]) if m == 1]
            trained.setdefault(row["extra_fields"]["trajectory_id"], []).extend(ids)
        self.assert_sampled(trained)
        self.assert_agrees("verl", to_verl)

    def test_slime(self):
        rows = to_slime(RECORDS, "split")
        trained = {}
        for row in rows:
            n = row["response_length"]
            self.assertEqual(len(row["loss_mask"]), n)
            self.assertEqual(len(row["rollout_log_probs"]), n)
            self.assertIn(row["status"], ("completed", "truncated", "failed", "aborted"))
            self.assertIsInstance(row["rollout_id"], int)
            response = row["tokens"][-n:]
            trained.setdefault(row["rollout_id"], []).extend(
                t for t, m in zip(response, row["loss_mask"]) if m == 1)
        self.assert_sampled(trained)
        self.assert_agrees("slime", to_slime)

    def test_skyrl(self):
        batches = to_skyrl(RECORDS, "split")
        self.assertEqual(len(batches), 1)
        b = batches[0]
        keys = ("prompt_token_ids", "response_ids", "rewards", "loss_masks", "rollout_logprobs",
                "stop_reasons", "trajectory_ids", "is_last_step")
        self.assertEqual(set(b), set(keys) | {"rollout_metrics"})
        self.assertTrue(all(len(b[k]) == len(b["response_ids"]) for k in keys))
        self.assertTrue(set(b["stop_reasons"]) <= {"stop", "length"})
        trained = {}
        for tid, ids, mask in zip(b["trajectory_ids"], b["response_ids"], b["loss_masks"]):
            self.assertEqual(set(tid), {"instance_id", "repetition_id"})
            trained.setdefault(tid["repetition_id"], []).extend(t for t, m in zip(ids, mask) if m == 1)
        self.assert_sampled(trained)
        self.assert_agrees("skyrl", to_skyrl)

    def test_prime(self):
        trained = {}
        rows = to_prime(RECORDS, "split")
        owners = [p["record"]["trajectory_id"] for p in flakegym_client.pieces(RECORDS, "split")
                  if p["segment"]["logprobs"] is not None]
        self.assertEqual(len(rows), len(owners))
        for row, owner in zip(rows, owners):
            self.assertEqual(set(row), {"token_ids", "mask", "logprobs", "temperatures", "env_name", "advantages"})
            self.assertEqual(len(row["token_ids"]), len(row["advantages"]))
            self.assertEqual(len(row["token_ids"]), len(row["mask"]))
            self.assertEqual(len(row["token_ids"]), len(row["logprobs"]))
            self.assertEqual(len(row["token_ids"]), len(row["temperatures"]))
            self.assertTrue(all(isinstance(m, bool) for m in row["mask"]))
            self.assertEqual(row["env_name"], "flakegym")
            trained.setdefault(owner, []).extend(t for t, m in zip(row["token_ids"], row["mask"]) if m)
        self.assert_sampled(trained)
        self.assert_agrees("prime", to_prime)

    def test_trl(self):
        rows = to_trl(RECORDS, "split")
        trained = {}
        for row in rows:
            self.assertEqual(len(row["completion_ids"]), len(row["env_mask"]))
            self.assertEqual(len(row["completion_ids"]), len(row["logprobs"]))
            trained.setdefault(row["trajectory_id"], []).extend(
                t for t, m in zip(row["completion_ids"], row["env_mask"]) if m == 1)
        self.assert_sampled(trained)
        cols = as_rollout_func_output(rows)
        self.assertEqual(len(cols["prompt_ids"]), len(rows))
        self.assert_agrees("trl", to_trl)

    def test_nemo(self):
        trained = {}
        for row in to_nemo(RECORDS, "split"):
            self.assertIn("input", row["responses_create_params"])
            for call in row["response"]["output"]:
                if call["type"] != "message":
                    continue
                self.assertEqual(len(call["generation_token_ids"]), len(call["generation_log_probs"]))
                self.assertGreater(len(call["prompt_token_ids"]), 0)
                trained.setdefault(row["trajectory_id"], []).extend(call["generation_token_ids"])
        self.assert_sampled(trained)
        self.assert_agrees("nemo", to_nemo)

    def test_resubmission_runs_nothing_again(self):
        client = flakegym_client.FlakegymClient(os.environ["FLAKEGYM_SERVE_URL"], timeout_s=60)
        request = json.loads(os.environ["FLAKEGYM_TEST_REQUEST"])
        lines = list(client.stream(request))
        self.assertEqual(lines[0]["type"], "accepted")
        self.assertEqual(lines[0]["replayed"], len(RECORDS))
        self.assertEqual([l for l in lines if l["type"] == "trajectory"], RECORDS)
        other = dict(request, group_size=request["group_size"] + 1)
        with self.assertRaises(flakegym_client.FlakegymError) as ctx:
            list(client.stream(other))
        self.assertEqual(ctx.exception.status, 409)


if __name__ == "__main__":
    unittest.main()
