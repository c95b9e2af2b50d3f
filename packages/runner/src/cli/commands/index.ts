import type { Command } from "../command.js";
import { doctorCommand } from "./doctor.js";
import { envEvaluationCommand, envRolloutCommand, envSetupCommand, envTeardownCommand } from "./env.js";
import { evalCommand } from "./eval.js";
import { evalCompareCommand } from "./eval-compare.js";
import { exportCommand } from "./export.js";
import { gcCommand } from "./gc.js";
import { imagesBuildCommand, imagesListCommand, imagesLoadCommand } from "./images.js";
import { nixFactsCommand } from "./nix-facts.js";
import { nomadRenderCommand } from "./nomad-render.js";
import { rolloutCommand } from "./rollout.js";
import { serveCommand } from "./serve.js";
import { snapshotBuildCommand } from "./snapshot-build.js";
import { tasksCheckCommand } from "./tasks-check.js";
import { tasksExportCommand } from "./tasks-export.js";
import { tasksImportCommand } from "./tasks-import.js";
import { tasksListCommand } from "./tasks-list.js";
import { tasksShowCommand } from "./tasks-show.js";
import { validateCommand } from "./validate.js";
import { verifyCommand } from "./verify.js";
import { viewCommand } from "./view.js";

/** Every subcommand, in the order `--help` lists them. One line per command. */
export const commands: readonly Command[] = [
  tasksListCommand as unknown as Command,
  tasksShowCommand as unknown as Command,
  tasksCheckCommand as unknown as Command,
  tasksImportCommand as unknown as Command,
  tasksExportCommand as unknown as Command,
  snapshotBuildCommand as unknown as Command,
  nixFactsCommand as unknown as Command,
  imagesBuildCommand as unknown as Command,
  imagesLoadCommand as unknown as Command,
  imagesListCommand as unknown as Command,
  doctorCommand as unknown as Command,
  nomadRenderCommand as unknown as Command,
  rolloutCommand as unknown as Command,
  validateCommand as unknown as Command,
  evalCommand as unknown as Command,
  evalCompareCommand as unknown as Command,
  serveCommand as unknown as Command,
  exportCommand as unknown as Command,
  gcCommand as unknown as Command,
  viewCommand as unknown as Command,
  envSetupCommand as unknown as Command,
  envRolloutCommand as unknown as Command,
  envEvaluationCommand as unknown as Command,
  envTeardownCommand as unknown as Command,
  verifyCommand as unknown as Command,
];
