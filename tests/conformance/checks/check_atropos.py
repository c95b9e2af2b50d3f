"""atroposlib 0.4.0: the rollout's groups.jsonl (one sequence per trajectory, `--segments last`)
against atroposlib's own run-api (its FastAPI app, in process). The group of five lost two members
that sampled nothing (an infra error, a first-call policy error): they are left out with their
reason (never a 0-token sequence, which made the sender drop the group), the earlier segments of the
truncated trajectory are counted in its override, and the run-api shows why flakegym's sender holds
such a group back: posted as it is, the run-api buffers it (`/batch` stays empty) waiting for
members that never come. The same sequences as a full group go through into a trainer batch whole."""

from conformance_common import MEMBERS, TASKS, jsonl, run, sampled_total, served


def check():
    from atroposlib.api.server import app
    from atroposlib.envs.base import ScoredDataGroup  # noqa: F401 - the type the group must be
    from fastapi.testclient import TestClient

    g = jsonl("atropos.jsonl")[0]
    n = TASKS["group_size"]
    assert len(g["tokens"]) == len(g["masks"]) == len(g["scores"])
    assert all(len(t) > 0 for t in g["tokens"]), "a 0-token sequence"
    assert all(any(m != -100 for m in ms) for ms in g["masks"]), "a sequence that trains nothing"
    excluded = {x["trajectory_id"].rsplit("-t", 1)[1]: x["reason"] for x in g["group_overrides"]["excluded"]}
    assert excluded == {str(MEMBERS["infra"]): "infra_error", str(MEMBERS["turn1"]): "no_sample"}, excluded
    trained = sum(1 for ms in g["masks"] for m in ms if m != -100)
    untrained = sum(o.get("untrained_sampled_tokens", 0) for o in g["overrides"])
    assert trained + untrained == sampled_total(served()), (trained, untrained, sampled_total(served()))
    with TestClient(app) as c:
        c.post("/register", json={"wandb_group": "g", "wandb_project": "p", "batch_size": len(g["tokens"]),
                                  "max_token_len": 32768, "checkpoint_dir": "/tmp/x",
                                  "save_checkpoint_interval": 100, "starting_step": 0, "num_steps": 1}).raise_for_status()
        assert c.get("/batch").json()["batch"] is None
        env = c.post("/register-env", json={"max_token_length": 32768, "desired_name": "flakegym", "weight": 1.0,
                                           "group_size": n}).json()
        assert env["status"] == "success", env
        short = c.post("/scored_data", json={**g, "env_id": env["env_id"]}).json()
        parked = c.get("/batch").json()["batch"]
        assert parked is None, "the run-api took a %d-sequence group for a group size of %d" % (len(g["tokens"]), n)
    with TestClient(app) as c:
        c.post("/register", json={"wandb_group": "g", "wandb_project": "p", "batch_size": len(g["tokens"]),
                                  "max_token_len": 32768, "checkpoint_dir": "/tmp/x",
                                  "save_checkpoint_interval": 100, "starting_step": 0, "num_steps": 1}).raise_for_status()
        env = c.post("/register-env", json={"max_token_length": 32768, "desired_name": "flakegym", "weight": 1.0,
                                           "group_size": len(g["tokens"])}).json()
        c.post("/scored_data", json={**g, "env_id": env["env_id"]}).raise_for_status()
        batch = c.get("/batch").json()["batch"]
    assert batch and batch[0]["tokens"] == g["tokens"] and batch[0]["masks"] == g["masks"], batch
    return ("%d sequences (%d left out: %s), %d sampled tokens trained + %d of earlier segments counted; posted "
            "for a group size of %d the run-api answered %s and /batch stayed empty (why the sender holds it back); "
            "as a full group it reached the trainer's batch whole") % (
        len(g["tokens"]), len(excluded), excluded, trained, untrained, n, short, )


run("atropos", "atroposlib", check)
