import { z } from "zod";
import type { PythonOptions } from "./python-providers.js";

/** The `--python` / `--allow-python-mismatch` options of the commands that build snapshots. */
export const PythonFlags = {
  python: z
    .array(z.string().min(1))
    .optional()
    .describe(
      "an interpreter for python tasks wanting VERSION: VERSION=/path/to/pythonVERSION (repeatable; also FLAKEGYM_PYTHON); tried before a Nix profile's, uv's, pyenv's and pythonX.Y on PATH",
    ),
  allowPythonMismatch: z
    .boolean()
    .default(false)
    .describe(
      "run a python task whose wanted version is not found on the sandbox's python3 instead of refusing it (recorded in the snapshot manifest; also FLAKEGYM_ALLOW_PYTHON_MISMATCH=1)",
    ),
};

/** The flags as build options (the environment's are merged in by pythonOptionsOf). Pure. */
export function pythonOptionsOfFlags(o: {
  python?: string[] | undefined;
  allowPythonMismatch: boolean;
}): PythonOptions {
  return { named: o.python ?? [], ...(o.allowPythonMismatch ? { allowMismatch: true } : {}) };
}
