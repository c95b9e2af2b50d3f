import { afterEach, describe, expect, it } from "vitest";
import { createNomadClient } from "../../src/client/client.js";
import { json, scriptedServer } from "../helpers/http-server.js";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe("status and agent", () => {
  it("status.leader returns the leader's address", async () => {
    const srv = await scriptedServer((_r, res) => json(res, 200, "10.1.2.3:4647"));
    const client = createNomadClient({ address: srv.url });
    cleanup.push(
      () => srv.close(),
      () => client.close(),
    );
    expect((await client.status.leader()).data).toBe("10.1.2.3:4647");
  });

  it("agent.version reads config.Version, falling back to the member's build tag", async () => {
    const answers = [
      {
        config: { Version: { Version: "2.0.6", VersionPrerelease: "", Revision: "abc" } },
        member: {},
        stats: {},
      },
      { config: { Version: { Version: "2.1.0", VersionPrerelease: "beta.1" } }, member: {} },
      { config: {}, member: { Tags: { build: "2.0.4" } } },
      { config: null, member: null },
    ];
    const srv = await scriptedServer((_r, res, n) => json(res, 200, answers[n - 1]));
    const client = createNomadClient({ address: srv.url });
    cleanup.push(
      () => srv.close(),
      () => client.close(),
    );
    expect(await client.agent.version()).toBe("2.0.6");
    expect(await client.agent.version()).toBe("2.1.0-beta.1");
    expect(await client.agent.version()).toBe("2.0.4");
    expect(await client.agent.version()).toBeUndefined();
    expect(srv.seen.every((s) => s.path === "/v1/agent/self")).toBe(true);
  });
});
