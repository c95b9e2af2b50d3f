"""Credit across segments and members in the Python adapters, on hand-built records (no server):
the same group as packages/runner/test/export/formats/credit.test.ts, judged with GRPO as verl 0.9.1
and SkyRL 0.4.0 compute it. Run by packages/runner/test/export/formats/python-adapters.test.ts."""

import os
import statistics
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from flakegym_client import group_means, pieces, sampled_tokens  # noqa: E402
from flakegym_prime import to_prime  # noqa: E402
from flakegym_skyrl import generator_output, to_skyrl  # noqa: E402
from flakegym_trl import completions_for  # noqa: E402
from flakegym_verl import to_verl  # noqa: E402


def seg(index, tokens, mask):
    return {"index": index, "tokens": tokens, "loss_mask": mask,
            "logprobs": [-(i + 1) / 10 if m else 0 for i, m in enumerate(mask)], "reward": None,
            "split": None, "completion_source": "sampled"}


def rec(tid, index, reward, segments):
    kind = "infra_error" if reward is None else ("policy_error" if not segments else "completed")
    return {"type": "trajectory", "run_id": "run", "trajectory_id": tid, "task_id": "task", "index": index,
            "policy": "openai:x#m", "outcome": {"kind": kind, "detail": ""}, "reward": reward,
            "timings_ms": {"agent": 3000, "model": 1200}, "segments": segments, "prompt": "fix it"}


A = rec("a", 0, 1, [seg(0, [10, 11, 20, 21], [0, 0, 1, 1])])
B = rec("b", 1, 1, [seg(0, [10, 11, 30], [0, 0, 1]), seg(1, [10, 12, 31, 32, 13, 33], [0, 0, 1, 1, 0, 1])])
C = rec("c", 2, 0, [seg(0, [10, 11, 40], [0, 0, 1])])
INFRA = rec("infra", 3, None, [])
TURN1 = rec("turn1", 4, 0, [])
GROUP = [A, B, C, INFRA, TURN1]


def grpo(scores, uids):
    """(score - mean) / (unbiased std + 1e-6) per uid; a lone row: mean 0, std 1 (verl, SkyRL)."""
    by = {}
    for s, u in zip(scores, uids):
        by.setdefault(u, []).append(s)
    stats = {u: (0.0, 1.0) if len(xs) == 1 else (statistics.mean(xs), statistics.stdev(xs)) for u, xs in by.items()}
    return [(s - stats[u][0]) / (stats[u][1] + 1e-6) for s, u in zip(scores, uids)]


def step_wise(batch):
    """SkyRL step-wise: GRPO over each trajectory's last step, broadcast to its earlier steps."""
    last = [i for i, x in enumerate(batch["is_last_step"]) if x]
    uid = [(t["instance_id"] if isinstance(t, dict) else t.instance_id) for t in batch["trajectory_ids"]]
    adv = grpo([batch["rewards"][i] for i in last], [uid[i] for i in last])
    out, traj = [], 0
    for x in batch["is_last_step"]:
        out.append(adv[traj])
        traj += 1 if x else 0
    return out


IDEAL = grpo([1, 1, 0], ["t"] * 3)


class TID:
    def __init__(self, instance_id, repetition_id):
        self.instance_id, self.repetition_id = instance_id, repetition_id


class Credit(unittest.TestCase):
    def test_split_trains_every_sampled_token_once_with_the_whole_reward(self):
        notes = []
        ps = pieces(GROUP, "split", notes)
        self.assertEqual([(p["record"]["trajectory_id"], p["segment"]["index"], p["reward"]) for p in ps],
                         [("a", 0, 1), ("b", 0, 1), ("b", 1, 1), ("c", 0, 0)])
        self.assertEqual(sum(sampled_tokens(p["segment"]) for p in ps),
                         sum(sampled_tokens(s) for r in GROUP for s in r["segments"]))
        self.assertEqual([(n["trajectory_id"], n["reason"]) for n in notes],
                         [("infra", "no_reward"), ("turn1", "no_sample")])

    def test_final_reports_the_earlier_segments(self):
        notes = []
        ps = pieces([A, B], "final", notes)
        self.assertEqual([p["segment"]["index"] for p in ps], [0, 1])
        self.assertEqual([(n["trajectory_id"], n["reason"], n["sampled_tokens"]) for n in notes],
                         [("b", "earlier_segments", 1)])

    def test_baseline_counts_sampled_members_once(self):
        self.assertAlmostEqual(group_means(GROUP)["task"], 2 / 3)

    def test_skyrl_step_wise_equal_rewards_equal_advantages(self):
        batch = to_skyrl(GROUP, "split")[0]
        self.assertEqual(batch["is_last_step"], [True, False, True, True])
        got = step_wise(batch)
        want = [IDEAL[0], IDEAL[1], IDEAL[1], IDEAL[2]]
        self.assertEqual([round(x, 3) for x in got], [round(x, 3) for x in want])

    def test_skyrl_generator_plain_one_row_per_prompt_placeholder_at_the_mean(self):
        tids = [TID("task", i) for i in range(6)]  # index 5: the server gave no record
        notes = []
        out = generator_output({"task": GROUP}, tids, "final", pad_token_id=7, notes=notes)
        self.assertEqual(len(out["response_ids"]), len(tids))
        self.assertEqual(out["trajectory_ids"], tids)
        self.assertEqual([round(r, 3) for r in out["rewards"]], [1, 1, 0, 0.667, 0.667, 0.667])
        self.assertEqual(out["loss_masks"][3:], [[0], [0], [0]])
        adv = grpo(out["rewards"], ["task"] * 6)
        self.assertAlmostEqual(adv[0], adv[1])
        self.assertAlmostEqual(adv[3], 0, places=5)
        self.assertEqual(sorted(n["handling"] for n in notes if n["reason"] != "earlier_segments"),
                         ["placeholder"] * 3)

    def test_skyrl_generator_step_wise_leaves_unsampled_members_out(self):
        tids = [TID("task", i) for i in range(5)]
        out = generator_output({"task": GROUP}, tids, "split")
        self.assertEqual([t.repetition_id for t in out["trajectory_ids"]], [0, 1, 1, 2])
        self.assertEqual([round(x, 3) for x in step_wise(out)],
                         [round(x, 3) for x in [IDEAL[0], IDEAL[1], IDEAL[1], IDEAL[2]]])

    def test_trl_rows_per_prompt_none_for_unsampled(self):
        notes = []
        rows = completions_for(GROUP, 5, 0, notes)
        self.assertEqual([r["reward"] for r in rows], [1, 1, 0, None, None])
        self.assertEqual([(n["reason"], n["handling"]) for n in notes],
                         [("earlier_segments", "left_out"), ("no_reward", "placeholder"), ("no_sample", "placeholder")])

    def test_verl_and_prime_split(self):
        rows = to_verl(GROUP, "split")
        self.assertEqual([r["reward_score"] for r in rows], [1, 1, 1, 0])
        adv = grpo([r["reward_score"] for r in rows], ["t"] * 4)
        self.assertAlmostEqual(adv[0], adv[2])
        prime = to_prime(GROUP, "split")
        firsts = [round(next(a for a, m in zip(r["advantages"], r["mask"]) if m), 3) for r in prime]
        self.assertEqual(firsts, [0.333, 0.333, 0.333, -0.667])

    def test_length_caps_as_verl_cuts(self):
        notes = []
        rows = to_verl([B], "split", notes, max_prompt_tokens=1, max_response_tokens=2)
        self.assertEqual([(r["prompt_ids"], r["response_ids"]) for r in rows], [([11], [30]), ([12], [31, 32])])
        self.assertEqual(sum(n["sampled_tokens"] for n in notes), 1)


if __name__ == "__main__":
    unittest.main()
