import { PYTEST_DEBIAN_PACKAGE, pytestPipInstall } from "./harbor.js";

/**
 * A Harbor verifier's install lines made offline (the sandbox has no network at test time): what
 * every Harbor environment here already has is dropped with a note, anything else is left for the
 * network check (harbor-dir.ts) to refuse by name. Pure.
 */

/**
 * test.sh without its lines that pip-install pytest alone (`python3 -m pip install
 * --break-system-packages -q pytest==9.0.3 2>/dev/null || true`): the sandbox is offline at test
 * time and pytest is there already (the profile's, Debian's python3-pytest, whose version differs
 * from the pin; noted). Any other pip line is left for the network check to refuse. Pure.
 */
export function offlinePytestPip(script: string): { script: string; notes: string[] } {
  const pins: string[] = [];
  const out = script.split("\n").filter((line) => {
    const cmd = line
      .trim()
      .replace(/\s*\|\|\s*(true|:)\s*$/, "")
      .replace(/\s+\d?>>?\s*\/dev\/null|\s+\d>&\d/g, "");
    const got = pytestPipInstall(cmd.split(/\s+/).filter((w) => w !== ""));
    if (got) pins.push(...got);
    return got === undefined;
  });
  return pins.length === 0
    ? { script, notes: [] }
    : {
        script: out.join("\n"),
        notes: [
          `tests/test.sh: pip install ${[...new Set(pins)].join(" ")} dropped (offline at test time): Debian's ${PYTEST_DEBIAN_PACKAGE} serves it, its own version`,
        ],
      };
}

/** What a verifier's apt-get may ask for that every Harbor environment here already has (the verifier's pytest). */
const TEST_APT_SERVED = new Set(["python3", "python3-pytest"]);

/**
 * test.sh without its lines that only `apt-get update` and `apt-get install` what every Harbor
 * environment here already has (`apt-get update && apt-get install -y python3-pytest`): the sandbox
 * is offline at test time (noted). A line asking for anything else is left for the network check
 * to refuse by name. Pure.
 */
export function offlineServedApt(script: string): { script: string; notes: string[] } {
  const asked: string[] = [];
  const out = script.split("\n").filter((line) => {
    const segs = line.split("&&").map((x) => x.trim().replace(/^([A-Za-z_][A-Za-z0-9_]*=\S*\s+)+/, ""));
    if (segs.length === 0 || !segs.every((x) => /^apt(-get)?\s/.test(x))) return true;
    const pkgs: string[] = [];
    for (const x of segs) {
      const words = x.split(/\s+/).filter((w) => !w.startsWith("-"));
      if (words[1] === "update" && words.length === 2) continue;
      if (words[1] !== "install") return true;
      pkgs.push(...words.slice(2));
    }
    if (pkgs.length === 0 || !pkgs.every((p) => TEST_APT_SERVED.has(p))) return true;
    asked.push(...pkgs);
    return false;
  });
  return asked.length === 0
    ? { script, notes: [] }
    : {
        script: out.join("\n"),
        notes: [
          `tests/test.sh: apt-get install ${[...new Set(asked)].join(" ")} dropped (offline at test time; every Harbor environment here has it)`,
        ],
      };
}

/**
 * `--ctrf <file>` / `--ctrf=<file>` (a report of the pytest-json-ctrf plugin, which the system's
 * pytest lacks: pytest would refuse the option) dropped from the lines that run pytest. Pure.
 */
export function withoutCtrf(script: string): { script: string; notes: string[] } {
  let changed = false;
  const out = script.split("\n").map((line) => {
    if (!/\bpytest\b/.test(line) || !/\s--ctrf(=|\s)/.test(line)) return line;
    changed = true;
    return line.replace(/\s--ctrf(=\S+|\s+\S+)/g, "");
  });
  return changed
    ? {
        script: out.join("\n"),
        notes: ["tests/test.sh: pytest's --ctrf report option dropped (no pytest-json-ctrf plugin here)"],
      }
    : { script, notes: [] };
}
