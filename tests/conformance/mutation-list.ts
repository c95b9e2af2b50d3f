/**
 * Issue 44's six faults as patches that put each back (the TypeScript export and the Python adapters
 * alike), and the checks of `npm run conformance` that judge each; run by mutations.ts. A unit test
 * (tests/integration/export/conformance-mutations.test.ts) keeps every patch applicable.
 */
export interface Edit {
  readonly file: string;
  readonly from: string;
  readonly to: string;
}

export interface Mutation {
  readonly item: number;
  readonly fault: string;
  readonly checks: readonly string[];
  readonly edits: readonly Edit[];
}

const CREDIT = "packages/runner/src/export/formats/credit.ts";
const CLIENT = "adapters/python/flakegym_client.py";
const SKYRL_TS = "packages/runner/src/export/formats/skyrl-batch.ts";
const SKYRL_PY = "adapters/python/flakegym_skyrl.py";

export const MUTATIONS: readonly Mutation[] = [
  {
    item: 1,
    fault: "`final` drops the earlier segments' sampled tokens silently",
    checks: ["verl", "nemo-gym", "trl"],
    edits: [
      { file: CREDIT, from: "if (dropped.length > 0) {", to: "if (false) {" },
      { file: CLIENT, from: "        if dropped:\n", to: "        if False:\n" },
    ],
  },
  {
    item: 1,
    fault: "the default segment policy is `final` again (the earlier segments' sampled tokens untrained)",
    checks: ["nemo-gym"],
    edits: [
      {
        file: "packages/runner/src/cli/commands/export.ts",
        from: 'segments: SegmentPolicy.default("split"),',
        to: 'segments: SegmentPolicy.default("final"),',
      },
      {
        file: CLIENT,
        from: 'def pieces(records, segments="split",',
        to: 'def pieces(records, segments="final",',
      },
    ],
  },
  {
    item: 2,
    fault: "`split` gives each segment reward/segments",
    checks: ["verl", "skyrl"],
    edits: [
      {
        file: CREDIT,
        from: "reward: record.reward as number,",
        to: "reward: (record.reward as number) / chosen.length,",
      },
      { file: CLIENT, from: '"reward": rec["reward"],', to: '"reward": rec["reward"] / len(chosen),' },
    ],
  },
  {
    item: 3,
    fault: "members without a sample vanish from the exports (no note, no SkyRL row)",
    checks: ["verl", "skyrl", "trl"],
    edits: [
      {
        file: CREDIT,
        from: 'notes.push(note(record, problem.reason, "left_out", 0, problem.detail));',
        to: "",
      },
      { file: CLIENT, from: 'notes.append(_note(rec, problem[0], "left_out", 0, problem[1]))', to: "pass" },
      { file: SKYRL_TS, from: "const keep = !stepWise ||", to: "const keep = false &&" },
      { file: SKYRL_PY, from: "keep = not step_wise or", to: "keep = False and" },
    ],
  },
  {
    item: 4,
    fault: "SkyRL's placeholder row has reward 0.0 (biases the group baseline)",
    checks: ["skyrl"],
    edits: [
      { file: SKYRL_TS, from: "reward: stepWise ? 0 : mean", to: "reward: 0" },
      { file: SKYRL_PY, from: '"reward": 0.0 if step_wise else mean,', to: '"reward": 0.0,' },
    ],
  },
  {
    item: 5,
    fault: "no length policy: rows longer than verl's lengths reach its post-processing",
    checks: ["verl"],
    edits: [{ file: CLIENT, from: "if max_prompt_tokens or max_response_tokens:", to: "if False:" }],
  },
  {
    item: 6,
    fault: "a turn-1 policy_error becomes a 0-token sequence in groups.jsonl",
    checks: ["atropos"],
    edits: [
      {
        file: "packages/runner/src/emit/group.ts",
        from: "else if (withTokens && !sampledAny(m))",
        to: "else if (false && withTokens && !sampledAny(m))",
      },
    ],
  },
];

/** The patched text of every file a mutation edits; throws when a patch no longer applies. Pure over its input. */
export function patched(m: Mutation, read: (file: string) => string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of m.edits) {
    const text = out.get(e.file) ?? read(e.file);
    const n = text.split(e.from).length - 1;
    if (n !== 1)
      throw new Error(
        `mutation ${m.item}: ${JSON.stringify(e.from)} occurs ${n} times in ${e.file} (want 1): update tests/conformance/mutation-list.ts`,
      );
    out.set(e.file, text.replace(e.from, e.to));
  }
  return out;
}
