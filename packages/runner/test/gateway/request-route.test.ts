import { describe, expect, it } from "vitest";
import { requestRefusal, routeOf, tokenOf } from "../../src/gateway/request-route.js";
import { originOf } from "../../src/gateway/server.js";

describe("routeOf: what a request's path names", () => {
  it("the health check, an OpenAI or Anthropic endpoint of a trajectory (query ignored, id decoded), or nothing", () => {
    expect(routeOf("/healthz")).toEqual({ kind: "health" });
    expect(routeOf("/healthz?x=1")).toEqual({ kind: "health" });
    expect(routeOf("/t/t-1/v1/chat/completions?beta=true")).toEqual({
      kind: "call",
      trajectoryId: "t-1",
      protocol: "openai",
    });
    expect(routeOf("/t/a%2Eb/v1/messages")).toEqual({
      kind: "call",
      trajectoryId: "a.b",
      protocol: "anthropic",
    });
    expect(routeOf("/t/t-1/v1/models")).toEqual({ kind: "none", protocol: "openai" });
    expect(routeOf("/t/a/b/v1/messages")).toEqual({ kind: "none", protocol: "openai" });
  });

  it("a bad %-escape in the id is malformed: a 400 naming the path, never a fault", () => {
    const route = routeOf("/t/%E0%A4%A/v1/messages");
    expect(route).toEqual({ kind: "malformed", protocol: "anthropic" });
    const r = requestRefusal({
      method: "POST",
      url: "/t/%E0%A4%A/v1/messages",
      route,
      expectedToken: undefined,
      presentedToken: undefined,
      registered: 0,
    });
    expect(r).toMatchObject({ status: 400, type: "invalid_request_error" });
    expect(r!.message).toContain("/t/%E0%A4%A/v1/messages");
  });
});

describe("tokenOf: the API key a request presents", () => {
  it("a Bearer authorization (any case), else x-api-key, else none", () => {
    expect(tokenOf({ authorization: "Bearer  fg-abc " })).toBe("fg-abc");
    expect(tokenOf({ authorization: "bearer fg-abc" })).toBe("fg-abc");
    expect(tokenOf({ authorization: "Basic xyz", "x-api-key": " fg-key " })).toBe("fg-key");
    expect(tokenOf({ authorization: "Basic xyz" })).toBeUndefined();
    expect(tokenOf({})).toBeUndefined();
  });
});

describe("requestRefusal: whether a request to a trajectory's endpoint is served, checked in order", () => {
  const call = routeOf("/t/t-1/v1/chat/completions");
  const base = {
    method: "POST",
    url: "/t/t-1/v1/chat/completions",
    route: call,
    expectedToken: "fg-right",
    presentedToken: "fg-right",
    registered: 2,
  };

  it("serves a POST with the trajectory's token", () => {
    expect(requestRefusal(base)).toBeUndefined();
  });

  it("404 for no route, naming the routes there are", () => {
    const r = requestRefusal({ ...base, method: "GET", url: "/v1/models?x", route: routeOf("/v1/models") });
    expect(r).toEqual({
      status: 404,
      message:
        "flakegym gateway: no route for GET /v1/models; routes are POST /t/<trajectoryId>/v1/chat/completions and POST /t/<trajectoryId>/v1/messages",
      type: "not_found_error",
    });
  });

  it("404 for an unknown trajectory before the method or key is looked at", () => {
    const r = requestRefusal({ ...base, method: "GET", expectedToken: undefined, presentedToken: undefined });
    expect(r).toEqual({
      status: 404,
      message:
        "flakegym gateway: unknown trajectory 't-1' (2 registered); it was never registered or has been unregistered",
      type: "not_found_error",
    });
  });

  it("405 for another method before the key; 401 for a wrong or missing key", () => {
    expect(requestRefusal({ ...base, method: "GET", presentedToken: undefined })).toEqual({
      status: 405,
      message: "flakegym gateway: /t/t-1/v1/chat/completions takes POST, got GET",
      type: "invalid_request_error",
    });
    for (const presentedToken of ["fg-wrong", undefined, ""])
      expect(requestRefusal({ ...base, presentedToken })).toEqual({
        status: 401,
        message: "flakegym gateway: wrong or missing API key for trajectory 't-1'",
        type: "authentication_error",
      });
  });
});

describe("originOf: a TCP listener's origin", () => {
  it("brackets an IPv6 host", () => {
    expect(originOf({ address: "127.0.0.1", family: "IPv4", port: 8080 })).toBe("http://127.0.0.1:8080");
    expect(originOf({ address: "::1", family: "IPv6", port: 9 })).toBe("http://[::1]:9");
  });
});
