// The preload of agent-user.cjs: `node --require agent-user-install.cjs cline-core.js` runs every
// child of the core as the agent's user (FLAKEGYM_AGENT_USER), never as the core's (issue 42).
"use strict";
require("./agent-user.cjs").installFromEnv();
