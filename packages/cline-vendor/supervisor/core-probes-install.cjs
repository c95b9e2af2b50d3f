// The preload of core-probes.cjs: `node --require core-probes-install.cjs cline-core.js` answers the
// core's tool probes in its own process where the answer is provably the real one (issue 47).
"use strict";
require("./core-probes.cjs").install();
