import { describe, expect, it } from "vitest";
import {
  hubCacheDir,
  parseHfRef,
  pickSplitFile,
  repoFolder,
  splitOfFile,
} from "../../src/tasks/hf-dataset.js";

describe("hf: dataset references", () => {
  it("parses org/name, revision and split; other values are paths", () => {
    expect(parseHfRef("rows.jsonl")).toBeUndefined();
    expect(parseHfRef("hf:princeton-nlp/SWE-bench_Verified")).toEqual({
      repo: "princeton-nlp/SWE-bench_Verified",
      revision: "main",
      split: undefined,
    });
    expect(parseHfRef("hf:a/b@v1.0:test")).toEqual({ repo: "a/b", revision: "v1.0", split: "test" });
    expect(() => parseHfRef("hf:a")).toThrow(/not a Hugging Face dataset reference/);
    expect(() => parseHfRef("hf:a/../b")).toThrow(/not a Hugging Face dataset reference/);
    expect(() => parseHfRef("hf:a/b@../../x")).toThrow(/not a Hugging Face dataset reference/);
  });
  it("finds the cache as the hub library does", () => {
    expect(hubCacheDir({ HF_HUB_CACHE: "/c" }, "/h")).toBe("/c");
    expect(hubCacheDir({ HF_HOME: "/hf" }, "/h")).toBe("/hf/hub");
    expect(hubCacheDir({ XDG_CACHE_HOME: "/x" }, "/h")).toBe("/x/huggingface/hub");
    expect(hubCacheDir({}, "/h")).toBe("/h/.cache/huggingface/hub");
    expect(repoFolder("princeton-nlp/SWE-bench_Verified")).toBe(
      "datasets--princeton-nlp--SWE-bench_Verified",
    );
  });
  it("reads a file's split from the hub's names", () => {
    expect(splitOfFile("data/test-00000-of-00001.parquet")).toBe("test");
    expect(splitOfFile("default/train/0000.parquet")).toBe("train");
    expect(splitOfFile("dev.jsonl")).toBe("dev");
  });
  it("picks the one shard of the split, or says why not", () => {
    const files = ["README.md", "data/test-00000-of-00001.parquet", "data/dev-00000-of-00001.parquet"];
    expect(pickSplitFile(files, "test")).toEqual({ file: "data/test-00000-of-00001.parquet" });
    expect(pickSplitFile(files, undefined)).toEqual({
      problem: "it has several splits (dev, test): add :<split>",
    });
    expect(pickSplitFile(files, "train")).toEqual({ problem: "no split 'train' (it has dev, test)" });
    expect(pickSplitFile(["data/test-00000-of-00001.parquet"], undefined)).toEqual({
      file: "data/test-00000-of-00001.parquet",
    });
    expect(pickSplitFile(["README.md"], undefined)).toEqual({
      problem: "its snapshot holds no .parquet or .jsonl file",
    });
    expect(
      pickSplitFile(["data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"], "train"),
    ).toMatchObject({ problem: expect.stringMatching(/^split 'train' is 2 shards/) });
  });
});
