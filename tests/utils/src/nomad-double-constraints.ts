/**
 * Placement constraints as Nomad's scheduler checks them on a node (scheduler/feasible.go:
 * `ConstraintChecker.meetsConstraint`, `resolveTarget` for `${attr.*}`, `${meta.*}`, `${node.*}`,
 * `checkConstraint` per operand). A node failing one is filtered, counted in the evaluation's
 * `ConstraintFiltered` under the constraint's text (`Constraint.String()`: "LTarget Operand RTarget",
 * nomad/structs/structs.go). Pure.
 */

export interface DoubleConstraint {
  readonly LTarget?: string;
  readonly RTarget?: string;
  readonly Operand?: string;
}

export interface DoubleNode {
  readonly name: string;
  readonly datacenter: string;
  readonly pool: string;
  readonly nodeClass: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly meta: Readonly<Record<string, string>>;
}

/** `${attr.x}` → the node's value (undefined when it has none); a literal stays itself. */
export function resolveTarget(target: string, node: DoubleNode): string | undefined {
  const m = /^\$\{(.+)\}$/.exec(target);
  if (!m) return target;
  const name = m[1]!;
  if (name.startsWith("attr.")) return node.attributes[name.slice(5)];
  if (name.startsWith("meta.")) return node.meta[name.slice(5)];
  switch (name) {
    case "node.datacenter":
      return node.datacenter;
    case "node.unique.name":
      return node.name;
    case "node.class":
      return node.nodeClass;
    case "node.pool":
      return node.pool;
    default:
      return undefined;
  }
}

const set = (s: string) => s.split(",").map((x) => x.trim());

/** Whether `node` satisfies `c`. Scheduling-wide operands (distinct_hosts, distinct_property) hold on one node. */
export function constraintHolds(c: DoubleConstraint, node: DoubleNode): boolean {
  const op = c.Operand ?? "=";
  if (op === "distinct_hosts" || op === "distinct_property") return true;
  const l = resolveTarget(c.LTarget ?? "", node);
  const r = resolveTarget(c.RTarget ?? "", node);
  if (op === "is_set") return l !== undefined;
  if (op === "is_not_set") return l === undefined;
  if (l === undefined || r === undefined) return false;
  switch (op) {
    case "=":
    case "==":
    case "is":
      return l === r;
    case "!=":
    case "not":
      return l !== r;
    case "regexp":
      try {
        return new RegExp(r).test(l);
      } catch {
        return false;
      }
    case "set_contains":
    case "set_contains_all":
      return set(r).every((x) => set(l).includes(x));
    case "set_contains_any":
      return set(r).some((x) => set(l).includes(x));
    default:
      // version/semver and lexical orderings are not modelled: such a constraint filters the node
      return false;
  }
}

/** Nomad's text of a constraint, the key of `ConstraintFiltered`. */
export const constraintText = (c: DoubleConstraint) =>
  `${c.LTarget ?? ""} ${c.Operand ?? "="} ${c.RTarget ?? ""}`;

/** The first of `constraints` the node fails, or undefined. */
export function firstUnmet(
  constraints: readonly DoubleConstraint[],
  node: DoubleNode,
): DoubleConstraint | undefined {
  return constraints.find((c) => !constraintHolds(c, node));
}
