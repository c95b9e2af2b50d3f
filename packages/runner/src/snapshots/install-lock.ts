import { createHash } from "node:crypto";
import { copyFile, lstat, readFile } from "node:fs/promises";
import { join } from "node:path";
import { FlakegymError } from "../errors.js";
import { PYTHON_INTERPRETER_ENV } from "../tasks/swebench-env-specs.js";
import { VENV_DIR } from "../workers/local/shape.js";
import { type EnvInstallPlan, type EnvInstallRecord, pythonOfVenv, resolvedLines } from "./env-install.js";
import type { PythonChoice } from "./python-choice.js";

/**
 * What an install step leaves on record: the lock it followed or wrote (a resolved set in the deps
 * dir, or the repository's lock file's sha256) and the venv's Python. Everything read here was
 * written by untrusted install code, so nothing is followed and everything is capped.
 */

/** Copies a previous build's resolved set into the deps dir; false when there is none. */
export async function copyPins(pins: string, dest: string): Promise<boolean> {
  try {
    await copyFile(pins, dest);
    return true;
  } catch {
    return false;
  }
}

/**
 * The plan's record with the lock it followed or wrote: the resolved set the install wrote into
 * the deps dir (python), else the sha256 of the repository's lock file. A lock that is a symlink
 * or no regular file is not read (the repository is untrusted).
 */
export async function lockOf(
  plan: EnvInstallPlan,
  workspace: string,
  deps: string,
): Promise<EnvInstallRecord> {
  const { record } = plan;
  if (plan.resolvedFile) {
    const file = join(deps, plan.resolvedFile);
    const st = await lstat(file).catch(() => undefined);
    if (!st?.isFile() || st.size > MAX_RESOLVED_BYTES) {
      throw new FlakegymError(
        "E_SNAPSHOT",
        `the install step's resolved set ${plan.resolvedFile} (in the snapshot's deps dir) is ${st ? (st.isFile() ? `${st.size} bytes, over ${MAX_RESOLVED_BYTES}` : "not a regular file") : "missing"}`,
        {
          hint: `see the install step in the build log; the repository's own install code may have replaced /deps/${plan.resolvedFile}`,
        },
      );
    }
    const text = await readFile(file, "utf8");
    return { ...record, lockSha256: sha256(text), resolved: resolvedLines(text) };
  }
  if (!record.lockFile) return record;
  const path = join(workspace, record.lockFile);
  const st = await lstat(path).catch(() => undefined);
  if (!st?.isFile()) return record;
  return { ...record, lockSha256: sha256(await readFile(path)) };
}

/**
 * The record with the venv's Python against the task's (pythonOfVenv) and the interpreter chosen for
 * it (provider, path, the prefix later sandboxes bind), when the install made a venv in the deps dir.
 * A venv on another version than the task wants fails the build, unless the user allowed it (then
 * the build log and the manifest say so). pyvenv.cfg is read as data, not followed.
 */
export async function withPython(
  record: EnvInstallRecord,
  deps: string,
  p: { wanted: string | undefined; choice: PythonChoice | undefined; taskId: string },
  say: (line: string) => void,
): Promise<EnvInstallRecord> {
  const cfg = join(deps, VENV_DIR, "pyvenv.cfg");
  const st = await lstat(cfg).catch(() => undefined);
  if (!st?.isFile() || st.size > 64 * 1024) return record;
  const found = pythonOfVenv(await readFile(cfg, "utf8"), p.wanted);
  if (!found) return record;
  const python = { ...found, ...choiceRecordOf(p.choice) };
  if (!python.matches && !python.allowedMismatch)
    throw new FlakegymError(
      "E_PYTHON_MISMATCH",
      `task '${p.taskId}' wants Python ${python.wanted}, but its install made the venv with Python ${python.used}${p.choice?.kind === "match" ? ` although ${p.choice.candidate.interpreter} (${p.choice.candidate.version}, ${p.choice.candidate.provider}) was chosen` : ""}`,
      {
        hint: `its install commands do not make the venv with "$${PYTHON_INTERPRETER_ENV}" (a task imported before flakegym chose interpreters): import the row again, or pass --allow-python-mismatch to run it on ${python.used}`,
      },
    );
  say(
    `== python: venv ${python.used}${python.wanted ? `, task ${python.wanted}` : ""}${python.provider ? ` (${python.provider}: ${python.interpreter ?? "the sandbox's python3"})` : ""}${python.note ? ` — ${python.note}` : ""}`,
  );
  return { ...record, python };
}

/** The manifest's fields for the chosen interpreter. Pure. */
function choiceRecordOf(choice: PythonChoice | undefined): Partial<NonNullable<EnvInstallRecord["python"]>> {
  if (!choice || choice.kind === "refused") return {};
  if (choice.kind === "mismatch-allowed") return { provider: "sandbox", allowedMismatch: true };
  const c = choice.candidate;
  return { provider: c.provider, interpreter: c.interpreter, ...(c.bind ? { bind: c.bind } : {}) };
}

/** A `pip freeze` of even a large environment is a few KiB; more is not a resolved set. */
const MAX_RESOLVED_BYTES = 1 << 20;

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
