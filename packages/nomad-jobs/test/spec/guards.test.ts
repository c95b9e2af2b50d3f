import { describe, expect, it } from "vitest";
import { assertRoutableUrl, idPart, isLoopbackHost } from "../../src/spec/guards.js";

describe("guards", () => {
  it("knows loopback and unspecified addresses", () => {
    for (const h of [
      "localhost",
      "api.localhost",
      "127.0.0.1",
      "127.8.9.1",
      "::1",
      "[::1]",
      "0.0.0.0",
      "::",
      "::ffff:127.0.0.1",
    ]) {
      expect(isLoopbackHost(h), h).toBe(true);
    }
    for (const h of ["10.0.0.1", "gateway.internal", "192.168.1.20", "::ffff:10.0.0.1", "fe80::1"]) {
      expect(isLoopbackHost(h), h).toBe(false);
    }
  });

  it("accepts routable http(s) URLs and names what is wrong otherwise", () => {
    expect(assertRoutableUrl("http://10.0.0.5:8089/v1", "gw").host).toBe("10.0.0.5:8089");
    expect(() => assertRoutableUrl("ftp://10.0.0.5/", "gw")).toThrow("must be http or https");
    expect(() => assertRoutableUrl("10.0.0.5:80", "gw")).toThrow();
    expect(() => assertRoutableUrl("not a url", "gw")).toThrow("is not a URL");
  });

  it("makes Nomad-safe id parts", () => {
    expect(idPart("my task/with spaces!")).toBe("my-task-with-spaces");
    expect(idPart("a".repeat(100), 10)).toBe("aaaaaaaaaa");
    expect(idPart("///")).toBe("x");
  });
});
