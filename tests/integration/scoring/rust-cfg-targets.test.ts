import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { CFG_TARGETS, parseRustcCfg } from "../../../packages/runner/src/scoring/build-reach.js";

// The rust reach probe prints rustc's cfgs for CFG_TARGETS only (scoring/build-reach.ts): this
// checks, against the local toolchain, that they cover every OS identity (`unix`, `windows`,
// `target_family`, `target_os`) of every target rustc knows — so a cfg predicate false on all of
// them holds on no target at all. One `rustc --print cfg` per target (320 on rustc 1.95, ≈ 40 s
// wall): FLAKEGYM_CFG_TARGETS_CHECK=1 runs it.
const wanted = process.env.FLAKEGYM_CFG_TARGETS_CHECK === "1";
const rustc = wanted ? (await execa("rustc", ["--print", "sysroot"], { reject: false })).stdout.trim() : "";
const why = !wanted
  ? "FLAKEGYM_CFG_TARGETS_CHECK=1 not set (one rustc run per known target, ≈ 40 s)"
  : rustc === ""
    ? "no rustc on PATH"
    : "";
if (why) console.log(`rust cfg targets check skipped: ${why}`);

const identity = async (target?: string) => {
  const r = await execa(`${rustc}/bin/rustc`, ["--print", "cfg", ...(target ? ["--target", target] : [])], {
    reject: false,
  });
  const [set] = parseRustcCfg(`${r.stdout}\n#flakegym-cfg-end\n`);
  return [...(set ?? [])].sort().join(" ");
};

describe.skipIf(why !== "")("rust cfg targets", () => {
  it("CFG_TARGETS cover every OS identity of every target rustc knows", async () => {
    const covered = new Set(await Promise.all(CFG_TARGETS.map((t) => identity(t))));
    const all = (await execa(`${rustc}/bin/rustc`, ["--print", "target-list"])).stdout
      .split("\n")
      .filter(Boolean);
    const missing: string[] = [];
    for (const t of all) {
      const id = await identity(t);
      if (!covered.has(id)) missing.push(`${t} (${id})`);
    }
    expect(missing, "add one target per missing identity to CFG_TARGETS").toEqual([]);
  }, 600_000);
});
