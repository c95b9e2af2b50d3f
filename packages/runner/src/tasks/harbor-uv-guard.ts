/**
 * A verifier's uv bootstrap guarded by `if ! command -v uv …; then … fi` (a common terminal-bench
 * test.sh shape) unwrapped, so offlineUvVerifier (harbor.ts) can drop the installer lines it holds:
 * left wrapped, their removal would leave an empty `then` (a shell syntax error) and the guard's
 * `uv` would read as a network fetch. Only a block holding nothing but the installer, `source
 * $HOME/.local/bin/env`, comments and blank lines is unwrapped; anything else is left as written. Pure.
 */

const GUARD = /^\s*if\s+!\s+command\s+-v\s+uvx?\b[^\n]*;\s*then\s*$/;
const FI = /^\s*fi\s*$/;
const INSTALLER_LINE =
  /^\s*(#.*|(curl|wget)\b.*astral\.sh\/uv.*\|\s*(ba)?sh\b.*|(source|\.)\s+"?\$(HOME|\{HOME\})\/\.(local\/bin|cargo)\/env"?\s*|)$/;

export function unwrapUvInstallGuard(script: string): string {
  const lines = script.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const end = GUARD.test(lines[i]!) ? lines.findIndex((l, j) => j > i && FI.test(l)) : -1;
    const inner = end > i ? lines.slice(i + 1, end) : undefined;
    if (inner?.every((l) => INSTALLER_LINE.test(l))) {
      out.push(...inner);
      i = end;
      continue;
    }
    out.push(lines[i]!);
  }
  return out.join("\n");
}
