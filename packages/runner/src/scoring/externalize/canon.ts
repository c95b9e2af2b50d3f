import { z } from "zod";

/**
 * A value as the test process rendered it (scoring/externalize/python-emitter.ts `_fg_canon` /
 * `_fg_exc`): type-tagged, numbers as their Python repr (ints of any size, floats round-trip),
 * containers recursively, an exception by its class's MRO (qualified names) and message. `obj`:
 * a value of a type the renderer does not know; it equals nothing (fail closed). Pure schemas.
 */
export type Canon =
  | { readonly t: "none" }
  | { readonly t: "bool"; readonly v: boolean }
  | { readonly t: "int"; readonly v: string }
  | { readonly t: "float"; readonly v: string }
  | { readonly t: "complex"; readonly v: readonly [string, string] }
  | { readonly t: "str"; readonly v: string }
  | { readonly t: "bytes"; readonly v: string }
  | { readonly t: "list" | "tuple" | "set"; readonly v: readonly Canon[] }
  | { readonly t: "dict"; readonly v: readonly (readonly [Canon, Canon])[] }
  | { readonly t: "obj"; readonly type: string; readonly repr: string }
  | { readonly t: "exc"; readonly mro: readonly string[]; readonly msg: string }
  | { readonly t: "noexc" }
  | { readonly t: "deep" }
  | { readonly t: "unrenderable"; readonly why?: string }
  /** A pair site whose sides the rendering cannot carry, compared by Python in the test (`ok`). */
  | { readonly t: "inproc"; readonly ok?: boolean };

const INT = /^-?\d+$/;
/**
 * Most digits of an emitted int: Python renders no more by default (`sys.int_info`'s 4300-digit
 * limit, 3.11 on); the host parses an int's digits as a BigInt, in time quadratic in their count
 * (4 M digits: seconds), so a longer int string (a sign aside) — code under test writing its own
 * line — fails the schema.
 */
export const MAX_INT_DIGITS = 100_000;
const FLOAT = /^(-?(\d+\.\d*|\d+)(e[+-]?\d+)?|-?inf|nan)$/;

export const CanonSchema: z.ZodType<Canon> = z.lazy(() =>
  z.union([
    z.object({ t: z.literal("none") }).strict(),
    z.object({ t: z.literal("bool"), v: z.boolean() }).strict(),
    z
      .object({
        t: z.literal("int"),
        v: z
          .string()
          .max(MAX_INT_DIGITS + 1)
          .regex(INT),
      })
      .strict(),
    z.object({ t: z.literal("float"), v: z.string().regex(FLOAT) }).strict(),
    z
      .object({ t: z.literal("complex"), v: z.tuple([z.string().regex(FLOAT), z.string().regex(FLOAT)]) })
      .strict(),
    z.object({ t: z.literal("str"), v: z.string() }).strict(),
    z.object({ t: z.literal("bytes"), v: z.string().regex(/^([0-9a-f]{2})*$/) }).strict(),
    z.object({ t: z.enum(["list", "tuple", "set"]), v: z.array(CanonSchema) }).strict(),
    z.object({ t: z.literal("dict"), v: z.array(z.tuple([CanonSchema, CanonSchema])) }).strict(),
    z.object({ t: z.literal("obj"), type: z.string(), repr: z.string() }).strict(),
    z.object({ t: z.literal("exc"), mro: z.array(z.string()), msg: z.string() }).strict(),
    z.object({ t: z.literal("noexc") }).strict(),
    z.object({ t: z.literal("deep") }).strict(),
    z.object({ t: z.literal("unrenderable"), why: z.string().optional() }).strict(),
    z.object({ t: z.literal("inproc"), ok: z.boolean().optional() }).strict(),
  ]),
);

/** How a graded assertion compares what the test computed with its expected value. */
export const SiteKind = z.enum([
  "eq",
  "ne",
  "approx",
  "almost",
  "in",
  "notin",
  "is",
  "isnot",
  "seqeq",
  "counteq",
  "raises",
  /** node:assert's strict equalities: same type and value (Object.is), objects and arrays deeply. */
  "same",
  /** `assert x` / `assert not x`: x's truth (a bool) against the polarity kept on the host. */
  "truth",
  /** pytester's fnmatch_lines / re_match_lines / no_*_line: emitted lines against the patterns. */
  "lines",
]);
export type SiteKind = z.infer<typeof SiteKind>;

/** What a `raises` site expects: the class names as written (any of them), and a `match` pattern. */
export const RaisesExpected = z
  .object({ names: z.array(z.string()).min(1), match: CanonSchema.nullable() })
  .strict();

/**
 * One externalized assertion, kept on the host: its random id (what the test emits under), the
 * graded test it is in (its id without parameters), how it compares, the expected value never
 * written into the sandbox, and how often it must be emitted per test case (`one`: it runs
 * unconditionally, exactly once; `any`: it sits under a branch, loop or an expected exception).
 */
export const ExternalSite = z
  .object({
    site: z.string().regex(/^[0-9a-f]{16}$/),
    test: z.string(),
    kind: SiteKind,
    /** null: the expected side is computed by the test (`pair`), emitted beside the value. */
    expected: z.union([CanonSchema, RaisesExpected]).nullable(),
    opts: z.record(z.string(), CanonSchema),
    count: z.enum(["one", "any"]),
    /**
     * The test computes the expected side (`assert got == user.name`, `match=msg`): it emits both
     * sides and only the comparison moves out (an always-equal object, a forged report, a patched
     * assert no longer decide), the value itself is not secret. Counted apart from externalized.
     */
    pair: z.boolean(),
    /**
     * A site on one side of an `if` on the test's parameters: the case ids (pytest's, inside the
     * brackets) whose side runs it — there it is emitted as `count` says — and those whose side
     * does not, where it must not be emitted at all. A case in neither fails (fail closed).
     */
    cases: z
      .object({ run: z.array(z.string()), skip: z.array(z.string()) })
      .strict()
      .optional(),
    /**
     * A parametrized test's expected side that is one of its parameters: per case id (in the
     * rewritten file, whose cases have fresh ids) the value the host read from the decorator,
     * compared as a pair's emitted expected side would be. A case not listed fails (fail closed).
     */
    byCase: z.record(z.string(), CanonSchema).optional(),
  })
  .strict();
export type ExternalSite = z.infer<typeof ExternalSite>;

/** One line the test process emitted: site id, pytest node id, the computed value (and the expected, for a pair). */
export const Emission = z
  .object({ s: z.string(), n: z.string(), v: CanonSchema, w: CanonSchema.optional() })
  .strict();
export type Emission = z.infer<typeof Emission>;
