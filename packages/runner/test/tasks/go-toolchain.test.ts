import { describe, expect, it } from "vitest";
import { debianBaseOf } from "../../src/tasks/debian-base.js";
import { goArchOf, goImageVersion, newestPatch } from "../../src/tasks/go-toolchain.js";

describe("FROM golang:<version> served by Go's own distribution (the toolchain module)", () => {
  it("reads the version a golang tag names; a tag without one keeps Debian's Go", () => {
    // Eeeeye/talents-135258-durable-relay-integrity's FROM line
    expect(
      goImageVersion(
        "golang:1.22.12-bookworm@sha256:3d699e4d15d0f8f13c9195c0632a16702b8cbdece2955af1c23b37ae5d55a253",
      ),
    ).toBe("1.22.12");
    expect(goImageVersion("docker.io/library/golang:1.22")).toBe("1.22");
    expect(goImageVersion("golang:1.23-alpine")).toBe("1.23");
    expect(goImageVersion("golang:latest")).toBeUndefined();
    expect(goImageVersion("golang")).toBeUndefined();
    expect(goImageVersion("python:3.12")).toBeUndefined();
    expect(debianBaseOf("golang:latest", "bookworm")).toMatchObject({
      packages: expect.arrayContaining(["golang-go"]),
    });
  });

  it("its base is Debian with the image's C toolchain, make and git, and no Debian Go", () => {
    const b = debianBaseOf("golang:1.22.12-bookworm", "bookworm");
    expect(b).toMatchObject({ packages: expect.arrayContaining(["gcc", "make", "git", "libc6-dev"]) });
    expect("packages" in b && b.packages.includes("golang-go")).toBe(false);
    expect("differences" in b && b.differences).toMatch(
      /Go 1\.22\.12 from the Go module proxy's golang\.org\/toolchain/,
    );
  });

  it("resolves a minor to its newest patch for the architecture", () => {
    const listed = [
      "v0.0.1-go1.22.2.linux-amd64",
      "v0.0.1-go1.22.12.linux-amd64",
      "v0.0.1-go1.22.12.linux-arm64",
      "v0.0.1-go1.22rc1.linux-amd64",
      "v0.0.1-go1.23.0.linux-amd64",
    ];
    expect(newestPatch("1.22", listed, "amd64")).toBe("1.22.12");
    expect(newestPatch("1.21", listed, "amd64")).toBeUndefined();
    expect(goArchOf("amd64")).toBe("amd64");
    expect(goArchOf("i386")).toBe("386");
  });
});
