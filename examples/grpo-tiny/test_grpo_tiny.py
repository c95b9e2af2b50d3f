"""The pure parts of grpo_tiny.py (stdlib unittest, no torch): python3 -m unittest test_grpo_tiny"""

import unittest

from grpo_tiny import certainty_reward, sampled_logprobs, template_messages, trained_runs, unsampled_runs


class TrainedIds(unittest.TestCase):
    def test_runs_are_the_masked_stretches(self):
        self.assertEqual(trained_runs([1, 2, 3, 4, 5, 6], [0, 1, 1, 0, 1, 1]), [[2, 3], [5, 6]])
        self.assertEqual(trained_runs([1, 2], [0, 0]), [])

    def test_every_run_must_be_one_sampled_call(self):
        calls = [{"ids": [2, 3]}, {"ids": [5, 6]}]
        self.assertEqual(unsampled_runs([([1, 2, 3, 4, 5, 6], [0, 1, 1, 0, 1, 1])], calls), [])
        # a run that merges two calls, or is cut short, is not a sampled call
        self.assertEqual(unsampled_runs([([2, 3, 5, 6], [1, 1, 1, 1])], calls), [(0, [2, 3, 5, 6])])
        self.assertEqual(unsampled_runs([([2, 3, 5], [1, 1, 0])], calls), [])
        self.assertEqual(unsampled_runs([([2, 4], [1, 1])], calls), [(0, [2, 4])])


class Messages(unittest.TestCase):
    def test_content_parts_join_with_newlines_and_arguments_parse(self):
        out = template_messages([
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
        ])
        self.assertEqual(out[0], {"role": "user", "content": "a\nb"})
        self.assertEqual(out[1]["content"], "")
        self.assertEqual(out[1]["tool_calls"][0]["function"]["arguments"], {"x": 1})


class Certainty(unittest.TestCase):
    def test_only_sampled_tokens_count(self):
        self.assertEqual(sampled_logprobs([[-1.0, 0.0, -3.0], None], [[1, 0, 1], None]), [[-1.0, -3.0], []])

    def test_surer_is_better_and_missing_rows_are_unscored(self):
        r = certainty_reward([[-1.0, -3.0], [-0.5, -0.5], [-1.0], []], ["t0", "t1", None, "t3"])
        self.assertAlmostEqual(r[0], 0.1 * -2.0)
        self.assertLess(r[0], r[1])
        self.assertIsNone(r[2])  # no trajectory
        self.assertIsNone(r[3])  # nothing sampled

    def test_two_equally_long_completions_still_differ(self):
        a, b = certainty_reward([[-11.91, -11.93], [-11.92, -11.95]], ["a", "b"])
        self.assertNotEqual(a, b)


if __name__ == "__main__":
    unittest.main()
