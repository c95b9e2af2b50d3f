import { describe, expect, it } from "vitest";
import { checkAllowedUpstreams, upstreamProblem, withoutModelKeys } from "../../src/serve/upstream-allow.js";

describe("upstreamProblem", () => {
  const allowed = ["http://10.0.0.7:8000/v1", "https://infer.example/team-a/"];

  it("allows an allowed endpoint and the paths under it", () => {
    expect(upstreamProblem("http://10.0.0.7:8000/v1", allowed)).toBeUndefined();
    expect(upstreamProblem("http://10.0.0.7:8000/v1/", allowed)).toBeUndefined();
    expect(upstreamProblem("https://infer.example/team-a/v1", allowed)).toBeUndefined();
  });

  it("refuses another host, port, scheme or a path that only shares a prefix", () => {
    for (const url of [
      "http://169.254.169.254/latest/meta-data",
      "http://10.0.0.7:8001/v1",
      "https://10.0.0.7:8000/v1",
      "http://10.0.0.7:8000/v10",
      "https://infer.example/team-ab/v1",
      "http://10.0.0.7:8000/",
    ]) {
      expect(upstreamProblem(url, allowed), url).toContain("is not under any endpoint this server allows");
    }
    expect(upstreamProblem("http://user:pw@10.0.0.7:8000/v1", allowed)).toContain("credentials");
    expect(upstreamProblem("nope", allowed)).toContain("is not a URL");
  });

  it("with nothing allowed refuses every endpoint, naming the flag", () => {
    expect(upstreamProblem("http://10.0.0.7:8000/v1", [])).toContain("--allow-upstream");
  });

  it("checkAllowedUpstreams names a bad flag value", () => {
    expect(() => checkAllowedUpstreams(["ftp://x/v1"])).toThrow(
      "--allow-upstream 'ftp://x/v1' is not an http(s) URL",
    );
    expect(() => checkAllowedUpstreams(["http://10.0.0.7:8000/v1"])).not.toThrow();
  });

  it("withoutModelKeys drops the upstream keys and keeps the rest", () => {
    const env = { OPENAI_API_KEY: "sk-1", ANTHROPIC_API_KEY: "sk-2", PATH: "/bin" };
    expect(withoutModelKeys(env)).toEqual({ PATH: "/bin" });
    expect(env.OPENAI_API_KEY).toBe("sk-1"); // the caller's env is untouched
  });
});
