import { describe, expect, it } from "vitest";
import { parseGatewayAdvertise, resolvePolicyBaseUrl } from "../../../src/workers/nomad/gateway.js";

describe("gateway address for allocations", () => {
  it("parses host:port and [v6]:port", () => {
    expect(parseGatewayAdvertise("10.0.0.5:8089")).toBe("10.0.0.5:8089");
    expect(parseGatewayAdvertise(" runner.internal:80 ")).toBe("runner.internal:80");
    expect(parseGatewayAdvertise("[fd00::5]:8089")).toBe("[fd00::5]:8089");
  });

  it("rejects loopback and malformed values with what to do", () => {
    for (const v of ["127.0.0.1:8089", "localhost:1", "[::1]:9", "0.0.0.0:80"]) {
      expect(() => parseGatewayAdvertise(v), v).toThrow("is a loopback address");
    }
    for (const v of ["10.0.0.5", "http://10.0.0.5:80", "10.0.0.5:0", "10.0.0.5:99999", ""]) {
      expect(() => parseGatewayAdvertise(v), v).toThrow("is not host:port");
    }
  });

  it("rewrites the gateway URL's host:port, keeping its path", () => {
    expect(resolvePolicyBaseUrl({ url: "http://127.0.0.1:8089/t/abc/v1" }, "10.0.0.5:9000")).toBe(
      "http://10.0.0.5:9000/t/abc/v1",
    );
    expect(resolvePolicyBaseUrl({ url: "http://gw.internal:8089/v1/" })).toBe("http://gw.internal:8089/v1");
  });

  it("a loopback URL without --gateway-advertise, or only a socket, is refused naming the flag", () => {
    const err = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e as Error & { code: string; hint: string };
      }
      throw new Error("did not throw");
    };
    const a = err(() => resolvePolicyBaseUrl({ url: "http://127.0.0.1:8089/v1" }));
    expect(a.code).toBe("E_NOMAD_GATEWAY");
    expect(a.hint).toContain("--gateway-advertise");
    expect(err(() => resolvePolicyBaseUrl({ socketPath: "/run/gw.sock" })).message).toContain(
      "only a unix socket",
    );
  });
});
