import { describe, expect, it } from "vitest";
import type { ImageRecord, ImageRecords } from "../../src/images/targets.js";
import {
  chooseWorkerImage,
  imageRefFor,
  missingImagesMessage,
  resolveWorkerImages,
} from "../../src/images/worker-images.js";
import { WorkerImageProvenance } from "../../src/run-format/schema.js";

function rec(kind: ImageRecord["kind"], id: string, over: Partial<ImageRecord> = {}): ImageRecord {
  const name = kind === "profile" ? `flakegym/${id}-env` : `flakegym/snapshot-${id}`;
  const tag = "0123456789abcdfghijklmnpqrsvwxyz";
  return {
    kind,
    id,
    package: kind === "profile" ? `${id}-env-container` : `snapshot-${id}`,
    name,
    tag,
    storePath: `/nix/store/${tag}-${name.split("/")[1]}.tar.gz`,
    imageId: `sha256:${id.padEnd(64, "0").slice(0, 64)}`,
    loadedAs: `localhost/${name}:${tag}`,
    flakeRef: "git+file:///src/flakegym",
    recordedAt: "2026-11-23T10:00:00.000Z",
    ...over,
  };
}

const records: ImageRecords = {
  images: [rec("profile", "node"), rec("profile", "rust"), rec("snapshot", "ratatui-2148")],
};

describe("chooseWorkerImage", () => {
  it("prefers the task's snapshot image, else its profile's, else none", () => {
    expect(chooseWorkerImage(records, { id: "ratatui-2148", profile: "rust" })?.kind).toBe("snapshot");
    expect(chooseWorkerImage(records, { id: "tinygauge-vertical", profile: "rust" })?.name).toBe(
      "flakegym/rust-env",
    );
    expect(chooseWorkerImage(records, { id: "stats-empty-mean", profile: "python" })).toBeUndefined();
  });

  it("takes the newest record of an id (records are kept newest last)", () => {
    const newer = rec("profile", "node", {
      tag: "z".repeat(32),
      loadedAs: "localhost/flakegym/node-env:new",
    });
    const r = chooseWorkerImage({ images: [...records.images, newer] }, { id: "x", profile: "node" });
    expect(r?.loadedAs).toBe("localhost/flakegym/node-env:new");
  });
});

describe("imageRefFor", () => {
  it("is the local reference for podman and the pushed digest for Nomad", () => {
    const r = rec("profile", "go", { pushed: "registry.example/flakegym/go-env@sha256:ab" });
    expect(imageRefFor(r, "podman")).toBe(r.loadedAs);
    expect(imageRefFor(r, "nomad")).toBe("registry.example/flakegym/go-env@sha256:ab");
    expect(imageRefFor(rec("profile", "go"), "nomad")).toBeUndefined();
  });
});

describe("resolveWorkerImages", () => {
  it("maps every task to its image's provenance", () => {
    const r = resolveWorkerImages(
      records,
      [
        { id: "ratatui-2148", profile: "rust" },
        { id: "paginate-last-page", profile: "node" },
      ],
      "podman",
    );
    expect(r.kind).toBe("ok");
    if (r.kind !== "ok") return;
    const node = r.images.get("paginate-last-page")!;
    expect(node).toEqual({
      name: "flakegym/node-env",
      tag: records.images[0]!.tag,
      kind: "profile",
      digest: records.images[0]!.imageId,
      storePath: records.images[0]!.storePath,
      ref: records.images[0]!.loadedAs,
    });
    expect(WorkerImageProvenance.parse(node)).toEqual(node);
    expect(r.images.get("ratatui-2148")?.name).toBe("flakegym/snapshot-ratatui-2148");
  });

  it("names each task without an image and the command that makes it", () => {
    const r = resolveWorkerImages(
      records,
      [
        { id: "stats-empty-mean", profile: "python" },
        { id: "paginate-last-page", profile: "node" },
      ],
      "podman",
    );
    expect(r.kind).toBe("missing");
    if (r.kind !== "missing") return;
    expect(r.missing.map((m) => [m.taskId, m.command])).toEqual([
      ["stats-empty-mean", "flakegym images load --profile python"],
    ]);
    const msg = missingImagesMessage(r.missing, "/cache/images.json", {
      kind: "unavailable",
      reason: "nix (Nix) 2.8.0 cannot evaluate nixpkgs (it needs Nix >= 2.18)",
      whatToRun: "on a machine with Nix >= 2.18 …",
    });
    expect(msg).toContain("task stats-empty-mean (profile python): no image recorded");
    expect(msg).toContain("run: flakegym images load --profile python");
    expect(msg).toContain("/cache/images.json");
    expect(msg).toContain("cannot build them: nix (Nix) 2.8.0");
  });
});

describe("resolveWorkerImages for Nomad", () => {
  it("takes only a task's snapshot image (the work tree comes from the image), by pushed digest", () => {
    const pushed = rec("snapshot", "ratatui-2148", { pushed: "registry.example/flakegym/snap@sha256:cd" });
    const r = resolveWorkerImages(
      { images: [...records.images, pushed] },
      [
        { id: "ratatui-2148", profile: "rust" },
        { id: "tinygauge-vertical", profile: "rust" },
      ],
      "nomad",
    );
    expect(r.kind).toBe("missing");
    if (r.kind !== "missing") return;
    expect(r.missing.map((m) => [m.taskId, m.command])).toEqual([
      ["tinygauge-vertical", "flakegym images load --task tinygauge-vertical --push <registry>"],
    ]);
    const ok = resolveWorkerImages({ images: [pushed] }, [{ id: "ratatui-2148", profile: "rust" }], "nomad");
    expect(ok.kind === "ok" && ok.images.get("ratatui-2148")?.ref).toBe(
      "registry.example/flakegym/snap@sha256:cd",
    );
  });
});
