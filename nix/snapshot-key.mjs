// Computes a snapshot's key the way the runner computes its own (packages/runner/src/snapshots,
// key.ts): sha256 of JSON.stringify({format, repo, commit, profile, install, smoke, toolchain,
// network}) in that field order, where `toolchain` lists "<cmd>: <first line of its stdout>" for
// the profile's profiles.json smoke commands, run here with the snapshot's own toolchain.
// Plain Node, built-ins only (it runs inside the Nix build of a snapshot).
//
//   node snapshot-key.mjs SPEC.json > snapshot.json
//   SPEC: {task, format, repo, commit, profile, install, smoke, network, toolchainCommands}
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const specFile = process.argv[2];
if (!specFile) {
  process.stderr.write("usage: node snapshot-key.mjs SPEC.json\n");
  process.exit(2);
}
const spec = JSON.parse(readFileSync(specFile, "utf8"));
for (const field of [
  "task",
  "format",
  "repo",
  "commit",
  "profile",
  "install",
  "smoke",
  "network",
  "toolchainCommands",
]) {
  if (!(field in spec)) {
    process.stderr.write(`snapshot-key: ${specFile} has no field '${field}'\n`);
    process.exit(2);
  }
}

const toolchain = spec.toolchainCommands.map((cmd) => {
  const stdout = execFileSync("/bin/sh", ["-c", cmd], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return `${cmd}: ${stdout.trim().split("\n")[0]}`;
});
const inputs = {
  format: spec.format,
  repo: spec.repo,
  commit: spec.commit,
  profile: spec.profile,
  install: spec.install,
  smoke: spec.smoke,
  toolchain,
  network: spec.network,
};
const key = createHash("sha256").update(JSON.stringify(inputs)).digest("hex");
process.stdout.write(`${JSON.stringify({ task: spec.task, key, ...inputs }, null, 2)}\n`);
