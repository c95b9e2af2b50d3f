import { describe, expect, it } from "vitest";
import {
  backoffMs,
  callTimeout,
  connectHint,
  planCall,
  resendAfterConnectError,
  resendAfterStatus,
  resendOnFreshSocket,
  urlFor,
} from "../../src/client/call-plan.js";

const config = {
  address: "http://nomad.test:4646/prefix/",
  namespace: "ns1",
  region: "eu",
  timeoutMs: 30_000,
};

describe("urlFor", () => {
  it("keeps the address's base path and adds region, namespace, blocking and spec query", () => {
    const u = urlFor(
      config,
      { method: "GET", path: "/v1/jobs", query: { prefix: "fg-", tag: ["a", "b"], none: undefined, n: 3 } },
      { index: 7, waitMs: 5_000 },
    );
    expect(u.origin).toBe("http://nomad.test:4646");
    expect(u.pathname).toBe("/prefix/v1/jobs");
    expect(u.searchParams.get("region")).toBe("eu");
    expect(u.searchParams.get("namespace")).toBe("ns1");
    expect(u.searchParams.get("index")).toBe("7");
    expect(u.searchParams.get("wait")).toBe("5000ms");
    expect(u.searchParams.getAll("tag")).toEqual(["a", "b"]);
    expect(u.searchParams.get("n")).toBe("3");
    expect(u.searchParams.has("none")).toBe(false);
  });

  it("lets the call's namespace and region win over the config's", () => {
    const u = urlFor(config, { method: "GET", path: "/v1/jobs" }, { namespace: "other", region: "us" });
    expect(u.searchParams.get("namespace")).toBe("other");
    expect(u.searchParams.get("region")).toBe("us");
  });

  it("sets neither when config and call have none", () => {
    const u = urlFor(
      { ...config, namespace: undefined, region: undefined },
      { method: "GET", path: "/x" },
      {},
    );
    expect(u.search).toBe("");
  });
});

describe("callTimeout", () => {
  it("is the client's timeout when the call names none", () => {
    expect(callTimeout(config, {})).toEqual({ timeoutMs: 30_000, limit: "the Nomad client's timeoutMs" });
  });

  it("adds a blocking query's wait, its jitter and slack", () => {
    expect(callTimeout(config, { index: 1, waitMs: 16_000 }).timeoutMs).toBe(
      30_000 + 16_000 + 1_000 + 10_000,
    );
    expect(callTimeout(config, { index: 1 }).timeoutMs).toBe(
      Math.ceil(30_000 + 300_000 + 300_000 / 16 + 10_000),
    );
  });

  it("is the caller's own timeout under the caller's name", () => {
    expect(callTimeout(config, { index: 1, timeoutMs: 1_500.2, timeoutName: "cleanupTimeoutMs" })).toEqual({
      timeoutMs: 1_501,
      limit: "cleanupTimeoutMs",
    });
    expect(callTimeout(config, { timeoutMs: 10 }).limit).toBe("the call's timeoutMs");
  });
});

describe("planCall", () => {
  it("treats GET and DELETE as idempotent, POST and PUT not, unless the spec says", () => {
    expect(planCall(config, { method: "GET", path: "/a" }, {}).idempotent).toBe(true);
    expect(planCall(config, { method: "DELETE", path: "/a" }, {}).idempotent).toBe(true);
    expect(planCall(config, { method: "POST", path: "/a" }, {}).idempotent).toBe(false);
    expect(planCall(config, { method: "PUT", path: "/a" }, {}).idempotent).toBe(false);
    expect(planCall(config, { method: "POST", path: "/a", idempotent: true }, {}).idempotent).toBe(true);
    expect(planCall(config, { method: "GET", path: "/a", idempotent: false }, {}).idempotent).toBe(false);
  });

  it("names the path with its query, expects 200 by default and serialises the body", () => {
    const p = planCall(config, { method: "PUT", path: "/v1/x", body: { A: 1 }, expected: [200, 404] }, {});
    expect(p.path).toBe("/prefix/v1/x?region=eu&namespace=ns1");
    expect(p.expected).toEqual([200, 404]);
    expect(p.body).toBe('{"A":1}');
    const g = planCall(
      { ...config, namespace: undefined, region: undefined },
      { method: "GET", path: "/v1/y" },
      {},
    );
    expect(g.path).toBe("/prefix/v1/y");
    expect(g.expected).toEqual([200]);
    expect(g.body).toBeUndefined();
  });
});

describe("backoffMs", () => {
  const retry = { baseDelayMs: 100, maxDelayMs: 1_000 };
  it("doubles from the base per try, capped, jittered over its upper half", () => {
    expect(backoffMs(retry, 2, 0)).toBe(50);
    expect(backoffMs(retry, 2, 1)).toBe(100);
    expect(backoffMs(retry, 3, 1)).toBe(200);
    expect(backoffMs(retry, 4, 0.5)).toBe(300);
    expect(backoffMs(retry, 10, 1)).toBe(1_000);
  });
});

describe("resend rules", () => {
  it("resends a failed connection when idempotent or when the request never left", () => {
    expect(resendAfterConnectError(true, "ECONNRESET")).toBe(true);
    expect(resendAfterConnectError(true, undefined)).toBe(true);
    expect(resendAfterConnectError(false, "ECONNREFUSED")).toBe(true);
    expect(resendAfterConnectError(false, "ENOTFOUND")).toBe(true);
    expect(resendAfterConnectError(false, "ECONNRESET")).toBe(false);
    expect(resendAfterConnectError(false, undefined)).toBe(false);
  });

  it("resends on a fresh socket only a safe call reset on a reused one", () => {
    expect(resendOnFreshSocket(true, true, "ECONNRESET")).toBe(true);
    expect(resendOnFreshSocket(true, true, "EPIPE")).toBe(true);
    // a fresh socket's reset is the server's doing: the call's own retries (with backoff) decide
    expect(resendOnFreshSocket(true, false, "ECONNRESET")).toBe(false);
    // a reset request may have reached the server: never resent unless idempotent
    expect(resendOnFreshSocket(false, true, "ECONNRESET")).toBe(false);
    expect(resendOnFreshSocket(true, true, "ETIMEDOUT")).toBe(false);
    expect(resendOnFreshSocket(true, true, undefined)).toBe(false);
  });

  it("resends an unexpected status only for an idempotent call on 429 or 5xx", () => {
    expect(resendAfterStatus(true, 429)).toBe(true);
    expect(resendAfterStatus(true, 500)).toBe(true);
    expect(resendAfterStatus(true, 503)).toBe(true);
    expect(resendAfterStatus(true, 404)).toBe(false);
    expect(resendAfterStatus(true, 400)).toBe(false);
    expect(resendAfterStatus(false, 503)).toBe(false);
  });
});

describe("connectHint", () => {
  it("points at the TLS settings on a TLS failure, else at the address", () => {
    expect(connectHint("DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate", "https://n:4646")).toMatch(
      /NOMAD_CACERT/,
    );
    expect(connectHint(undefined, "SSL routines: wrong version number", "https://n:4646")).toMatch(
      /TLS failed/,
    );
    expect(connectHint("ECONNREFUSED", "connect ECONNREFUSED", "http://n:4646")).toBe(
      "is a Nomad agent listening at http://n:4646? (set NOMAD_ADDR)",
    );
  });
});
