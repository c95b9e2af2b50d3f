import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { gunzipSync, gzipSync } from "node:zlib";
import { z } from "zod";
import { FlakegymError } from "../../errors.js";
import { runSecrets } from "../../redact/redactor.js";
import {
  InfoResponse,
  RegisterEnvRequest,
  RegisterEnvResponse,
  type ScoredDataGroup,
  StatusEnvResponse,
} from "../../run-format/atropos-schema.js";

const AnyJson = z.unknown();

/** A run-api answer with an unexpected status, or a request that could not complete. */
export class AtroposError extends FlakegymError {
  override readonly name = "AtroposError";
  constructor(
    message: string,
    readonly details: {
      readonly method: string;
      readonly path: string;
      readonly status?: number;
      readonly body?: string;
      readonly cause?: unknown;
    },
  ) {
    super("E_ATROPOS", message, {
      cause: details.cause,
      hint: "check --atropos <url> points at a running Atropos run-api (atroposlib/api/server.py)",
    });
  }
  /** 5xx and network failures are worth retrying; 4xx are not. */
  get retryable(): boolean {
    return this.details.status === undefined || this.details.status >= 500;
  }
}

export interface AtroposClientOptions {
  /** Base URL of the run-api, e.g. http://127.0.0.1:8000 */
  readonly url: string;
  /** Per-request deadline. */
  readonly timeoutMs?: number;
  /** Bodies at least this large are sent gzip-compressed (the run-api inflates them). */
  readonly gzipMinBytes?: number;
}

/** A client's fixed settings. */
interface ClientConfig {
  readonly base: URL;
  readonly timeoutMs: number;
  readonly gzipMin: number;
}

/**
 * A request body as sent: redacted JSON (what leaves for the trainer crosses the secrets boundary:
 * outcome details, messages), gzip-compressed from `gzipMin` bytes, with its headers. Pure.
 */
export function encodeBody(
  body: unknown,
  gzipMin: number,
): { payload: Buffer | undefined; headers: Record<string, string> } {
  const headers: Record<string, string> = { accept: "application/json", "accept-encoding": "gzip" };
  if (body === undefined) return { payload: undefined, headers };
  let payload = Buffer.from(runSecrets.text(JSON.stringify(body)), "utf8");
  headers["content-type"] = "application/json";
  if (payload.length >= gzipMin) {
    payload = gzipSync(payload);
    headers["content-encoding"] = "gzip";
  }
  headers["content-length"] = String(payload.length);
  return { payload, headers };
}

/** An answer's text: inflated when gzip'd; an error for a body that does not inflate or a non-2xx status. Pure. */
export function answerText(
  method: string,
  path: string,
  status: number,
  contentEncoding: string,
  body: Buffer,
): string | AtroposError {
  let buf = body;
  if (/gzip/i.test(contentEncoding)) {
    try {
      buf = gunzipSync(buf);
    } catch (cause) {
      return new AtroposError(`${method} ${path}: the gzip answer does not inflate`, { method, path, cause });
    }
  }
  const text = buf.toString("utf8");
  if (status < 200 || status >= 300)
    return new AtroposError(`${method} ${path} answered HTTP ${status}: ${text.slice(0, 300)}`, {
      method,
      path,
      status,
      body: text,
    });
  return text;
}

/** An answer's text parsed as JSON and checked against `schema`; errors name the field. Pure. */
export function parseAnswer<T>(method: string, path: string, raw: string, schema: z.ZodType<T>): T {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (cause) {
    throw new AtroposError(`${method} ${path} answered with text that is not JSON: ${raw.slice(0, 200)}`, {
      method,
      path,
      body: raw,
      cause,
    });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new AtroposError(
      `${method} ${path} answered with an unexpected shape: field '${issue.path.join(".")}': ${issue.message}`,
      { method, path, body: raw },
    );
  }
  return parsed.data;
}

/** One HTTP request to the run-api; its answer's text. */
function send(
  cfg: ClientConfig,
  method: string,
  path: string,
  body: unknown,
  signal?: AbortSignal,
): Promise<string> {
  const { base, timeoutMs } = cfg;
  const url = new URL(path.replace(/^\//, ""), base.href.endsWith("/") ? base.href : `${base.href}/`);
  const { payload, headers } = encodeBody(body, cfg.gzipMin);
  const doRequest = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<string>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const req = doRequest(url, { method, headers, timeout: timeoutMs }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", (cause) =>
        reject(new AtroposError(`${method} ${path}: ${cause.message}`, { method, path, cause })),
      );
      res.on("end", () => {
        const encoding = String(res.headers["content-encoding"] ?? "");
        const answer = answerText(method, path, res.statusCode ?? 0, encoding, Buffer.concat(chunks));
        if (answer instanceof AtroposError) reject(answer);
        else resolve(answer);
      });
    });
    const onAbort = () => req.destroy(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    req.on("timeout", () =>
      req.destroy(new AtroposError(`${method} ${path} timed out after ${timeoutMs} ms`, { method, path })),
    );
    req.on("error", (cause) => {
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) reject(signal.reason);
      else if (cause instanceof AtroposError) reject(cause);
      else reject(new AtroposError(`${method} ${url.href}: ${cause.message}`, { method, path, cause }));
    });
    req.on("close", () => signal?.removeEventListener("abort", onAbort));
    req.end(payload);
  });
}

async function call<T>(
  cfg: ClientConfig,
  method: "GET" | "POST",
  path: string,
  body: unknown,
  schema: z.ZodType<T>,
  signal?: AbortSignal,
): Promise<T> {
  return parseAnswer(method, path, await send(cfg, method, path, body, signal), schema);
}

/**
 * A thin typed client of the Atropos run-api over node:http. node:http is used rather than fetch
 * because `GET /status-env` carries a JSON body, which fetch refuses.
 */
export function createAtroposClient(opts: AtroposClientOptions) {
  const cfg: ClientConfig = {
    base: new URL(opts.url),
    timeoutMs: opts.timeoutMs ?? 30_000,
    gzipMin: opts.gzipMinBytes ?? 1024,
  };
  return {
    url: cfg.base.href,
    /** `POST /register-env`: `{status:"success", env_id,…}` or `{status:"wait for trainer to start"}`. */
    registerEnv(body: RegisterEnvRequest, signal?: AbortSignal) {
      return call(cfg, "POST", "/register-env", RegisterEnvRequest.parse(body), RegisterEnvResponse, signal);
    },
    /** `GET /info`: the trainer's batch size and max token length (-1 when unknown). */
    info(signal?: AbortSignal) {
      return call(cfg, "GET", "/info", undefined, InfoResponse, signal);
    },
    /** `GET /status-env` with JSON body `{env_id}`: the queue this env competes for. */
    statusEnv(envId: number, signal?: AbortSignal) {
      return call(cfg, "GET", "/status-env", { env_id: envId }, StatusEnvResponse, signal);
    },
    /** `POST /scored_data`. */
    scoredData(group: ScoredDataGroup, signal?: AbortSignal) {
      return call(cfg, "POST", "/scored_data", group, AnyJson, signal);
    },
    /** `POST /scored_data_list`. */
    scoredDataList(groups: readonly ScoredDataGroup[], signal?: AbortSignal) {
      return call(cfg, "POST", "/scored_data_list", groups, AnyJson, signal);
    },
    /** `POST /disconnect-env`. */
    disconnectEnv(envId: number, signal?: AbortSignal) {
      return call(cfg, "POST", "/disconnect-env", { env_id: envId }, AnyJson, signal);
    },
  };
}

export type AtroposClient = ReturnType<typeof createAtroposClient>;
