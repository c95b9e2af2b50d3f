/**
 * What makes a snapshot's bytes depend on when and where it was built, found in its files (pure):
 * a git index carrying stat data (ctime, mtime, device, inode: `git add` writes them; `git
 * read-tree HEAD` writes none), and cargo's incremental-compilation directories (timestamped
 * session dirs; `CARGO_INCREMENTAL=0` makes none). nix/snapshot-workspace.nix avoids both; the
 * stand-in e2e checks a built snapshot with these and by building it twice.
 */

/** One index entry whose stat fields are not all zero: its path and which fields are set. */
export interface IndexStatProblem {
  readonly path: string;
  readonly fields: readonly string[];
}

const STAT_FIELDS = ["ctime", "ctime_ns", "mtime", "mtime_ns", "dev", "ino"] as const;

/**
 * The entries of a git index (version 2 or 3) that carry stat data. Throws naming what is wrong
 * when `index` is not such an index.
 */
export function gitIndexStatProblems(index: Buffer): IndexStatProblem[] {
  if (index.length < 12 || index.toString("latin1", 0, 4) !== "DIRC") {
    throw new Error("not a git index (no DIRC signature)");
  }
  const version = index.readUInt32BE(4);
  if (version !== 2 && version !== 3) {
    throw new Error(
      `git index version ${version}: only versions 2 and 3 are read (write it with git read-tree)`,
    );
  }
  const count = index.readUInt32BE(8);
  const problems: IndexStatProblem[] = [];
  let at = 12;
  for (let i = 0; i < count; i++) {
    if (at + 62 > index.length) throw new Error(`git index ends inside entry ${i} of ${count}`);
    const fields = STAT_FIELDS.filter((_, k) => index.readUInt32BE(at + 4 * k) !== 0);
    const flags = index.readUInt16BE(at + 60);
    const extended = version === 3 && (flags & 0x4000) !== 0;
    const nameAt = at + 62 + (extended ? 2 : 0);
    const nameEnd = index.indexOf(0, nameAt);
    if (nameEnd < 0) throw new Error(`git index entry ${i} has no path terminator`);
    const path = index.toString("utf8", nameAt, nameEnd);
    if (fields.length) problems.push({ path, fields });
    const entryLen = nameEnd - at + 1;
    at += Math.ceil(entryLen / 8) * 8;
  }
  return problems;
}

/** Paths (relative, `/`-separated) that are cargo incremental-compilation artefacts. */
export function incrementalArtefacts(paths: readonly string[]): string[] {
  return paths.filter((p) => /(^|\/)target\/[^/]+\/incremental\/./.test(p));
}
