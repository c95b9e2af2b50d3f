import { PYTHON_INTERPRETER_ENV } from "./swebench-env-specs.js";

/**
 * An httpbin served on the scoring sandbox's loopback for the SWE-bench rows whose tests reach one.
 * requests' own tests before 2.10 send their requests to `HTTPBIN_URL` (default
 * `http://httpbin.org/`); SWE-bench's harness runs them in a container with the network, so those
 * rows' FAIL_TO_PASS / PASS_TO_PASS lists hold tests that passed against the public httpbin. A
 * scoring sandbox reaches no host, so the snapshot build installs the `httpbin` app (PyPI) into a
 * venv of its own beside the row's (its Flask and Werkzeug never meet the row's dependencies), and
 * the suite starts it on 127.0.0.1 with `HTTPBIN_URL` pointing at it. From 2.10 requests' tests
 * take the `pytest-httpbin` fixture instead, which SWE-bench's facts do not install; those rows get
 * no server. Tests that name another host themselves (`https://httpbin.org/…`, `http://example.com`)
 * still reach nothing. Pure.
 */

/** The httpbin release installed (the newest whose app runs the routes requests' old tests call). */
export const HTTPBIN_PIN = "httpbin==0.10.2";
/** Its venv, in the snapshot's deps dir (kept with the snapshot, as the row's venv is). */
export const HTTPBIN_VENV = "$FLAKEGYM_DEPS/httpbin";
/** The loopback port it listens on: the scoring sandbox has a network namespace of its own. */
export const HTTPBIN_PORT = 8765;
/** How long the suite waits for it to answer before running the tests anyway, in half-seconds. */
const HTTPBIN_WAIT_TRIES = 60;

/** The task note that says what is served and what is not. */
export const HTTPBIN_NOTE = `network: requests' tests before 2.10 reach httpbin at HTTPBIN_URL, which SWE-bench's harness served from the public httpbin.org; scoring serves ${HTTPBIN_PIN} (PyPI, its own venv) on 127.0.0.1:${HTTPBIN_PORT} and sets HTTPBIN_URL to it. Tests that name a host themselves (https://httpbin.org/…, example.com) reach nothing here and fail`;

/** `major.minor` of a version string, or undefined. Pure. */
function majorMinor(version: string | number | null | undefined): [number, number] | undefined {
  const m = /^\s*v?(\d+)\.(\d+)/.exec(String(version ?? ""));
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** Whether a row's tests reach httpbin at HTTPBIN_URL: psf/requests before 2.10. Pure. */
export function wantsHttpbin(repo: string, version: string | number | null | undefined): boolean {
  if (repo.replace(/\.git$/, "").toLowerCase() !== "psf/requests") return false;
  const v = majorMinor(version);
  return v !== undefined && (v[0] < 2 || (v[0] === 2 && v[1] < 10));
}

/** The snapshot install commands of the httpbin venv (with the interpreter the build chose for the row). */
export function httpbinInstall(): string[] {
  return [
    `"\${${PYTHON_INTERPRETER_ENV}:-python3}" -m venv "${HTTPBIN_VENV}"`,
    `"${HTTPBIN_VENV}/bin/python" -m pip install '${HTTPBIN_PIN}'`,
  ];
}

/**
 * A suite command run with httpbin on loopback: the server started in the background, a bounded
 * wait for its port (on timeout the tests run anyway, saying so on stderr), `HTTPBIN_URL` exported,
 * the command (in a subshell: an `exit` in it still stops the server), the server stopped, and the
 * command's own exit status kept. `port`: the scoring
 * sandbox's own loopback has it free; a test on a shared host passes a free one. Pure.
 */
export function withHttpbin(command: string, port: number = HTTPBIN_PORT): string {
  const py = `"${HTTPBIN_VENV}/bin/python"`;
  const url = `http://127.0.0.1:${port}/`;
  const probe = `${py} -c 'import socket; socket.create_connection(("127.0.0.1", ${port}), 1).close()' 2>/dev/null`;
  const missing = `echo 'httpbin: ${HTTPBIN_VENV} is not in this snapshot (build it again); the tests that reach HTTPBIN_URL will fail' >&2`;
  const late = `echo 'httpbin on 127.0.0.1:${port} did not answer within ${HTTPBIN_WAIT_TRIES / 2} s; the tests that reach HTTPBIN_URL will fail' >&2`;
  return [
    `if [ -x ${py} ]; then ${py} -m httpbin.core --host 127.0.0.1 --port ${port} >/dev/null 2>&1 & __fg_hb=$!; else ${missing}; __fg_hb=; fi`,
    `__fg_i=0; while [ -n "$__fg_hb" ] && ! ${probe}; do __fg_i=$((__fg_i + 1)); if [ "$__fg_i" -ge ${HTTPBIN_WAIT_TRIES} ]; then ${late}; break; fi; sleep 0.5; done`,
    `export HTTPBIN_URL=${url}`,
    `(${command}
)`,
    `__fg_rc=$?; if [ -n "$__fg_hb" ]; then kill "$__fg_hb" 2>/dev/null; wait "$__fg_hb" 2>/dev/null; fi; (exit "$__fg_rc")`,
  ].join("; ");
}
