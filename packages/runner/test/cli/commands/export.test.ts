import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { emptyExportLine } from "../../../src/cli/commands/export.js";
import { runCliCaptured } from "../../helpers/cli.js";

describe("emptyExportLine", () => {
  it("is silent when the export wrote a record", () => {
    expect(
      emptyExportLine("prime", 3, 0, [
        { trajectory_id: "a-t0", reason: "no_logprobs", handling: "left_out" },
      ]),
    ).toBeUndefined();
  });

  it("names why nothing was written and what to do (records without logprobs)", () => {
    const line = emptyExportLine("prime", 0, 0, [
      { trajectory_id: "a-t0", reason: "no_logprobs", handling: "left_out" },
      { trajectory_id: "a-t0", reason: "no_logprobs", handling: "left_out" }, // its second segment
      { trajectory_id: "a-t1", reason: "no_logprobs", handling: "left_out" },
      { trajectory_id: "a-t2", reason: "no_sample", handling: "left_out" },
      { trajectory_id: "a-t3", reason: "earlier_segments", handling: "cut" },
    ]);
    expect(line).toBe(
      "wrote no prime record (left out: 2 trajectories no_logprobs, 1 trajectory no_sample); this format needs the sampled tokens' logprobs: roll out against an endpoint that returns them (docs/reference/trainers.md), or export --format verl|skyrl|trl|samples",
    );
  });

  it("counts trajectories whose record could not be built, and an empty run", () => {
    expect(emptyExportLine("verl", 0, 2, [])).toBe(
      "wrote no verl record (left out: 2 whose record could not be built); see the lines above for each trajectory",
    );
    expect(emptyExportLine("verl", 0, 0, [])).toMatch(
      /^wrote no verl record \(the run has no finished trajectory\)/,
    );
  });
});

describe("export --out: rollout's output-path checks, before anything is read or written", () => {
  // the run need not exist: the --out refusal comes first (exit 2, naming --out)
  const cwd = tmpdir();
  const made: string[] = [];
  afterAll(async () => {
    for (const d of made) await rm(d, { recursive: true, force: true });
  });
  it.each([
    [
      "a file under /proc (a recursive mkdir there never returns)",
      ["--format", "samples", "--out", "/proc/x/y.jsonl"],
      /--out .*proc filesystem/,
    ],
    ["an atif directory under /proc", ["--format", "atif", "--out", "/proc/x"], /--out .*proc filesystem/],
    [
      "an atif directory under a file (not a raw ENOTDIR)",
      ["--format", "atif", "--out", "FILE/sub"],
      /--out .* is under .*, which is a file/,
    ],
  ])(
    "%s: exit 2 naming --out, in seconds",
    async (_, args, message) => {
      const dir = await mkdtemp(join(tmpdir(), "fg-export-out-"));
      made.push(dir);
      const file = join(dir, "afile");
      await writeFile(file, "x");
      const argv = ["export", join(cwd, "no-such-run"), ...args.map((a) => a.replace("FILE", file))];
      const r = await runCliCaptured(argv, { cwd });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/ENOTDIR/);
    },
    30_000,
  );
});
