import { describe, expect, it } from "vitest";
import { checkWorkerDriver, RAW_EXEC_MISSING_ISOLATION, WorkerDriver } from "../../src/spec/worker-driver.js";
import { DIGEST } from "../helpers/worker-input.js";

const check = (d: unknown) => () => checkWorkerDriver(WorkerDriver.parse(d));

describe("worker drivers", () => {
  it("container images must be pinned by digest unless allowMutableTag, on docker and podman alike", () => {
    for (const driver of ["docker", "podman"]) {
      expect(check({ driver, image: `img@${DIGEST}` })).not.toThrow();
      expect(check({ driver, image: "img:latest" })).toThrow(
        "worker image 'img:latest' is not pinned by digest",
      );
      expect(check({ driver, image: "img:latest", allowMutableTag: true })).not.toThrow();
    }
  });

  it("container network modes that open or share a stack are refused", () => {
    expect(check({ driver: "docker", image: `img@${DIGEST}`, networkMode: "host" })).toThrow();
    expect(check({ driver: "podman", image: `img@${DIGEST}`, networkMode: "none" })).toThrow();
  });

  it("raw_exec is refused unless allowUnisolated, naming every gap; nix needs no such flag", () => {
    const raw = check({ driver: "raw_exec", command: "/bin/w" });
    for (const gap of RAW_EXEC_MISSING_ISOLATION) expect(raw).toThrow(gap);
    expect(check({ driver: "raw_exec", command: "/bin/w", allowUnisolated: true })).not.toThrow();
    expect(check({ driver: "nix", flake: ".#worker", command: "flakegym-worker" })).not.toThrow();
  });

  it("the schemas are strict and check a flake output reference", () => {
    expect(WorkerDriver.safeParse({ driver: "docker", image: "i", runtim: "runsc" }).success).toBe(false);
    expect(WorkerDriver.safeParse({ driver: "podman", image: "i", runtime: "runsc" }).success).toBe(false);
    expect(WorkerDriver.safeParse({ driver: "nix", flake: ".", command: "w" }).success).toBe(false);
    expect(WorkerDriver.safeParse({ driver: "exec", command: "w" }).success).toBe(false);
  });
});
