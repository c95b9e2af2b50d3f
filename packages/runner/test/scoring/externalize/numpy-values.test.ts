import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { PYTHON_EMITTER } from "../../../src/scoring/externalize/python-emitter.js";

/**
 * The emitter renders a numpy scalar or one-element array as its one Python value (seaborn's
 * `ax.yaxis.convert_units("3") == 2` computes `array([2.])`): real numpy in a real interpreter,
 * skipped saying why where no python3 here has numpy.
 */
const probe = await execa("python3", ["-c", "import numpy"], { reject: false, timeout: 30_000 }).catch(
  () => undefined,
);
const skip =
  probe?.exitCode === 0 ? undefined : "python3 on PATH has no numpy (pip install numpy to run this)";
if (skip) console.log(`skipped the numpy rendering test: ${skip}`);

describe.skipIf(skip !== undefined)("externalized values from numpy", () => {
  it("renders numpy scalars and one-element arrays as Python values, larger arrays stay opaque", async () => {
    const code = `${PYTHON_EMITTER}
import json, numpy as np
print(json.dumps([_fg_canon(np.array([2.0])), _fg_canon(np.int64(3)), _fg_canon(np.bool_(True)), _fg_canon(np.array([1, 2]))["t"]]))
`;
    const r = await execa("python3", ["-I", "-c", code], { timeout: 60_000 });
    expect(JSON.parse(r.stdout)).toEqual([
      { t: "float", v: "2.0" },
      { t: "int", v: "3" },
      { t: "bool", v: true },
      "obj",
    ]);
  });
});
