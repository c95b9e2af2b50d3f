/** The breakdown written to `trajectories/<id>/score.json`: its schema is the run format's (run-format/score.ts). */
export { Score } from "../run-format/score.js";
