/**
 * The core's bundle as a one-byte string (issue 32), against the real Cline core.
 *
 * Fast form (in `npm test`): a core boots from the one-byte bundle built in flakegym's cache (by
 * `npm ci` / `npm run core:one-byte`) and runs a scripted task that writes a file and searches the
 * workspace with ripgrep (found beside the bundle: the rewrite's directory must lay out what the
 * package does). Full form (`npm run test:one-byte`): the rewrite is built from the installed
 * package into a fresh cache (the build parses the original and the rewrite and compares every
 * syntax node and string literal), then `flakegym rollout` runs the gold and empty policies on a
 * catalog task with the rewrite and with the package's own bundle: the rewards must be the same.
 */
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  buildOneByteCore,
  launchClineCore,
  ONE_BYTE_PINS,
  probeOneByteCore,
  resolveClinePackage,
  runClineTask,
} from "@flakegym/cline-vendor";
import { RunManifest, RunSummary } from "@flakegym/runner";
import {
  findProcesses,
  makeTempDir,
  runCli,
  say,
  scriptedProvider,
  startScriptedPolicy,
  xmlTool,
} from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";
import { flakegymCacheRoot } from "../../../packages/runner/src/cache-root.mjs";

const FULL = process.env["FLAKEGYM_ONE_BYTE_SUITE"] === "full";
const TASK = "semver-lite-caret-zero";
const pkg = resolveClinePackage();
const built = probeOneByteCore(pkg, flakegymCacheRoot(process.env), true);
if (!built.on) console.warn(`one-byte bundle, fast form skipped: ${built.reason}`);
if (!FULL)
  console.warn(
    "one-byte bundle: the full form (build + rollouts both ways) runs with `npm run test:one-byte`",
  );

describe.skipIf(!built.on)("one-byte bundle, fast form (real core from flakegym's cache)", () => {
  it("boots, writes a file, searches with ripgrep and completes", async () => {
    await using tmp = await makeTempDir("flakegym-one-byte-");
    const ws = join(tmp.path, "ws");
    const NEEDLE = "ONE_BYTE_NEEDLE_42";
    const policy = await startScriptedPolicy([
      say(`Writing.\n${xmlTool.writeToFile("found.txt", NEEDLE)}`),
      say(`Searching.\n<search_files>\n<path>.</path>\n<regex>${NEEDLE}</regex>\n</search_files>`),
      say(xmlTool.attemptCompletion("done")),
    ]);
    await mkdir(ws);
    const core = await launchClineCore({
      workspace: ws,
      configDir: join(tmp.path, "cfg"),
      home: join(tmp.path, "home"),
      startTimeoutMs: 120_000,
      oneByte: built,
    });
    try {
      expect(core.oneByte).toEqual(built);
      const cores = await findProcesses(`cline-core.js --config ${join(tmp.path, "cfg")}`);
      expect(cores.map((p) => p.cmdline).join("\n")).toContain(built.on ? built.coreJs : "?");
      const run = await runClineTask({
        client: core.client,
        prompt: `Write found.txt, then search for ${NEEDLE}.`,
        provider: scriptedProvider(policy),
        limits: { wallClockMs: 120_000, idleMs: 60_000 },
      });
      expect(run.outcome.kind, JSON.stringify(run.outcome)).toBe("completed");
      expect(await readFile(join(ws, "found.txt"), "utf8")).toContain(NEEDLE);
      // the request after the search carries ripgrep's answer: found.txt matched
      const afterSearch = JSON.stringify(policy.requests[2]?.body ?? "");
      expect(afterSearch).toMatch(/found\.txt/);
      expect(afterSearch).toMatch(/1 result/);
    } finally {
      await core.stop();
      await policy.close();
    }
  });
});

describe.skipIf(!FULL)("one-byte bundle, full form (build from the package, rollouts both ways)", () => {
  it("builds a proved rewrite, and a rollout gives the same rewards with it as without", async () => {
    await using tmp = await makeTempDir("flakegym-one-byte-full-");
    const cache = join(tmp.path, "cache");
    const b = await buildOneByteCore(pkg, cache);
    expect(b).toMatchObject({ built: true, counts: { comment: 198, "tagged-template": 0 } });
    expect(b.stringLiteralsCompared).toBeGreaterThan(200_000);
    expect(b.nodesCompared).toBeGreaterThan(5_000_000);
    const rewards: Record<string, (number | null)[]> = {};
    for (const bundle of ["one-byte", "original"]) {
      for (const policy of ["gold", "empty"]) {
        const out = join(tmp.path, `${bundle}-${policy}`);
        const env = {
          ...process.env,
          FLAKEGYM_CACHE: cache,
          FLAKEGYM_CORE_ONE_BYTE: bundle === "one-byte" ? "1" : "0",
        };
        const r = await runCli(
          ["rollout", "--task", TASK, "--policy", policy, "--group-size", "2", "--out", out],
          {
            env,
            timeoutMs: 900_000,
          },
        );
        expect(r.exitCode, r.stderr).toBe(0);
        const manifest = RunManifest.parse(JSON.parse(await readFile(join(out, "run.json"), "utf8")));
        expect(manifest.provenance.cline.bundle).toMatch(
          bundle === "one-byte"
            ? `one-byte (sha256 ${ONE_BYTE_PINS.output})`
            : /package's own.*FLAKEGYM_CORE_ONE_BYTE=0/,
        );
        const summary = RunSummary.parse(JSON.parse(await readFile(join(out, "summary.json"), "utf8")));
        rewards[`${bundle} ${policy}`] = summary.tasks[0]!.rewards;
      }
    }
    expect(rewards).toEqual({
      "one-byte gold": [1, 1],
      "one-byte empty": [0, 0],
      "original gold": [1, 1],
      "original empty": [0, 0],
    });
  }, 1_800_000);
});
