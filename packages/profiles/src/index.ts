/** Toolchain profiles: filled in by the profiles/flake work. `profiles.json` is the single source. */
export const PROFILE_IDS = ["python", "node", "rust", "go", "c", "dev-base"] as const;
export type ProfileId = (typeof PROFILE_IDS)[number];
