/**
 * The scoring script's shells out of reach of the code they run.
 *
 * Apart (issue 42): where the script starts as root with a user to run the code as (the
 * workspace's owner, which `setpriv` can become: the local backend's scoring sandbox, whose user
 * namespace maps the two, workers/local/bwrap-args.ts `apartPrefix`), every command of the
 * agent's runs as that user with no capabilities and no way to gain one (`--no-new-privs`): it
 * can neither read the script's shells nor signal them, open their descriptors or enter their
 * temp dir, and whatever it leaves behind is ended before the script reads what it wrote
 * (scoring/script.ts). The body greets `apart`.
 *
 * Sealed, else: code under test runs as the same
 * uid as the script, so it could read the marker nonce from the script's shells (`/proc/<pid>/mem`,
 * `process_vm_readv`, `environ`) and copy their stdout, the scorer's channel (`/proc/<pid>/fd/1`,
 * `pidfd_getfd`). The kernel refuses all of these when the target is not dumpable, and a process
 * that execs a file its user cannot read is not dumpable (nor are the subshells it forks). So the
 * script starts as a short bootstrap that copies the shell into a fresh dir (the temp dir, else the
 * workspace where the temp dir is `noexec`), makes the copy execute-only, and execs the script body
 * with it; the body draws its nonce only then. Where the copy stays readable (a user that overrides
 * file modes, e.g. root with its capabilities) or runs nowhere, the body runs under the plain shell
 * and greets `open` instead of `sealed` (`ParsedScoring.sealed`). Pure.
 */

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * How the script runs a command of the agent's when apart: as the workspace's owner (`uid`, `gid`:
 * shell words), no groups, no capabilities now or after an exec. Pure.
 */
export const codeUser = (uid: string, gid: string) =>
  `setpriv --reuid=${uid} --regid=${gid} --clear-groups --no-new-privs --inh-caps=-all --`;

/** The head line of every composed script: how a process tells the scoring shells apart. */
export const SCRIPT_HEAD = "# flakegym scoring script (composed by packages/runner/src/scoring/script.ts)";

/**
 * `body` (which reads `$1`: `apart`, `sealed` or `open`; `$2`: the dir holding the sealed shell, to
 * remove at its end; apart, `$3` and `$4`: the code's uid and gid) wrapped in the bootstrap that
 * runs it apart, else under an execute-only shell. Pure.
 */
export function sealedScript(body: string): string {
  return [
    SCRIPT_HEAD,
    `B=${q(body)}`,
    // apart: root, a workspace owner that is not, and setpriv able to become it
    "W=$(stat -c %u . 2>/dev/null); G=$(stat -c %g . 2>/dev/null)",
    'case "$W.$G" in *[!0-9.]*|.*|*.) W= ;; esac',
    `if [ "$(id -u 2>/dev/null)" = 0 ] && [ -n "$W" ] && [ "$W" != 0 ] && ${codeUser('"$W"', '"$G"')} true >/dev/null 2>&1; then`,
    '  exec sh -c "$B" flakegym-score apart "" "$W" "$G"',
    "fi",
    // the temp dir first; where it is mounted `noexec` (podman's tmpfs), the workspace
    "S=$(command -v sh)",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
    'for D in "${TMPDIR:-/tmp}" "$PWD"; do',
    '  X=$(mktemp -d "$D/.flakegym-sh-XXXXXXXXXX" 2>/dev/null) || continue',
    '  if cp "$S" "$X/sh" >/dev/null 2>&1 && chmod 0111 "$X/sh" >/dev/null && [ ! -r "$X/sh" ] && "$X/sh" -c : >/dev/null 2>&1; then',
    '    exec "$X/sh" -c "$B" flakegym-score sealed "$X"',
    "  fi",
    '  rm -rf "$X" >/dev/null',
    "done",
    'exec sh -c "$B" flakegym-score open ""',
    "",
  ].join("\n");
}
