import { describe, expect, it } from "vitest";
import { hours, minutes, seconds } from "../../src/duration.js";
import { canonicalizeJob } from "../../src/spec/canonicalize.js";
import type { Job } from "../../src/spec/job.js";

const minimal = (type?: Job["Type"]): Job => ({
  ID: "example",
  ...(type ? { Type: type } : {}),
  TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "raw_exec", Config: { command: "/bin/true" } }] }],
});

describe("canonicalizeJob fills Nomad's defaults", () => {
  it("job level: name from id, namespace, region, priority, type, datacenters, node pool", () => {
    const j = canonicalizeJob(minimal());
    expect(j).toMatchObject({
      ID: "example",
      Name: "example",
      Namespace: "default",
      Region: "global",
      Priority: 50,
      Type: "service",
      AllAtOnce: false,
      Datacenters: ["*"],
      NodePool: "default",
    });
  });

  it("batch groups get batch restart and reschedule defaults, disk, count", () => {
    const g = canonicalizeJob(minimal("batch")).TaskGroups[0]!;
    expect(g.Count).toBe(1);
    expect(g.EphemeralDisk).toEqual({ Sticky: false, Migrate: false, SizeMB: 300 });
    expect(g.RestartPolicy).toEqual({
      Attempts: 3,
      Interval: hours(24),
      Delay: seconds(15),
      Mode: "fail",
      RenderTemplates: false,
    });
    expect(g.ReschedulePolicy).toEqual({
      Attempts: 1,
      Interval: hours(24),
      Delay: seconds(5),
      DelayFunction: "constant",
      MaxDelay: 0,
      Unlimited: false,
    });
  });

  it("service groups get service defaults; system jobs get no reschedule policy", () => {
    const s = canonicalizeJob(minimal("service")).TaskGroups[0]!;
    expect(s.RestartPolicy).toMatchObject({ Attempts: 2, Interval: minutes(30) });
    expect(s.ReschedulePolicy).toMatchObject({ Unlimited: true, DelayFunction: "exponential" });
    expect(canonicalizeJob(minimal("system")).TaskGroups[0]!.ReschedulePolicy).toBeUndefined();
  });

  it("tasks get resources, kill timeout, log config and inherit the group's restart policy", () => {
    const t = canonicalizeJob(minimal("batch")).TaskGroups[0]!.Tasks[0]!;
    expect(t.Resources).toEqual({ CPU: 100, Cores: 0, MemoryMB: 300, MemoryMaxMB: 0 });
    expect(t.KillTimeout).toBe(seconds(5));
    expect(t.LogConfig).toEqual({ MaxFiles: 10, MaxFileSizeMB: 10, Disabled: false });
    expect(t.RestartPolicy).toMatchObject({ Attempts: 3, Mode: "fail" });
  });

  it("keeps what is set and merges partial policies over the defaults", () => {
    const job = minimal("batch");
    job.TaskGroups[0]!.RestartPolicy = { Attempts: 0 };
    job.TaskGroups[0]!.ReschedulePolicy = { Attempts: 0, Unlimited: false };
    job.TaskGroups[0]!.Tasks[0]!.Resources = { Cores: 2 };
    const g = canonicalizeJob(job).TaskGroups[0]!;
    expect(g.RestartPolicy).toMatchObject({ Attempts: 0, Interval: hours(24), Mode: "fail" });
    expect(g.ReschedulePolicy).toMatchObject({ Attempts: 0, Unlimited: false, Delay: seconds(5) });
    // Cores set: CPU is 0, not the 100 MHz default.
    expect(g.Tasks[0]!.Resources).toEqual({ Cores: 2, CPU: 0, MemoryMB: 300, MemoryMaxMB: 0 });
  });

  it("is pure: the input is not modified and canonicalizing twice changes nothing", () => {
    const job = minimal("batch");
    const before = structuredClone(job);
    const once = canonicalizeJob(job);
    expect(job).toEqual(before);
    expect(canonicalizeJob(once)).toEqual(once);
  });
});
