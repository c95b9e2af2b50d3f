import { chmod, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  bundleKey,
  cliCacheDir,
  compiledCliMain,
  compiledCliMainHelp,
  compiledViewMain,
  unsafeCacheDir,
  viewCacheDir,
} from "../../bin/compiled-bundle.mjs";
import { flakegymCacheRoot } from "../../src/cache-root.mjs";
import { tempDir } from "../helpers/temp-dir.js";

const dirStat = (uid: number, mode: number, dir = true) => ({ uid, mode, isDirectory: () => dir });

describe("the view bundle's cache dir", () => {
  it("lies under the one cache root: FLAKEGYM_CACHE, else XDG_CACHE_HOME/flakegym, else ~/.cache/flakegym", () => {
    expect(flakegymCacheRoot({ FLAKEGYM_CACHE: "/c", XDG_CACHE_HOME: "/x" }, "/h")).toBe("/c");
    expect(flakegymCacheRoot({ XDG_CACHE_HOME: "/x" }, "/h")).toBe("/x/flakegym");
    expect(flakegymCacheRoot({ XDG_CACHE_HOME: "" }, "/h")).toBe("/h/.cache/flakegym");
    expect(viewCacheDir({ FLAKEGYM_CACHE: "/c" })).toBe("/c/view");
  });

  it("is used only when it is a dir of the user's that nobody else can write", () => {
    expect(unsafeCacheDir(dirStat(1000, 0o40700), 1000)).toBeUndefined();
    expect(unsafeCacheDir(dirStat(1000, 0o40755), 1000)).toBeUndefined();
    expect(unsafeCacheDir(dirStat(0, 0o40700), 1000)).toMatch(/belongs to uid 0, not to you \(uid 1000\)/);
    expect(unsafeCacheDir(dirStat(1000, 0o40777), 1000)).toMatch(/others can write to it \(mode 777\)/);
    expect(unsafeCacheDir(dirStat(1000, 0o40770), 1000)).toMatch(/mode 770/);
    expect(unsafeCacheDir(dirStat(1000, 0o100600, false), 1000)).toMatch(/not a directory/);
  });
});

describe("bundleKey", () => {
  const a = { path: "/s/a.ts", sha256: "1" };
  const b = { path: "/s/b.ts", sha256: "2" };
  it("is the same for the same inputs in any order, and changes with any path or content", () => {
    expect(bundleKey([a, b])).toBe(bundleKey([b, a]));
    expect(bundleKey([a, b])).toMatch(/^[0-9a-f]{32}$/);
    expect(bundleKey([a, { ...b, sha256: "3" }])).not.toBe(bundleKey([a, b]));
    expect(bundleKey([a, { ...b, path: "/s/c.ts" }])).not.toBe(bundleKey([a, b]));
    expect(bundleKey([a])).not.toBe(bundleKey([a, b]));
  });
});

describe("compiledViewMain (a real esbuild build into a private cache)", () => {
  it("builds once, reuses the bundle while its inputs hash the same, rebuilds when one does not", async () => {
    await using tmp = await tempDir("flakegym-view-bundle-");
    const env = { FLAKEGYM_CACHE: tmp.path };
    const cache = join(tmp.path, "view");
    const main = await compiledViewMain(env);
    expect(typeof main).toBe("function");
    const bundles = (await readdir(cache)).filter((n) => n.startsWith("view-"));
    expect(bundles).toHaveLength(1);
    const pointer = JSON.parse(await readFile(join(cache, "current.json"), "utf8"));
    expect(pointer.inputs.map((i: { path: string }) => i.path)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/src\/cli\/view-main\.ts$/),
        expect.stringMatching(/view\/server\.ts$/),
      ]),
    );
    // the bundle's modules see their own source file as import.meta.url (the frontend is found)
    const code = await readFile(join(cache, bundles[0]!, "view-main.js"), "utf8");
    expect(code).not.toContain("import.meta.url");
    expect(code).not.toMatch(/@grpc\/grpc-js/); // unused workspace modules are left out

    const builtAt = (await stat(join(cache, "current.json"))).mtimeMs;
    expect(typeof (await compiledViewMain(env))).toBe("function");
    expect((await stat(join(cache, "current.json"))).mtimeMs).toBe(builtAt);

    // an input that no longer hashes as recorded (as after an edit) makes the next start rebuild
    const stale = {
      ...pointer,
      inputs: pointer.inputs.map((i: object, n: number) => (n === 0 ? { ...i, sha256: "0".repeat(64) } : i)),
    };
    await writeFile(join(cache, "current.json"), JSON.stringify(stale));
    expect(typeof (await compiledViewMain(env))).toBe("function");
    const rebuilt = JSON.parse(await readFile(join(cache, "current.json"), "utf8"));
    expect(rebuilt.inputs[0].sha256).not.toBe("0".repeat(64));
    expect(rebuilt.key).toBe(pointer.key);
  }, 60_000);

  it("runs the view command: --help answers from the bundle", async () => {
    await using tmp = await tempDir("flakegym-view-bundle-");
    const main = await compiledViewMain({ FLAKEGYM_CACHE: tmp.path });
    const out: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
    try {
      expect(await main!(["view", "--help"])).toBe(0);
    } finally {
      process.stdout.write = write;
    }
    expect(out.join("")).toMatch(/--export/);
  }, 60_000);

  it("refuses a cache dir others can write to (the bin then runs from source) and says why", async () => {
    await using tmp = await tempDir("flakegym-view-bundle-");
    await mkdir(join(tmp.path, "view"));
    await chmod(join(tmp.path, "view"), 0o777);
    const err: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((s: string) => err.push(String(s)) > 0) as typeof process.stderr.write;
    try {
      expect(await compiledViewMain({ FLAKEGYM_CACHE: tmp.path })).toBeUndefined();
    } finally {
      process.stderr.write = write;
    }
    expect(err.join("")).toMatch(
      /not using the compiled viewer in .*view: others can write to it \(mode 777\)/,
    );
    expect(await readdir(join(tmp.path, "view"))).toEqual([]);
  });

  it("is not used when FLAKEGYM_VIEW_FROM_SOURCE=1", async () => {
    expect(await compiledViewMain({ FLAKEGYM_VIEW_FROM_SOURCE: "1" })).toBeUndefined();
  });
});

describe("compiledCliMain: every command from one bundle beside the install", () => {
  it("lives inside the install's node_modules (whatever FLAKEGYM_CACHE says)", () => {
    expect(cliCacheDir()).toMatch(/\/node_modules\/\.cache\/flakegym-cli$/);
  });

  it("builds once, then answers --version and a command's --help from the bundle", async () => {
    await using tmp = await tempDir("flakegym-cli-bundle-");
    const env = { FLAKEGYM_TEST_BUNDLE_DIR: tmp.path };
    const main = await compiledCliMain(env);
    expect(typeof main).toBe("function");
    const pointer = JSON.parse(await readFile(join(tmp.path, "current.json"), "utf8"));
    expect(await readdir(tmp.path)).toContain(`cli-${pointer.key}`);
    // the gateway's thread runs from the bundle too (gateway/thread.ts), not through tsx
    expect(await readdir(join(tmp.path, `cli-${pointer.key}`))).toContain("thread-worker.js");
    // the whole CLI: every command's module is among the bundle's inputs
    expect(pointer.inputs.some((i: { path: string }) => i.path.endsWith("cli/commands/rollout.ts"))).toBe(
      true,
    );
    const out: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
    try {
      expect(await main!(["--version"])).toBe(0);
      expect(await main!(["tasks", "check", "--help"])).toBe(0);
      out.push("--main help--");
      expect(await main!(["--help"])).toBe(0);
    } finally {
      process.stdout.write = write;
    }
    expect(out.join("")).toMatch(/^\d+\.\d+\.\d+\n/);
    expect(out.join("")).toMatch(/--dataset/);
    // `--help` is answered from the text the build wrote beside the bundle: exactly what main renders
    const rendered = out.slice(out.indexOf("--main help--") + 1).join("");
    expect(rendered).toMatch(/^flakegym \d+\.\d+\.\d+ — /);
    expect(await compiledCliMainHelp(env)).toBe(rendered);
    expect(await compiledCliMainHelp({ ...env, FLAKEGYM_FROM_SOURCE: "1" })).toBeUndefined();
  }, 120_000);

  it("is not used when FLAKEGYM_FROM_SOURCE=1", async () => {
    expect(await compiledCliMain({ FLAKEGYM_FROM_SOURCE: "1" })).toBeUndefined();
  });
});
