import { describe, expect, it } from "vitest";
import { parseArgs } from "../../src/cli/parse-args.js";
import {
  atroposOf,
  backendChoiceOf,
  judgeOf,
  newRunId,
  policiesOf,
  resolveRolloutOptions,
  resumeAtropos,
  resumeConfig,
  rewardPlanOf,
  runSourceOf,
} from "../../src/rollout/config.js";
import { RolloutOptions } from "../../src/rollout/options.js";

const parse = (argv: string[]) => parseArgs(RolloutOptions, argv);
const resolve = (argv: string[], env: NodeJS.ProcessEnv = {}) =>
  resolveRolloutOptions(parse(argv), env, "/w", "RUN");

describe("resolveRolloutOptions", () => {
  it("defaults to gold with a banner when no policy is configured", () => {
    const r = resolve(["--task", "a"]);
    expect(r.config.policies).toEqual(["gold"]);
    expect(r.banner).toMatch(/validating the environment with the `gold` policy/);
    expect(r.out).toBe("/w/runs/RUN");
    expect(r.config).toMatchObject({
      groupSize: 4,
      maxInfraRetries: 2,
      partialCredit: "none",
      testRepeat: 1,
      backend: "local",
    });
  });

  it("takes the policy from FLAKEGYM_POLICY, and --policy over it", () => {
    expect(resolve(["--task", "a"], { FLAKEGYM_POLICY: "openai:http://h:1/v1#m" }).config.policies).toEqual([
      "openai:http://h:1/v1#m",
    ]);
    const r = resolve(["--task", "a", "--policy", "gold", "--policy", "empty"], { FLAKEGYM_POLICY: "x" });
    expect(r.config.policies).toEqual(["gold", "empty"]);
    expect(r.banner).toBeUndefined();
  });

  it("needs --task unless resuming, and --tokenizer with --atropos", () => {
    expect(() => resolve([])).toThrow(/missing required flag --task/);
    expect(() => resolve(["--task", "a", "--atropos", "http://h:8000"])).toThrow(
      /--atropos needs --tokenizer/,
    );
  });

  it("refuses flags that would change a resumed run, but allows concurrency", () => {
    expect(() => resolve(["--resume", "runs/x", "--group-size", "3", "--task", "b"])).toThrow(
      /--task, --group-size cannot be changed/,
    );
    const r = resolve(["--resume", "runs/x", "--concurrency", "1"]);
    expect(r).toMatchObject({ resume: true, out: "runs/x", config: { concurrency: 1 } });
  });

  it("checks reward weights against the commands they need", () => {
    expect(() => resolve(["--task", "a", "--weight-build", "0.2"])).toThrow(
      /--weight-build needs --build-cmd/,
    );
    expect(() => resolve(["--task", "a", "--weight-judge", "0.5"])).toThrow(/--weight-judge needs --judge/);
    expect(() => resolve(["--task", "a", "--weight-tests", "0"])).toThrow(/every reward weight is 0/);
    expect(() => resolve(["--task", "a", "--judge", "http://h/v1"])).toThrow(/must be <base-url>#<model>/);
    const r = resolve(
      [
        "--task",
        "a",
        "--weight-judge",
        "0.3",
        "--judge",
        "http://h:1/v1#j",
        "--weight-build",
        "0.1",
        "--build-cmd",
        "make",
      ],
      { OPENAI_API_KEY: "sk-secret-judge" },
    );
    expect(r.config.weights).toEqual({ tests: 1, build: 0.1, lint: 0, judge: 0.3 });
    expect(r.config.judge).toEqual({ baseUrl: "http://h:1/v1", model: "j" });
    expect(r.judgeApiKey).toBe("sk-secret-judge");
    expect(JSON.stringify(r.config)).not.toContain("sk-secret-judge");
  });

  it("configures Atropos with its defaults", () => {
    const r = resolve([
      "--task",
      "a",
      "--tokenizer",
      "/tok",
      "--atropos",
      "http://h:8000",
      "--keep-equal-scores",
    ]);
    expect(r.config.atropos).toEqual({
      url: "http://h:8000",
      maxTokenLength: 32768,
      dropEqualScores: false,
      maxBatchesOffpolicy: 3,
      waitMs: 600_000,
      name: "flakegym-cline",
    });
  });
});

describe("--context-window", () => {
  it("stores the window Cline is told (absent: not stored), and cannot change a resumed run", () => {
    expect(resolve(["--task", "a", "--context-window", "8192"]).config.contextWindow).toBe(8192);
    expect(resolve(["--task", "a"]).config).not.toHaveProperty("contextWindow");
    expect(() => resolve(["--task", "a", "--context-window", "0"])).toThrow(/context-window/);
    expect(() => resolve(["--resume", "runs/x", "--context-window", "8192"])).toThrow(
      /--context-window cannot be changed/,
    );
  });
});

describe("newRunId", () => {
  it("is a sortable UTC stamp with a random suffix", () => {
    expect(newRunId(new Date("2026-11-21T09:30:05.123Z"), () => 0.5)).toBe("20261121T093005Z-7fffff");
  });
});

describe("resume and the default policy", () => {
  it("shows no gold banner when resuming (the stored run's policies apply)", () => {
    const r = resolveRolloutOptions(parseArgs(RolloutOptions, ["--resume", "runs/x"]), {}, "/w", "RUN");
    expect(r.banner).toBeUndefined();
  });
});

describe("--dataset", () => {
  const base = ["--dataset", "rows.jsonl", "--policy", "empty"];

  it("cannot be combined with --task, and --limit needs it", () => {
    expect(() => resolve(["--task", "a", ...base, "--build-cmd", "make"])).toThrow(
      /--task and --dataset cannot be combined/,
    );
    expect(() => resolve(["--task", "a", "--limit", "3"])).toThrow(/--limit only applies to --dataset/);
    expect(() => resolve([])).toThrow(/missing required flag --task \(or --dataset\)/);
  });

  it("scores rows by build and lint by default (their profile's commands), and refuses all-zero weights", () => {
    expect(resolve(base).config.weights).toEqual({ tests: 1, build: 1, lint: 1, judge: 0 });
    let err: unknown;
    try {
      resolve([...base, "--weight-build", "0", "--weight-lint", "0"]);
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toMatch(/no hidden tests.*build, lint or judge term.*none is configured/);
    expect((err as { hint?: string }).hint).toMatch(/--judge <base-url>#<model>.*tasks check --dataset/);
    // --weight-tests alone does not help: there are no tests
    expect(() =>
      resolve([...base, "--weight-tests", "1", "--weight-build", "0", "--weight-lint", "0"]),
    ).toThrow(/none is configured/);
  });

  it("weighs a given --build-cmd / --lint-cmd / --judge 1 unless told otherwise, and stores the commands", () => {
    const r = resolve([
      ...base,
      "--build-cmd",
      "npm run build",
      "--lint-cmd",
      "npm run lint",
      "--limit",
      "5",
    ]);
    expect(r.config.weights).toEqual({ tests: 1, build: 1, lint: 1, judge: 0 });
    expect(r.config).toMatchObject({ buildCmd: "npm run build", lintCmd: "npm run lint" });
    expect(r.dataset).toEqual({ file: "/w/rows.jsonl", limit: 5 });
    const j = resolve([...base, "--judge", "http://h:1/v1#j", "--weight-judge", "0.5"]);
    expect(j.config.weights).toEqual({ tests: 1, build: 1, lint: 1, judge: 0.5 });
    // catalog tasks keep their defaults: a --build-cmd without a weight counts 0
    expect(resolve(["--task", "a", "--build-cmd", "make"]).config.weights.build).toBe(0);
  });

  it("needs --policy or FLAKEGYM_POLICY: gold has nothing to replay", () => {
    let err: unknown;
    try {
      resolve(["--dataset", "rows.jsonl", "--build-cmd", "make"]);
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toMatch(/--dataset needs a policy.*no reference solution.*`gold`/);
    expect((err as { hint?: string }).hint).toMatch(/--policy <spec>.*FLAKEGYM_POLICY/);
    const r = resolve(["--dataset", "rows.jsonl", "--build-cmd", "make"], { FLAKEGYM_POLICY: "empty" });
    expect(r.config.policies).toEqual(["empty"]);
    expect(r.banner).toBeUndefined();
  });

  it("cannot be changed on --resume", () => {
    expect(() => resolve(["--resume", "runs/x", "--dataset", "other.jsonl", "--limit", "2"])).toThrow(
      /--dataset, --limit cannot be changed/,
    );
  });
});

describe("--resume --atropos <url> and sampling flags", () => {
  it("a resumed run may take a new run-api URL; the rest of its Atropos settings stay", () => {
    const r = resolve(["--resume", "runs/x", "--atropos", "http://new:8000"]);
    const stored = resolve([
      "--task",
      "a",
      "--tokenizer",
      "tok",
      "--atropos",
      "http://old:8000",
      "--atropos-name",
      "n",
    ]);
    expect(resumeAtropos(stored.config, "http://new:8000", r.config.atropos)).toEqual({
      ...stored.config.atropos,
      url: "http://new:8000",
    });
    const plain = resolve(["--task", "a", "--tokenizer", "tok"]).config;
    expect(resumeAtropos(plain, "http://new:8000", r.config.atropos)).toMatchObject({
      url: "http://new:8000",
      name: "flakegym-cline",
    });
    expect(() => resumeAtropos(resolve(["--task", "a"]).config, "http://new:8000", r.config.atropos)).toThrow(
      /stored run has no --tokenizer/,
    );
  });

  it("folds --temperature/--top-p/--top-k/--max-tokens/--seed into model policies, not into gold", () => {
    const r = resolve([
      "--task",
      "a",
      "--policy",
      "openai:http://h:1/v1#m?top_p=0.5",
      "--policy",
      "gold",
      "--temperature",
      "1",
      "--top-p",
      "0.9",
      "--top-k",
      "40",
      "--max-tokens",
      "100",
      "--seed",
      "5",
    ]);
    expect(r.config.policies).toEqual([
      "openai:http://h:1/v1#m?temperature=1&top_p=0.5&top_k=40&max_tokens=100&seed=5",
      "gold",
    ]);
    expect(r.config.seed).toBe(5);
    expect(() => resolve(["--resume", "runs/x", "--temperature", "1"])).toThrow(
      /--temperature cannot be changed/,
    );
  });
});

describe("resumeConfig", () => {
  it("keeps the stored --concurrency and --max-infra-retries unless given again", () => {
    const stored = resolve(["--task", "a", "--concurrency", "3", "--max-infra-retries", "1"]).config;
    expect(resumeConfig(stored, {})).toEqual(stored);
    expect(resumeConfig(stored, { concurrency: 8 })).toEqual({ ...stored, concurrency: 8 });
    expect(resumeConfig(stored, { maxInfraRetries: 0 })).toMatchObject({
      concurrency: 3,
      maxInfraRetries: 0,
    });
  });
});

describe("--idle-timeout", () => {
  it("sets the idle limit in seconds (default 300), and cannot change a resumed run", () => {
    expect(resolve(["--task", "a"]).config.limits.idleMs).toBe(300_000);
    expect(resolve(["--task", "a", "--idle-timeout", "30"]).config.limits.idleMs).toBe(30_000);
    expect(() => resolve(["--resume", "/w/runs/x", "--idle-timeout", "30"])).toThrow(/--idle-timeout/);
  });
});

describe("--images", () => {
  it("stores nix (host is the default and not stored) and needs a container backend", () => {
    expect(resolve(["--task", "a"]).config.images).toBeUndefined();
    expect(resolve(["--task", "a", "--images", "host"]).config.images).toBeUndefined();
    expect(resolve(["--task", "a", "--backend", "podman", "--images", "nix"]).config).toMatchObject({
      backend: "podman",
      images: "nix",
    });
    expect(() => resolve(["--task", "a", "--images", "nix"])).toThrow(
      /--images nix needs a container backend/,
    );
    expect(() => resolve(["--resume", "runs/x", "--images", "nix"])).toThrow(/images/);
  });
});

describe("the flags grouped: source, backend, reward", () => {
  it("the source is exactly one of task | dataset | resume", () => {
    expect(runSourceOf(parse(["--task", "a", "--task", "b"]), "/w")).toEqual({
      kind: "task",
      tasks: ["a", "b"],
    });
    expect(runSourceOf(parse(["--dataset", "d.jsonl", "--limit", "3"]), "/w")).toEqual({
      kind: "dataset",
      file: "/w/d.jsonl",
      limit: 3,
    });
    expect(runSourceOf(parse(["--resume", "runs/x"]), "/w")).toEqual({ kind: "resume", dir: "runs/x" });
    expect(() => runSourceOf(parse([]), "/w")).toThrow(/missing required flag --task/);
    expect(() => runSourceOf(parse(["--task", "a", "--dataset", "d"]), "/w")).toThrow(/cannot be combined/);
    expect(() => runSourceOf(parse(["--task", "a", "--limit", "2"]), "/w")).toThrow(/--limit only applies/);
    expect(() => runSourceOf(parse(["--resume", "r", "--seed", "3"]), "/w")).toThrow(
      /--seed cannot be changed/,
    );
  });

  it("the backend: local runs on /usr; podman and nomad carry their images", () => {
    expect(backendChoiceOf({})).toEqual({ kind: "local" });
    expect(backendChoiceOf({ backend: "podman" })).toEqual({ kind: "podman", images: "host" });
    expect(backendChoiceOf({ backend: "nomad", images: "nix" })).toEqual({ kind: "nomad", images: "nix" });
    expect(() => backendChoiceOf({ images: "nix" })).toThrow(/needs a container backend/);
  });

  it("the reward: hidden tests for catalog tasks, row terms for a dataset, every weighed term computable", () => {
    const task = { kind: "task", tasks: ["a"] } as const;
    const rows = { kind: "dataset", file: "/w/d.jsonl" } as const;
    expect(rewardPlanOf(parse(["--task", "a"]), task)).toEqual({
      kind: "hidden-tests",
      weights: { tests: 1, build: 0, lint: 0, judge: 0 },
    });
    expect(rewardPlanOf(parse(["--dataset", "d", "--judge", "http://j/v1#m"]), rows)).toEqual({
      kind: "row-terms",
      weights: { tests: 1, build: 1, lint: 1, judge: 1 },
      judge: { baseUrl: "http://j/v1", model: "m" },
    });
    expect(() => rewardPlanOf(parse(["--task", "a", "--weight-lint", "1"]), task)).toThrow(
      /needs --lint-cmd/,
    );
    expect(() =>
      rewardPlanOf(parse(["--dataset", "d", "--weight-build", "0", "--weight-lint", "0"]), rows),
    ).toThrow(/carry no hidden tests/);
    expect(() => rewardPlanOf(parse(["--task", "a", "--weight-tests", "0"]), task)).toThrow(
      /every reward weight is 0/,
    );
    expect(() => judgeOf("http://j/v1")).toThrow(/must be <base-url>#<model>/);
    expect(() => judgeOf("ftp://j#m")).toThrow(/must start with http/);
  });

  it("policies and Atropos by source: a resumed run keeps its stored ones", () => {
    const resume = { kind: "resume", dir: "r" } as const;
    expect(policiesOf(parse(["--resume", "r"]), { FLAKEGYM_POLICY: "empty" }, resume)).toEqual({
      policies: ["(stored)"],
    });
    expect(
      policiesOf(parse(["--task", "a"]), { FLAKEGYM_POLICY: "empty" }, { kind: "task", tasks: ["a"] }),
    ).toEqual({
      policies: ["empty"],
    });
    expect(atroposOf(parse(["--resume", "r", "--atropos", "http://a"]), resume)).toMatchObject({
      url: "http://a",
    });
    expect(() =>
      atroposOf(parse(["--task", "a", "--atropos", "http://a"]), { kind: "task", tasks: ["a"] }),
    ).toThrow(/--atropos needs --tokenizer/);
  });
});
