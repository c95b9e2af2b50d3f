"""NeMo Gym 0.7.0: the exported rows and the example's as BaseVerifyResponse; every assistant
message lands on NeMo Gym's training variant with the served ids, and every row passes NeMo Gym's
own `assert_prefix_contiguity` (each message's prompt extends everything before it: a segment after
a truncation is a row of its own). Asserted: every sampled token is in exactly one row (split), what
`final` leaves out is reported, and every row of a trajectory carries its whole reward (NeMo Gym
has no advantage code of its own: the trainer's GRPO then sees equal rewards)."""

from conformance_common import (INFERENCE, MEMBERS, SERVE_URL, TASKS, assert_defaults_train_all,
                                assert_members_reported, jsonl, notes,
                                reported_untrained, run,
                                sampled_total, served)


def check():
    from nemo_gym.base_resources_server import BaseVerifyResponse
    from nemo_gym.openai_utils import TokenIDLogProbMixin
    from nemo_gym.token_id_capture.builder import assert_prefix_contiguity
    from nemo_gym_rows import verify_responses

    records = served()
    trained = {}
    for segments in ("final", "split"):
        rows = jsonl("nemo-%s.jsonl" % segments)
        for row in rows:
            v = BaseVerifyResponse.model_validate(row)
            assert_prefix_contiguity(row["response"])
            messages = [o for o in v.response.output if getattr(o, "type", None) == "message"]
            expected = [o for o in row["response"]["output"] if o["type"] == "message"]
            assert len(messages) == len(expected) > 0
            for got, want in zip(messages, expected):
                assert isinstance(got, TokenIDLogProbMixin), type(got).__name__
                assert got.generation_token_ids == want["generation_token_ids"]
                assert got.prompt_token_ids == want["prompt_token_ids"]
            assert v.reward == row["reward"]
        trained[segments] = sum(len(o["generation_token_ids"]) for r in rows for o in r["response"]["output"]
                                if o["type"] == "message")
        reward = {r["index"]: r["reward"] for r in records}
        assert all(r["reward"] == reward[r["index"]] for r in rows), "a segment without its trajectory's reward"
        assert {r["index"] for r in rows} == {i for i in reward if i not in (MEMBERS["infra"], MEMBERS["turn1"])}
    assert trained["split"] == sampled_total(records), (trained, sampled_total(records))
    default = sum(len(o["generation_token_ids"]) for r in jsonl("nemo-default.jsonl")
                  for o in r["response"]["output"] if o["type"] == "message")
    assert_defaults_train_all(records, default)
    for segments in ("split", "final"):
        assert_members_reported(notes("nemo-" + segments), records, "NeMo Gym " + segments)
    assert trained["final"] + reported_untrained(notes("nemo-final")) == sampled_total(records)
    live = verify_responses(SERVE_URL, "nemo-live", TASKS["whole"], INFERENCE, TASKS["group_size"])
    for v in live:
        assert_prefix_contiguity(v.response.model_dump())
    return ("split: %d sampled tokens in %d rows, each prefix-contiguous; final: %d + %d reported; %d live rows "
            "validate") % (trained["split"], len(jsonl("nemo-split.jsonl")), trained["final"],
                           reported_untrained(notes("nemo-final")), len(live))


run("nemo-gym", "nemo-gym", check)
