import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { loadFileDescriptorSetFromBuffer, type MethodDefinition } from "@grpc/proto-loader";
import { match, P } from "ts-pattern";
import { toCamelKeys, toSnakeKeys } from "./case.js";
import { ClineVendorError, ErrorCode } from "./errors.js";
import { type ClineMessage, type CoreState, fromProtoMessage, parseStateJson } from "./messages.js";
import { resolveClinePackage } from "./paths.js";

/** How a failed gRPC call is classified (from its status code). */
export type RpcFailureKind =
  | "cancelled"
  | "deadline"
  | "unavailable"
  | "internal"
  | "unimplemented"
  | "rejected"
  | "resource_exhausted"
  | "unauthenticated"
  | "other";

/** Maps a gRPC status to how callers should treat it. */
export function rpcFailureKind(code: grpc.status): RpcFailureKind {
  const name = (grpc.status[code] ?? "UNKNOWN") as keyof typeof grpc.status;
  return match(name)
    .with("CANCELLED", () => "cancelled" as const)
    .with("DEADLINE_EXCEEDED", () => "deadline" as const)
    .with("UNAVAILABLE", () => "unavailable" as const)
    .with("INTERNAL", "UNKNOWN", "DATA_LOSS", () => "internal" as const)
    .with("UNIMPLEMENTED", () => "unimplemented" as const)
    .with(
      "INVALID_ARGUMENT",
      "FAILED_PRECONDITION",
      "OUT_OF_RANGE",
      "NOT_FOUND",
      "ALREADY_EXISTS",
      () => "rejected" as const,
    )
    .with("RESOURCE_EXHAUSTED", () => "resource_exhausted" as const)
    .with("UNAUTHENTICATED", "PERMISSION_DENIED", () => "unauthenticated" as const)
    .with("OK", "ABORTED", () => "other" as const)
    .exhaustive();
}

/** A gRPC call to the core failed. `kind` says how (see {@link rpcFailureKind}). */
export class ClineRpcError extends ClineVendorError {
  override readonly name = "ClineRpcError";
  readonly kind: RpcFailureKind;
  constructor(
    readonly method: string,
    readonly status: grpc.status,
    readonly details: string,
    readonly address: string,
    cause?: unknown,
  ) {
    const kind = rpcFailureKind(status);
    super(ErrorCode.Rpc, `${method} on ${address} failed: ${grpc.status[status] ?? status} (${details})`, {
      hint: match(kind)
        .with("unavailable", () => "the Cline core is not running or not reachable at that address")
        .with("deadline", () => "the core did not answer in time; it may be overloaded or stuck")
        .with("internal", () => "the core's handler threw; see core.log in the config dir")
        .with("rejected", () => "the request was invalid for the core's current state")
        .with(
          P.union("cancelled", "unimplemented", "resource_exhausted", "unauthenticated", "other"),
          () => undefined,
        )
        .exhaustive(),
      cause,
    });
    this.kind = kind;
  }
}

/** Per-call options: every call has a deadline and can be aborted. */
export interface CallOptions {
  readonly signal?: AbortSignal;
  /** Milliseconds from now; default: the client's `defaultDeadlineMs`. */
  readonly deadlineMs?: number;
  /** Wait for the channel to connect instead of failing fast when the core is not up yet. */
  readonly waitForReady?: boolean;
}

/** Options of a server-streaming subscription: it ends when the signal aborts. */
export interface StreamOptions {
  readonly signal?: AbortSignal;
}

// ---- request/response types we use (camelCase; converted at the boundary) ----

export type PlanActMode = "PLAN" | "ACT";
/** Provider enum names of `cline.ApiProvider` we configure. */
export type ApiProviderName = "ANTHROPIC" | "OPENAI";

/** The subset of `cline.ModelsApiConfiguration` flakegym sets. */
export interface ApiConfiguration {
  apiKey?: string;
  anthropicBaseUrl?: string;
  openAiBaseUrl?: string;
  openAiApiKey?: string;
  openAiHeaders?: { key: string; value: string }[];
  requestTimeoutMs?: number;
  planModeApiProvider?: ApiProviderName;
  actModeApiProvider?: ApiProviderName;
  planModeApiModelId?: string;
  actModeApiModelId?: string;
  planModeOpenAiModelId?: string;
  actModeOpenAiModelId?: string;
  planModeOpenAiModelInfo?: OpenAiModelInfo;
  actModeOpenAiModelInfo?: OpenAiModelInfo;
}

export interface OpenAiModelInfo {
  maxTokens?: number;
  contextWindow?: number;
  supportsImages?: boolean;
  supportsPromptCache?: boolean;
  temperature?: number;
}

/** The subset of `cline.UpdateSettingsRequest` flakegym sets. */
export interface UpdateSettings {
  mode?: PlanActMode;
  telemetrySetting?: "enabled" | "disabled" | "unset";
  enableCheckpointsSetting?: boolean;
  planActSeparateModelsSetting?: boolean;
  mcpMarketplaceEnabled?: boolean;
  nativeToolCallEnabled?: boolean;
  maxConsecutiveMistakes?: number;
  yoloModeToggled?: boolean;
  useAutoCondense?: boolean;
  strictPlanModeEnabled?: boolean;
  terminalOutputLineLimit?: number;
  customPrompt?: string;
  preferredLanguage?: string;
  subagentsEnabled?: boolean;
  clineWebToolsEnabled?: boolean;
  skillsEnabled?: boolean;
  worktreesEnabled?: boolean;
  optOutOfRemoteConfig?: boolean;
}

export interface AutoApprovalSettings {
  /** Ignored by the core unless greater than the current version. */
  version: number;
  actions: {
    readFiles?: boolean;
    readFilesExternally?: boolean;
    editFiles?: boolean;
    editFilesExternally?: boolean;
    executeSafeCommands?: boolean;
    executeAllCommands?: boolean;
    useBrowser?: boolean;
    useMcp?: boolean;
  };
  enableNotifications?: boolean;
}

export type AskResponseType = "yesButtonClicked" | "noButtonClicked" | "messageResponse";

export interface ProcessInfo {
  readonly processId: number;
  readonly version: string;
  readonly uptimeMs?: number;
}

/** The typed gRPC client of one Cline core. */
export interface ClineClient {
  /** `127.0.0.1:<port>` or `unix:/path`. */
  readonly address: string;
  readonly task: {
    /** Starts a task; returns its id. */
    newTask(req: { text: string; images?: string[]; files?: string[] }, opts?: CallOptions): Promise<string>;
    cancelTask(opts?: CallOptions): Promise<void>;
    clearTask(opts?: CallOptions): Promise<void>;
    askResponse(req: { responseType: AskResponseType; text?: string }, opts?: CallOptions): Promise<void>;
  };
  readonly ui: {
    /** Every message update (partial and final); ends when the signal aborts or the core closes it. */
    subscribeToPartialMessage(opts?: StreamOptions): AsyncIterable<ClineMessage>;
  };
  readonly state: {
    getLatestState(opts?: CallOptions): Promise<CoreState & Record<string, unknown>>;
    /** The whole state after every change (it grows with the task). */
    subscribeToState(opts?: StreamOptions): AsyncIterable<CoreState & Record<string, unknown>>;
    updateSettings(
      req: UpdateSettings & { apiConfiguration?: ApiConfiguration },
      opts?: CallOptions,
    ): Promise<void>;
    updateAutoApprovalSettings(req: AutoApprovalSettings, opts?: CallOptions): Promise<void>;
    togglePlanActMode(req: { mode: PlanActMode }, opts?: CallOptions): Promise<boolean>;
    flushPendingState(opts?: CallOptions): Promise<void>;
    getProcessInfo(opts?: CallOptions): Promise<ProcessInfo>;
  };
  readonly models: {
    updateApiConfigurationProto(
      req: { apiConfiguration: ApiConfiguration },
      opts?: CallOptions,
    ): Promise<void>;
  };
  /** Low-level unary call by full method name (`cline.StateService/getLatestState`), camelCase in and out. */
  unary(method: string, request: object, opts?: CallOptions): Promise<unknown>;
  /** Low-level server stream by full method name, camelCase out. */
  stream(method: string, request: object, opts?: StreamOptions): AsyncIterable<unknown>;
  close(): void;
}

export interface ClineClientOptions {
  /** `127.0.0.1:<port>`, `localhost:<port>` or `unix:/abs/path`. */
  readonly address: string;
  /** Deadline of calls that give none. Default 30 s. */
  readonly defaultDeadlineMs?: number;
  /** Descriptor set to load; default: the pinned package's `proto/descriptor_set.pb`. */
  readonly descriptorSet?: string;
  /**
   * The worker's per-trajectory core token: sent as `authorization: Bearer <token>` on every call
   * (the supervisor's gate in front of a remote core refuses calls without it).
   */
  readonly token?: string;
}

type Methods = Map<string, MethodDefinition<object, object>>;
const methodCache = new Map<string, Methods>();

/** Loads (once per path) every method of the descriptor set, keyed `package.Service/method`. */
function loadMethods(descriptorSet: string): Methods {
  const cached = methodCache.get(descriptorSet);
  if (cached) return cached;
  // keepCase is ignored by loadFileDescriptorSetFromBuffer: field names stay snake_case.
  const def = loadFileDescriptorSetFromBuffer(readFileSync(descriptorSet), {
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const methods: Methods = new Map();
  for (const [name, entry] of Object.entries(def)) {
    if (entry === null || typeof entry !== "object" || "format" in entry) continue;
    for (const [methodName, m] of Object.entries(entry as Record<string, MethodDefinition<object, object>>)) {
      if (!m || typeof m !== "object" || !("path" in m)) continue;
      methods.set(`${name}/${methodName}`, m);
      if (m.originalName) methods.set(`${name}/${m.originalName}`, m);
    }
  }
  methodCache.set(descriptorSet, methods);
  return methods;
}

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // The state grows with the task (every update resends all of it).
  "grpc.max_receive_message_length": 256 * 1024 * 1024,
  "grpc.max_send_message_length": 64 * 1024 * 1024,
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1000,
  "grpc.enable_retries": 0,
  // Each client (one per core, each its own address) keeps its subchannel in a pool of its own.
  // grpc-js's process-wide pool sweeps every target it ever saw every 10 s on the event loop and
  // never drops a target's key: with a core per trajectory that sweep grows with every trajectory
  // the runner ever ran (one ~40 ms stall of the loop at a thousand concurrent).
  "grpc.use_local_subchannel_pool": 1,
};

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("aborted", "AbortError");
}

/** What one client holds, shared by its functions: its options, the methods it knows, the channel. */
interface ClientState {
  readonly options: ClineClientOptions;
  readonly descriptorSet: string;
  readonly methods: Methods;
  readonly defaultDeadlineMs: number;
  readonly address: string;
  readonly client: grpc.Client;
}

function methodOf(st: ClientState, name: string): MethodDefinition<object, object> {
  const m = st.methods.get(name);
  if (!m)
    throw new ClineVendorError(ErrorCode.InvalidArgument, `no gRPC method '${name}' in ${st.descriptorSet}`, {
      hint: "use the full name, e.g. cline.StateService/getLatestState",
    });
  return m;
}

function unaryCall(st: ClientState, name: string, request: object, opts: CallOptions = {}): Promise<unknown> {
  const m = methodOf(st, name);
  const { signal } = opts;
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + (opts.deadlineMs ?? st.defaultDeadlineMs));
    const callOpts: grpc.CallOptions = { deadline };
    const metadata = new grpc.Metadata();
    if (st.options.token) metadata.set("authorization", `Bearer ${st.options.token}`);
    if (opts.waitForReady) metadata.setOptions({ waitForReady: true });
    let onAbort: (() => void) | undefined;
    const call = st.client.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      toSnakeKeys(request) as object,
      metadata,
      callOpts,
      (err, value) => {
        if (onAbort) signal?.removeEventListener("abort", onAbort);
        if (signal?.aborted) reject(abortReason(signal));
        else if (err) reject(new ClineRpcError(name, err.code, err.details, st.address, err));
        else resolve(toCamelKeys(value));
      },
    );
    if (signal) {
      onAbort = () => call.cancel();
      signal.addEventListener("abort", onAbort, { once: true });
    }
  });
}

/** A stream's error ends the iteration quietly when it is our own cancel (the caller aborted, or it already finished). */
export function isOwnCancel(code: grpc.status, aborted: boolean, done: boolean): boolean {
  return code === grpc.status.CANCELLED && (aborted || done);
}

/** One server stream as its iterator sees it: the messages not yet taken, and how it ended. */
interface StreamState {
  readonly queue: unknown[];
  done: boolean;
  failure: unknown;
  wake: (() => void) | undefined;
}

function nextOf(s: StreamState): Promise<IteratorResult<unknown>> {
  return (async () => {
    for (;;) {
      if (s.queue.length > 0) return { value: s.queue.shift(), done: false };
      if (s.failure !== undefined) {
        const f = s.failure;
        s.failure = undefined;
        throw f;
      }
      if (s.done) return { value: undefined, done: true };
      await new Promise<void>((r) => {
        s.wake = r;
      });
    }
  })();
}

/** Opens the server stream `name` and feeds its messages, its end and its error into a StreamState. */
function openStream(
  st: ClientState,
  name: string,
  request: object,
  opts: StreamOptions,
  convert: (v: unknown) => unknown,
): AsyncIterator<unknown> {
  const m = methodOf(st, name);
  const { signal } = opts;
  const metadata = new grpc.Metadata();
  metadata.set("request-id", randomUUID());
  if (st.options.token) metadata.set("authorization", `Bearer ${st.options.token}`);
  const call = st.client.makeServerStreamRequest(
    m.path,
    m.requestSerialize,
    m.responseDeserialize,
    toSnakeKeys(request) as object,
    metadata,
    {},
  );
  const s: StreamState = { queue: [], done: false, failure: undefined, wake: undefined };
  const notify = () => {
    s.wake?.();
    s.wake = undefined;
  };
  const finish = () => {
    s.done = true;
    signal?.removeEventListener("abort", onAbort);
    notify();
  };
  const onAbort = () => {
    call.cancel();
    finish();
  };
  call.on("data", (v: unknown) => {
    s.queue.push(convert(v));
    notify();
  });
  call.on("error", (err: grpc.ServiceError) => {
    // Our own cancel ends the iteration quietly; anything else is the core's doing.
    if (!isOwnCancel(err.code, signal?.aborted === true, s.done))
      s.failure = new ClineRpcError(name, err.code, err.details, st.address, err);
    finish();
  });
  call.on("end", finish);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  return {
    next: () => nextOf(s),
    async return(): Promise<IteratorResult<unknown>> {
      call.cancel();
      finish();
      return { value: undefined, done: true };
    },
  };
}

function streamCall(
  st: ClientState,
  name: string,
  request: object,
  opts: StreamOptions = {},
  convert: (v: unknown) => unknown = toCamelKeys,
): AsyncIterable<unknown> {
  methodOf(st, name);
  return { [Symbol.asyncIterator]: () => openStream(st, name, request, opts, convert) };
}

/** The fields of a proto `ClineMessage` that fromProtoMessage reads: one-word names, alike in both cases. */
const PARTIAL_FIELDS = ["ts", "type", "ask", "say", "text", "reasoning", "partial"] as const;

/**
 * A streamed partial message's fields the parser reads, picked as they came: their names are one
 * word, the same in snake_case and camelCase, so the deep key conversion of every streamed chunk
 * (the largest cost of the runner's loop with a thousand cores) is not needed for them. Pure.
 */
export function partialMessageFields(v: unknown): unknown {
  if (v === null || typeof v !== "object") return v;
  const m = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of PARTIAL_FIELDS) if (m[k] !== undefined) out[k] = m[k];
  return out;
}

const mapStream = <T>(source: AsyncIterable<unknown>, fn: (v: unknown) => T): AsyncIterable<T> => ({
  async *[Symbol.asyncIterator]() {
    for await (const v of source) yield fn(v);
  },
});

async function emptyCall(st: ClientState, name: string, req: object, opts?: CallOptions): Promise<void> {
  await unaryCall(st, name, req, opts);
}

/** `getProcessInfo`'s answer with the core's unset fields filled, pure. */
export function processInfoOf(r: {
  processId?: number;
  version?: string;
  uptimeMs?: number | null;
}): ProcessInfo {
  return {
    processId: r.processId ?? 0,
    version: r.version ?? "",
    ...(r.uptimeMs != null ? { uptimeMs: r.uptimeMs } : {}),
  };
}

function taskApi(st: ClientState): ClineClient["task"] {
  return {
    async newTask(req, opts) {
      const r = (await unaryCall(
        st,
        "cline.TaskService/newTask",
        { images: [], files: [], ...req },
        opts,
      )) as {
        value?: string;
      };
      return r.value ?? "";
    },
    cancelTask: (opts) => emptyCall(st, "cline.TaskService/cancelTask", {}, opts),
    clearTask: (opts) => emptyCall(st, "cline.TaskService/clearTask", {}, opts),
    askResponse: (req, opts) => emptyCall(st, "cline.TaskService/askResponse", req, opts),
  };
}

function stateApi(st: ClientState): ClineClient["state"] {
  return {
    async getLatestState(opts) {
      const r = (await unaryCall(st, "cline.StateService/getLatestState", {}, opts)) as {
        stateJson?: string;
      };
      return parseStateJson(r.stateJson ?? "{}");
    },
    subscribeToState: (opts) =>
      mapStream(streamCall(st, "cline.StateService/subscribeToState", {}, opts), (v) =>
        parseStateJson((v as { stateJson?: string }).stateJson ?? "{}"),
      ),
    updateSettings: (req, opts) => emptyCall(st, "cline.StateService/updateSettings", req, opts),
    updateAutoApprovalSettings: (req, opts) =>
      emptyCall(st, "cline.StateService/updateAutoApprovalSettings", req, opts),
    async togglePlanActMode(req, opts) {
      const r = (await unaryCall(st, "cline.StateService/togglePlanActModeProto", req, opts)) as {
        value?: boolean;
      };
      return r.value === true;
    },
    flushPendingState: (opts) => emptyCall(st, "cline.StateService/flushPendingState", {}, opts),
    async getProcessInfo(opts) {
      const r = await unaryCall(st, "cline.StateService/getProcessInfo", {}, opts);
      return processInfoOf(r as Parameters<typeof processInfoOf>[0]);
    },
  };
}

let pinnedDescriptorSet: string | undefined;

/**
 * The pinned package's descriptor set, resolved (and the install verified) once per process: a
 * client per trajectory re-read and re-parsed npm's lockfile on the runner's loop each time.
 */
function defaultDescriptorSet(): string {
  pinnedDescriptorSet ??= resolveClinePackage().descriptorSet;
  return pinnedDescriptorSet;
}

/** Creates a client for the core at `address`. Nothing connects until the first call. */
export function createClineClient(options: ClineClientOptions): ClineClient {
  const descriptorSet = options.descriptorSet ?? defaultDescriptorSet();
  const st: ClientState = {
    options,
    descriptorSet,
    methods: loadMethods(descriptorSet),
    defaultDeadlineMs: options.defaultDeadlineMs ?? 30_000,
    address: options.address,
    client: new grpc.Client(options.address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS),
  };
  return {
    address: st.address,
    task: taskApi(st),
    ui: {
      subscribeToPartialMessage: (opts) =>
        mapStream(
          streamCall(st, "cline.UiService/subscribeToPartialMessage", {}, opts, partialMessageFields),
          fromProtoMessage,
        ),
    },
    state: stateApi(st),
    models: {
      updateApiConfigurationProto: (req, opts) =>
        emptyCall(st, "cline.ModelsService/updateApiConfigurationProto", req, opts),
    },
    unary: (name, request, opts) => unaryCall(st, name, request, opts),
    stream: (name, request, opts) => streamCall(st, name, request, opts),
    close: () => st.client.close(),
  };
}
