"""NeMo Gym 0.7.0: the exported rows and the example's as BaseVerifyResponse; every assistant
message lands on NeMo Gym's training variant with the served ids."""

from conformance_common import INFERENCE, SERVE_URL, TASKS, jsonl, run


def check():
    from nemo_gym.base_resources_server import BaseVerifyResponse
    from nemo_gym.openai_utils import TokenIDLogProbMixin
    from nemo_gym_rows import verify_responses

    rows = jsonl("nemo-final.jsonl") + jsonl("nemo-split.jsonl")
    for row in rows:
        v = BaseVerifyResponse.model_validate(row)
        messages = [o for o in v.response.output if getattr(o, "type", None) == "message"]
        expected = [o for o in row["response"]["output"] if o["type"] == "message"]
        assert len(messages) == len(expected) > 0
        for got, want in zip(messages, expected):
            assert isinstance(got, TokenIDLogProbMixin), type(got).__name__
            assert got.generation_token_ids == want["generation_token_ids"]
            assert got.prompt_token_ids == want["prompt_token_ids"]
        assert v.reward == row["reward"]
    live = verify_responses(SERVE_URL, "nemo-live", TASKS["whole"], INFERENCE, TASKS["group_size"])
    return "%d exported rows and %d live rows validate as BaseVerifyResponse (training items)" % (len(rows), len(live))


run("nemo-gym", "nemo-gym", check)
