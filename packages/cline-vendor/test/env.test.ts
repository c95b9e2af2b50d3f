import { describe, expect, it } from "vitest";
import { buildCoreEnv, CORE_ENV_ALLOW_LIST, looksSecret } from "../src/env.js";
import { ClineVendorError } from "../src/errors.js";

describe("the core's environment", () => {
  const runner = {
    PATH: "/usr/bin:/bin",
    LANG: "C.UTF-8",
    TZ: "UTC",
    OPENAI_API_KEY: "sk-runner",
    ANTHROPIC_API_KEY: "sk-ant-runner",
    AWS_SECRET_ACCESS_KEY: "aws",
    NOMAD_TOKEN: "nomad",
    SOME_RANDOM_VAR: "x",
    HOME: "/root",
  };

  it("keeps only the allow-list, sets HOME, adds explicit extras", () => {
    expect(buildCoreEnv(runner, "/tmp/h", { FLAKEGYM_TASK: "t1" })).toEqual({
      PATH: "/usr/bin:/bin",
      LANG: "C.UTF-8",
      TZ: "UTC",
      HOME: "/tmp/h",
      FLAKEGYM_TASK: "t1",
    });
  });

  it("never lets the runner's credentials through", () => {
    const env = buildCoreEnv(runner, "/tmp/h");
    for (const v of Object.values(env))
      expect(["sk-runner", "sk-ant-runner", "aws", "nomad"]).not.toContain(v);
    for (const name of CORE_ENV_ALLOW_LIST) expect(looksSecret(name)).toBe(false);
  });

  it("gives a PATH even when the runner has none", () => {
    expect(buildCoreEnv({}, "/h").PATH).toBe("/usr/local/bin:/usr/bin:/bin");
  });

  it.each(["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MY_SECRET", "DB_PASSWORD", "HF_APIKEY"])(
    "refuses the explicit credential-like variable %s",
    (name) => {
      let err: unknown;
      try {
        buildCoreEnv(runner, "/h", { [name]: "x" });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ClineVendorError);
      expect(err).toMatchObject({ code: "E_CLINE_ARGUMENT" });
      expect((err as Error).message).toContain(name);
    },
  );
});
