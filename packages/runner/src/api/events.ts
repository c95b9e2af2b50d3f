import type { StageName } from "../contract/contract.js";
import type { Outcome } from "../run-format/schema.js";

/** Progress of an API call, as it happens (`onEvent`). */
export type ApiEvent =
  | {
      readonly kind: "phase";
      readonly phase: "resolve" | "materialize" | "hints" | "contract";
      readonly detail: string;
    }
  | { readonly kind: "stage-start"; readonly stage: StageName; readonly label: string }
  | {
      readonly kind: "stage-end";
      readonly stage: StageName;
      readonly label: string;
      readonly outcome: Outcome;
      readonly durationMs: number;
    };

export type ApiEventSink = (event: ApiEvent) => void;
