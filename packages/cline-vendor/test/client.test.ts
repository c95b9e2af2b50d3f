/**
 * The client against a real grpc-js server on loopback/unix sockets, built from the same
 * descriptor set as the core: what goes over the wire is snake_case, what callers see is
 * camelCase; deadlines, aborts and stream ends behave as documented. (The real core is driven in
 * tests/integration/cline.)
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { loadFileDescriptorSetFromBuffer } from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClineRpcError, createClineClient, rpcFailureKind } from "../src/client.js";
import { resolveClinePackage } from "../src/paths.js";
import { makeTempDir, type TempDir } from "./helpers.js";

type Handler = grpc.handleUnaryCall<unknown, unknown>;

let server: grpc.Server;
let tmp: TempDir;
let tcpAddress: string;
let unixAddress: string;
const received: Record<string, unknown> = {};
let streamCancelled = false;

beforeAll(async () => {
  tmp = await makeTempDir();
  const def = loadFileDescriptorSetFromBuffer(readFileSync(resolveClinePackage().descriptorSet), {
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const proto = grpc.loadPackageDefinition(def) as unknown as {
    cline: Record<string, { service: grpc.ServiceDefinition }>;
  };
  server = new grpc.Server();
  const unary =
    (name: string, reply: (req: unknown) => unknown): Handler =>
    (call, cb) => {
      received[name] = call.request;
      cb(null, reply(call.request));
    };
  server.addService(proto.cline["StateService"]!.service, {
    getProcessInfo: unary("getProcessInfo", () => ({ process_id: 4242, version: "3.52.0", uptime_ms: 7 })),
    getLatestState: unary("getLatestState", () => ({
      state_json: JSON.stringify({ clineMessages: [], autoApprovalSettings: { version: 9 }, mode: "act" }),
    })),
    updateSettings: unary("updateSettings", () => ({})),
  });
  server.addService(proto.cline["ModelsService"]!.service, {
    updateApiConfigurationProto: unary("updateApiConfigurationProto", () => ({})),
  });
  server.addService(proto.cline["TaskService"]!.service, {
    newTask: ((_call, cb) => setTimeout(() => cb(null, { value: "late" }), 3_000)) as Handler,
    cancelTask: ((_call, cb) =>
      cb({ code: grpc.status.INTERNAL, details: "handler threw: no task" })) as Handler,
  });
  server.addService(proto.cline["UiService"]!.service, {
    subscribeToPartialMessage: (call: grpc.ServerWritableStream<unknown, unknown>) => {
      let n = 0;
      const timer = setInterval(() => {
        n++;
        call.write({
          ts: 1000 + n,
          type: n === 1 ? "ASK" : "SAY",
          ask: "TOOL",
          say: "TEXT",
          text: `m${n}`,
          partial: false,
        });
      }, 20);
      call.on("cancelled", () => {
        streamCancelled = true;
        clearInterval(timer);
      });
    },
  });
  const bind = (addr: string) =>
    new Promise<number>((res, rej) =>
      server.bindAsync(addr, grpc.ServerCredentials.createInsecure(), (e, port) => (e ? rej(e) : res(port))),
    );
  tcpAddress = `127.0.0.1:${await bind("127.0.0.1:0")}`;
  unixAddress = `unix:${join(tmp.path, "core.sock")}`;
  await bind(unixAddress);
});

afterAll(async () => {
  server?.forceShutdown();
  await tmp?.cleanup();
});

describe("ClineClient", () => {
  it("sends snake_case and returns camelCase (tcp)", async () => {
    const client = createClineClient({ address: tcpAddress });
    try {
      await client.models.updateApiConfigurationProto({
        apiConfiguration: {
          openAiBaseUrl: "http://x/v1",
          openAiApiKey: "tok",
          actModeApiProvider: "OPENAI",
          actModeOpenAiModelId: "m",
        },
      });
      expect(received["updateApiConfigurationProto"]).toMatchObject({
        api_configuration: {
          open_ai_base_url: "http://x/v1",
          open_ai_api_key: "tok",
          act_mode_api_provider: "OPENAI",
          act_mode_open_ai_model_id: "m",
        },
      });
      await client.state.updateSettings({
        mode: "ACT",
        telemetrySetting: "disabled",
        enableCheckpointsSetting: false,
      });
      expect(received["updateSettings"]).toMatchObject({
        mode: "ACT",
        telemetry_setting: "disabled",
        enable_checkpoints_setting: false,
      });
      expect(await client.state.getProcessInfo()).toEqual({
        processId: 4242,
        version: "3.52.0",
        uptimeMs: 7,
      });
      const state = await client.state.getLatestState();
      expect(state.autoApprovalSettings?.version).toBe(9);
    } finally {
      client.close();
    }
  });

  it("works over a unix socket address", async () => {
    const client = createClineClient({ address: unixAddress });
    try {
      expect((await client.state.getProcessInfo()).processId).toBe(4242);
    } finally {
      client.close();
    }
  });

  it("maps a handler failure to ClineRpcError(kind internal) naming the method and address", async () => {
    const client = createClineClient({ address: tcpAddress });
    try {
      const err = await client.task.cancelTask().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ClineRpcError);
      expect(err).toMatchObject({
        kind: "internal",
        code: "E_CLINE_RPC",
        method: "cline.TaskService/cancelTask",
      });
      expect((err as Error).message).toContain(tcpAddress);
      expect((err as Error).message).toContain("handler threw: no task");
    } finally {
      client.close();
    }
  });

  it("enforces deadlines and aborts", async () => {
    const client = createClineClient({ address: tcpAddress });
    try {
      const t0 = Date.now();
      await expect(client.task.newTask({ text: "x" }, { deadlineMs: 200 })).rejects.toMatchObject({
        kind: "deadline",
      });
      expect(Date.now() - t0).toBeLessThan(2_000);
      const ac = new AbortController();
      setTimeout(() => ac.abort(new Error("stop now")), 100);
      await expect(client.task.newTask({ text: "x" }, { signal: ac.signal })).rejects.toThrow("stop now");
      await expect(
        client.state.getProcessInfo({ signal: AbortSignal.abort(new Error("pre")) }),
      ).rejects.toThrow("pre");
    } finally {
      client.close();
    }
  });

  it("a server stream is an async iterable of parsed messages that ends on abort", async () => {
    const client = createClineClient({ address: tcpAddress });
    try {
      const ac = new AbortController();
      const got: unknown[] = [];
      for await (const m of client.ui.subscribeToPartialMessage({ signal: ac.signal })) {
        got.push(m);
        if (got.length === 3) ac.abort();
      }
      expect(got[0]).toEqual({ ts: 1001, type: "ask", ask: "tool", text: "m1", partial: false });
      expect(got[1]).toMatchObject({ type: "say", say: "text", text: "m2" });
      await new Promise((r) => setTimeout(r, 100));
      expect(streamCancelled).toBe(true);
    } finally {
      client.close();
    }
  });

  it("an unreachable core is 'unavailable'", async () => {
    const client = createClineClient({ address: `unix:${join(tmp.path, "nobody.sock")}` });
    try {
      await expect(client.state.getProcessInfo({ deadlineMs: 2_000 })).rejects.toMatchObject({
        kind: "unavailable",
      });
    } finally {
      client.close();
    }
  });

  it("classifies every gRPC status", () => {
    expect(rpcFailureKind(grpc.status.UNAVAILABLE)).toBe("unavailable");
    expect(rpcFailureKind(grpc.status.DEADLINE_EXCEEDED)).toBe("deadline");
    expect(rpcFailureKind(grpc.status.INVALID_ARGUMENT)).toBe("rejected");
    expect(rpcFailureKind(grpc.status.PERMISSION_DENIED)).toBe("unauthenticated");
    for (let code = 0; code <= 16; code++) expect(typeof rpcFailureKind(code)).toBe("string");
  });

  it("refuses an unknown method by name", async () => {
    const client = createClineClient({ address: tcpAddress });
    try {
      expect(() => client.unary("cline.StateService/noSuchMethod", {})).toThrow(/no gRPC method/);
    } finally {
      client.close();
    }
  });
});
