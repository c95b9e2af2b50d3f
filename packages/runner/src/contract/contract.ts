import { ProfileId } from "@flakegym/profiles";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { FlakegymError } from "../errors.js";
import { readTargetFile } from "./safe-read.js";

/**
 * `flakegym.yml` version 1: how a target repository declares it is run. The file is hostile input
 * (it comes from the target): read as plain text with a size cap, parsed once here, validated.
 */

export const CONTRACT_FILE = "flakegym.yml";
export const STAGES_DIR = ".flakegym/stages";
export const MAX_CONTRACT_BYTES = 64 * 1024;

export const STAGE_NAMES = ["tests", "deploy", "rollout", "evaluation", "benchmark"] as const;
export const StageName = z.enum(STAGE_NAMES).describe("a contract stage");
export type StageName = z.infer<typeof StageName>;

const StageScript = z
  .string()
  .regex(
    /^\.flakegym\/stages\/[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    `must name a file directly under ${STAGES_DIR}/ (letters, digits, _ . -)`,
  )
  .describe(`the stage's script, a file directly under ${STAGES_DIR}/, run with sh inside the sandbox`);

export const ContractLimits = z
  .object({
    max_cmd_seconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(600)
      .describe("wall clock of one stage script, seconds"),
    max_total_seconds: z
      .number()
      .int()
      .min(1)
      .max(7 * 86_400)
      .default(3600)
      .describe("wall clock of all stages of one call (rollout or evaluation), seconds"),
  })
  .strict();
export type ContractLimits = z.infer<typeof ContractLimits>;

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");

export const Contract = z
  .object({
    version: z.literal(1).describe("contract format version; only 1 exists"),
    profile: ProfileId.default("dev-base").describe("toolchain profile the stages run in"),
    stages: z
      .object({
        tests: StageScript.optional(),
        deploy: StageScript.optional(),
        rollout: StageScript,
        evaluation: StageScript,
        benchmark: StageScript.optional(),
      })
      .strict()
      .describe("stage name → script; rollout and evaluation are required"),
    limits: ContractLimits.default({ max_cmd_seconds: 600, max_total_seconds: 3600 }).describe(
      "security limits, overridable at run time",
    ),
    env: z
      .record(EnvName, z.string().max(4096))
      .default({})
      .refine((e) => Object.keys(e).every((k) => !k.startsWith("FLAKEGYM_")), "FLAKEGYM_* names are reserved")
      .describe("environment overrides for every stage (FLAKEGYM_* is reserved)"),
  })
  .strict();
export type Contract = z.infer<typeof Contract>;
export type ContractInput = z.input<typeof Contract>;

/** Run-time overrides of a contract's limits (the caller's, never the target's). */
export const LimitOverrides = z
  .object({
    max_cmd_seconds: z.number().int().min(1).max(86_400).optional(),
    max_total_seconds: z
      .number()
      .int()
      .min(1)
      .max(7 * 86_400)
      .optional(),
  })
  .strict()
  .describe("limits that replace the contract's (no defaults: an absent one keeps the contract's)");
export type LimitOverrides = z.infer<typeof LimitOverrides>;

/** The contract's limits with the caller's overrides applied (pure). */
export function effectiveLimits(contract: Contract, overrides: LimitOverrides = {}): ContractLimits {
  return {
    max_cmd_seconds: overrides.max_cmd_seconds ?? contract.limits.max_cmd_seconds,
    max_total_seconds: overrides.max_total_seconds ?? contract.limits.max_total_seconds,
  };
}

/** One problem of a contract: the file, the field path and what to do. */
export interface ContractIssue {
  readonly file: string;
  readonly field: string;
  readonly message: string;
}

export function formatContractIssue(i: ContractIssue): string {
  return `${i.file}: ${i.field || "(top level)"}: ${i.message}`;
}

/** Parses the text of a `flakegym.yml` (pure): the contract, or every issue found. */
export function parseContract(
  text: string,
  file = CONTRACT_FILE,
): { ok: true; contract: Contract } | { ok: false; issues: ContractIssue[] } {
  let data: unknown;
  try {
    data = parseYaml(text, { maxAliasCount: 10 });
  } catch (err) {
    return { ok: false, issues: [{ file, field: "", message: `not valid YAML: ${(err as Error).message}` }] };
  }
  const r = Contract.safeParse(data);
  if (r.success) return { ok: true, contract: r.data };
  return {
    ok: false,
    issues: r.error.issues.map((i) => ({ file, field: i.path.join("."), message: fixFor(i) })),
  };
}

function fixFor(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") {
    return `unknown field(s) ${issue.keys.join(", ")}; allowed: version, profile, stages (${STAGE_NAMES.join(", ")}), limits (max_cmd_seconds, max_total_seconds), env`;
  }
  if (issue.code === "invalid_type" && issue.input === undefined) return "missing; add it";
  return issue.message;
}

/** The stage scripts a contract names that are not plain files in `root` (pure over a listing). */
export function missingStageScripts(contract: Contract, present: ReadonlySet<string>): ContractIssue[] {
  return Object.entries(contract.stages)
    .filter(([, script]) => script !== undefined && !present.has(script))
    .map(([stage, script]) => ({
      file: CONTRACT_FILE,
      field: `stages.${stage}`,
      message: `${script} does not exist (or is a symlink); create it as a plain file`,
    }));
}

/**
 * Reads and validates `root/flakegym.yml`: undefined when there is none; a FlakegymError
 * `E_CONTRACT` listing every issue (file, field, fix) when it is invalid.
 */
export async function loadContract(root: string): Promise<Contract | undefined> {
  const text = await readTargetFile(root, CONTRACT_FILE, MAX_CONTRACT_BYTES);
  if (text === undefined) return undefined;
  const r = parseContract(text);
  if (!r.ok) throw contractError(r.issues);
  const present = new Set<string>();
  for (const script of Object.values(r.contract.stages)) {
    if (script !== undefined && (await readTargetFile(root, script, MAX_CONTRACT_BYTES)) !== undefined) {
      present.add(script);
    }
  }
  const missing = missingStageScripts(r.contract, present);
  if (missing.length > 0) throw contractError(missing);
  return r.contract;
}

export function contractError(issues: readonly ContractIssue[]): FlakegymError {
  return new FlakegymError(
    "E_CONTRACT",
    `invalid contract:\n${issues.map((i) => `  ${formatContractIssue(i)}`).join("\n")}`,
    { hint: "fix the fields named (see docs/reference/api.md, 'The contract')" },
  );
}
