import { describe, expect, it } from "vitest";
import { DISPATCH_PAYLOAD_LIMIT, dispatchBody } from "../../src/client/jobs.js";

describe("dispatchBody", () => {
  it("sends meta, a base64 payload (string or bytes) and the id prefix template", () => {
    expect(dispatchBody("p", { meta: { a: "1" }, payload: "hé", idPrefixTemplate: "t1" })).toEqual({
      JobID: "p",
      Meta: { a: "1" },
      Payload: Buffer.from("hé", "utf8").toString("base64"),
      IdPrefixTemplate: "t1",
    });
    expect(dispatchBody("p", { payload: new Uint8Array([0, 255]) }).Payload).toBe("AP8=");
  });

  it("sends empty meta, leaves out an absent payload and an empty template, keeps an empty payload", () => {
    expect(dispatchBody("p", {})).toEqual({ JobID: "p", Meta: {} });
    expect(dispatchBody("p", { payload: "", idPrefixTemplate: "" })).toEqual({
      JobID: "p",
      Meta: {},
      Payload: "",
    });
  });

  it("accepts exactly 16 KiB and refuses one byte more, naming the size", () => {
    expect(() => dispatchBody("p", { payload: new Uint8Array(DISPATCH_PAYLOAD_LIMIT) })).not.toThrow();
    expect(() => dispatchBody("p", { payload: "x".repeat(DISPATCH_PAYLOAD_LIMIT + 1) })).toThrow(
      new RangeError(`dispatch payload of 16385 bytes exceeds Nomad's limit of 16384 bytes`),
    );
  });
});
