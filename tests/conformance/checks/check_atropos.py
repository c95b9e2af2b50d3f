"""atroposlib 0.4.0: the rollout's groups.jsonl through atroposlib's own run-api (its FastAPI app,
in process): a trainer registers, an env registers, the group is posted to /scored_data and comes
back whole in the trainer's /batch."""

from conformance_common import TASKS, jsonl, run


def check():
    from atroposlib.api.server import app
    from atroposlib.envs.base import ScoredDataGroup  # noqa: F401 - the type the group must be
    from fastapi.testclient import TestClient

    groups = jsonl("atropos.jsonl")
    g = groups[0]
    assert len(g["tokens"]) == len(g["masks"]) == len(g["scores"])
    with TestClient(app) as c:
        c.post("/register", json={"wandb_group": "g", "wandb_project": "p", "batch_size": len(g["tokens"]),
                                  "max_token_len": 32768, "checkpoint_dir": "/tmp/x",
                                  "save_checkpoint_interval": 100, "starting_step": 0, "num_steps": 1}).raise_for_status()
        assert c.get("/batch").json()["batch"] is None
        env = c.post("/register-env", json={"max_token_length": 32768, "desired_name": "flakegym", "weight": 1.0,
                                           "group_size": TASKS["group_size"]}).json()
        assert env["status"] == "success", env
        r = c.post("/scored_data", json={**g, "env_id": env["env_id"]})
        r.raise_for_status()
        batch = c.get("/batch").json()["batch"]
    assert batch and batch[0]["tokens"] == g["tokens"] and batch[0]["masks"] == g["masks"], batch
    return "a %d-sequence group went through /scored_data into a trainer batch" % len(g["tokens"])


run("atropos", "atroposlib", check)
