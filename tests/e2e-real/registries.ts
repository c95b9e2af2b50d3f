import { execa } from "execa";

/**
 * Why a registry cannot be reached from here, or undefined: `cmd` is the registry client's own
 * look-up of one package (bounded to 60 s). The reason is printed, for the test that skips on it.
 */
export async function registryUnreachable(
  what: string,
  cmd: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<string | undefined> {
  const r = await execa(cmd[0]!, cmd.slice(1), {
    reject: false,
    timeout: 60_000,
    stdin: "ignore",
    env: { ...process.env, ...env },
  });
  if (r.exitCode === 0) return undefined;
  const why = r.timedOut ? "no answer within 60 s" : (r.stderr || r.stdout).trim().split("\n").slice(-1)[0];
  const reason = `${what} is not reachable from here (\`${cmd.join(" ")}\`: ${why})`;
  console.warn(`e2e-real: skipping, ${reason}`);
  return reason;
}
