import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findMirror, mirrorCandidates, repoNameOfUrl } from "../../src/tasks/repo-mirror.js";
import { tempDir } from "../helpers/temp-dir.js";

describe("repo mirrors", () => {
  it("names owner/repo of clone URLs", () => {
    expect(repoNameOfUrl("https://github.com/ratatui/ratatui")).toBe("ratatui/ratatui");
    expect(repoNameOfUrl("https://example.org/psf/requests.git")).toBe("psf/requests");
    expect(repoNameOfUrl("git@example.org:o/r.git")).toBe("o/r");
    expect(repoNameOfUrl("/srv/git/r")).toBeUndefined();
    expect(repoNameOfUrl("https://example.org/only-one")).toBeUndefined();
  });

  it("looks at DIR/owner/repo, DIR/owner/repo.git, DIR/owner__repo in that order", async () => {
    expect(mirrorCandidates("/m", "o/r")).toEqual(["/m/o/r", "/m/o/r.git", "/m/o__r", "/m/o+r/repo"]);
    await using tmp = await tempDir("fg-mirror-");
    const url = "https://example.org/o/r";
    expect(await findMirror(tmp.path, url)).toBeUndefined();
    expect(await findMirror(undefined, url)).toBeUndefined();
    await mkdir(join(tmp.path, "o__r"));
    expect(await findMirror(tmp.path, url)).toBe(join(tmp.path, "o__r"));
    await mkdir(join(tmp.path, "o", "r.git"), { recursive: true });
    expect(await findMirror(tmp.path, url)).toBe(join(tmp.path, "o", "r.git"));
  });
});
