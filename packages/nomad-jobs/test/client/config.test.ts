import { describe, expect, it } from "vitest";
import { DEFAULT_NOMAD_ADDR, nomadConfigFromEnv } from "../../src/client/config.js";
import { NomadError } from "../../src/client/errors.js";

describe("nomadConfigFromEnv", () => {
  it("reads the same variables as the nomad CLI", () => {
    const c = nomadConfigFromEnv({
      NOMAD_ADDR: "https://nomad.internal:4646",
      NOMAD_TOKEN: "secret-id",
      NOMAD_NAMESPACE: "rl",
      NOMAD_REGION: "eu",
      NOMAD_CACERT: "/etc/nomad/ca.pem",
      NOMAD_CLIENT_CERT: "/etc/nomad/cli.pem",
      NOMAD_CLIENT_KEY: "/etc/nomad/cli-key.pem",
      NOMAD_SKIP_VERIFY: "false",
      NOMAD_TLS_SERVER_NAME: "server.global.nomad",
    });
    expect(c).toMatchObject({
      address: "https://nomad.internal:4646",
      token: "secret-id",
      namespace: "rl",
      region: "eu",
      tls: {
        caCert: "/etc/nomad/ca.pem",
        clientCert: "/etc/nomad/cli.pem",
        clientKey: "/etc/nomad/cli-key.pem",
        skipVerify: false,
        serverName: "server.global.nomad",
      },
    });
  });

  it("defaults to the local agent and ignores empty variables", () => {
    const c = nomadConfigFromEnv({ NOMAD_ADDR: "", NOMAD_TOKEN: "" });
    expect(c.address).toBe(DEFAULT_NOMAD_ADDR);
    expect(c.token).toBeUndefined();
    expect(nomadConfigFromEnv({ NOMAD_SKIP_VERIFY: "1" }).tls.skipVerify).toBe(true);
  });

  it("names the bad variable and what to do", () => {
    const err = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e as NomadError;
      }
      throw new Error("did not throw");
    };
    const a = err(() => nomadConfigFromEnv({ NOMAD_ADDR: "127.0.0.1:4646" }));
    expect(a).toBeInstanceOf(NomadError);
    expect(a.code).toBe("E_NOMAD_CONFIG");
    expect(a.message).toContain("'address': must be an http:// or https:// URL");
    expect(err(() => nomadConfigFromEnv({ NOMAD_SKIP_VERIFY: "yes" })).message).toBe(
      "NOMAD_SKIP_VERIFY='yes' is not a boolean",
    );
    expect(err(() => nomadConfigFromEnv({ NOMAD_CLIENT_CERT: "/c.pem" })).message).toContain(
      "NOMAD_CLIENT_CERT and NOMAD_CLIENT_KEY must be set together",
    );
  });
});
