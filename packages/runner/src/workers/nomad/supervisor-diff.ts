import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { connect } from "node:http2";

/**
 * The workspace diff of a Nomad agent worker, asked from its supervisor over the runner's own
 * connection to the core's gate (cline-supervisor.mjs, `POST /flakegym.Supervisor/Diff` with the
 * worker's core token): the answer is one JSON line (diff.json's fields, `seq` echoed, the patch's
 * `sha256`) then the patch. Nothing is read from a directory the agent can write; the patch is
 * streamed to a file under a size bound, never held whole.
 */

export const SUPERVISOR_DIFF_PATH = "/flakegym.Supervisor/Diff";
/** The JSON line's bound (the excluded-paths list is its largest part). */
export const MAX_DIFF_HEAD_BYTES = 1024 * 1024;
/** Default bound on a patch (the supervisor's own diff stops at 256 MiB of content). */
export const DEFAULT_MAX_DIFF_BYTES = 512 * 1024 * 1024;

export interface SupervisorDiffInfo {
  readonly seq: number;
  readonly baseCommit?: string;
  readonly bytes?: number;
  readonly sha256?: string;
  readonly error?: string;
  /** The workspace held something git must not read: the agent's doing, recorded, no diff. */
  readonly unsafe?: boolean;
  readonly excluded?: { path: string; reason: string }[];
  readonly excludedTotal?: number;
}

/** The JSON line, accepted only for the request it answers. Pure: the info, or what is wrong. */
export function parseDiffHead(line: string, expectedSeq: number): SupervisorDiffInfo | { problem: string } {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return {
      problem: `the supervisor's answer does not start with a JSON line: ${JSON.stringify(line.slice(0, 120))}`,
    };
  }
  if (!v || typeof v !== "object") return { problem: "the supervisor's JSON line is not an object" };
  const info = v as SupervisorDiffInfo;
  if (info.seq !== expectedSeq) {
    return { problem: `the supervisor answered request ${String(info.seq)}, not ${expectedSeq}: refused` };
  }
  if (info.error === undefined) {
    if (!Number.isSafeInteger(info.bytes) || (info.bytes ?? -1) < 0)
      return { problem: "the supervisor's JSON line has no byte count" };
    if (typeof info.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(info.sha256))
      return { problem: "the supervisor's JSON line has no sha256" };
  }
  return info;
}

/** Whether the streamed patch is what the JSON line announced. Pure. */
export function diffBodyProblem(
  info: SupervisorDiffInfo,
  got: { bytes: number; sha256: string },
): string | undefined {
  const want = info.error === undefined ? (info.bytes ?? 0) : 0;
  if (got.bytes !== want) return `the patch has ${got.bytes} bytes, the supervisor announced ${want}`;
  if (info.error === undefined && got.sha256 !== info.sha256)
    return "the patch's sha256 differs from the one the supervisor announced";
  return undefined;
}

export interface FetchDiffInput {
  /** The core's published address (host:port), where the supervisor's gate listens. */
  readonly address: string;
  readonly token: string;
  readonly seq: number;
  /** Where the patch goes (created even when empty). */
  readonly file: string;
  readonly maxBytes?: number;
  readonly signal: AbortSignal;
}

/** Asks the supervisor for the diff and streams the patch to `file`. Throws an Error naming what was wrong. */
export async function fetchSupervisorDiff(i: FetchDiffInput): Promise<SupervisorDiffInfo> {
  const maxBytes = i.maxBytes ?? DEFAULT_MAX_DIFF_BYTES;
  const session = connect(`http://${i.address}`);
  session.on("error", () => {});
  const out = createWriteStream(i.file);
  const closed = new Promise<void>((resolve, reject) => {
    out.on("close", resolve);
    out.on("error", reject);
  });
  try {
    const info = await new Promise<SupervisorDiffInfo>((resolve, reject) => {
      const req = session.request({
        ":method": "POST",
        ":path": SUPERVISOR_DIFF_PATH,
        authorization: `Bearer ${i.token}`,
        "flakegym-seq": String(i.seq),
      });
      const fail = (err: unknown) => {
        req.close();
        reject(err);
      };
      out.once("error", (e) => fail(new Error(`cannot write ${i.file}: ${e.message}`)));
      const onAbort = () => fail(i.signal.reason);
      if (i.signal.aborted) return onAbort();
      i.signal.addEventListener("abort", onAbort, { once: true });
      req.on("close", () => i.signal.removeEventListener("abort", onAbort));
      req.on("error", (err) => fail(new Error(`the diff request to ${i.address} failed: ${err.message}`)));
      let status = 0;
      let grpcStatus: string | undefined;
      let head = Buffer.alloc(0);
      let info: SupervisorDiffInfo | undefined;
      let other = "";
      const hash = createHash("sha256");
      let bytes = 0;
      req.on("response", (h) => {
        status = Number(h[":status"]);
        grpcStatus = h["grpc-status"] as string | undefined;
      });
      const body = (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > maxBytes)
          return fail(new Error(`the patch is larger than ${maxBytes} bytes: not read further`));
        hash.update(chunk);
        if (!out.write(chunk)) {
          req.pause();
          out.once("drain", () => req.resume());
        }
      };
      req.on("data", (chunk: Buffer) => {
        if (status !== 200 || grpcStatus !== undefined) {
          if (other.length < 4096) other += chunk.toString("utf8");
          return;
        }
        if (info) return body(chunk);
        head = Buffer.concat([head, chunk]);
        const nl = head.indexOf(10);
        if (nl < 0) {
          if (head.length > MAX_DIFF_HEAD_BYTES)
            fail(new Error(`the supervisor's JSON line passes ${MAX_DIFF_HEAD_BYTES} bytes`));
          return;
        }
        const parsed = parseDiffHead(head.subarray(0, nl).toString("utf8"), i.seq);
        if ("problem" in parsed) return fail(new Error(parsed.problem));
        info = parsed;
        const rest = head.subarray(nl + 1);
        head = Buffer.alloc(0);
        if (rest.length) body(rest);
      });
      req.on("end", () => {
        if (grpcStatus === "16")
          return reject(new Error("the supervisor's gate refused the worker's core token"));
        if (status !== 200) return reject(new Error(`the supervisor answered ${status}: ${other.trim()}`));
        if (!info) return reject(new Error("the supervisor's answer ended before its JSON line"));
        const problem = diffBodyProblem(info, { bytes, sha256: hash.digest("hex") });
        if (problem) return reject(new Error(problem));
        resolve(info);
      });
      req.end();
    });
    return info;
  } finally {
    out.end();
    await closed.catch(() => {});
    session.close();
    session.destroy();
  }
}
