import { readFileSync } from "node:fs";
import { z } from "zod";

/** Profile ids: the toolchains a task can run in. */
export const PROFILE_IDS = ["python", "node", "rust", "go", "c", "dev-base"] as const;
export const ProfileId = z.enum(PROFILE_IDS).describe("toolchain profile id");
export type ProfileId = z.infer<typeof ProfileId>;

export const Profile = z
  .object({
    nixName: z
      .string()
      .regex(/^[a-z][a-z0-9-]*$/)
      .describe("the flake's name for this profile (devShell, -container)"),
    description: z.string().min(1).describe("what the toolchain holds"),
    languages: z.array(z.string()).describe("GitHub language names mapped to this profile"),
    smoke: z
      .array(z.string().min(1))
      .min(1)
      .describe("commands that must succeed in the profile's environment"),
  })
  .strict();
export type Profile = z.infer<typeof Profile>;

export const ProfilesFile = z
  .object({
    $comment: z.string().optional(),
    fallback: ProfileId.describe("profile for languages no profile lists"),
    profiles: z.record(ProfileId, Profile),
  })
  .strict()
  .superRefine((file, ctx) => {
    for (const id of PROFILE_IDS) {
      if (!file.profiles[id])
        ctx.addIssue({ code: "custom", path: ["profiles", id], message: `profile '${id}' is missing` });
    }
    const seen = new Map<string, string>();
    for (const [id, p] of Object.entries(file.profiles)) {
      for (const lang of p.languages) {
        const key = lang.toLowerCase();
        const other = seen.get(key);
        if (other) {
          ctx.addIssue({
            code: "custom",
            path: ["profiles", id, "languages"],
            message: `language '${lang}' is also mapped by '${other}'`,
          });
        }
        seen.set(key, id);
      }
    }
  });
export type ProfilesFile = z.infer<typeof ProfilesFile>;

/** Path of profiles.json, the single source Nix and TypeScript both read. */
export const PROFILES_JSON_URL = new URL("../profiles.json", import.meta.url);

let cached: ProfilesFile | undefined;

/** Parses profiles.json (once). Throws naming the field when it is malformed. */
export function loadProfiles(): ProfilesFile {
  if (!cached) cached = parseProfiles(JSON.parse(readFileSync(PROFILES_JSON_URL, "utf8")));
  return cached;
}

export function parseProfiles(data: unknown): ProfilesFile {
  const r = ProfilesFile.safeParse(data);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new Error(`profiles.json: field '${i.path.join(".")}': ${i.message}`);
  }
  return r.data;
}

/** Maps a GitHub language name (case-insensitive; empty or unknown → fallback) to a profile. */
export function profileForLanguage(
  language: string | undefined | null,
  file: ProfilesFile = loadProfiles(),
): ProfileId {
  const key = (language ?? "").trim().toLowerCase();
  if (key) {
    for (const [id, p] of Object.entries(file.profiles)) {
      if (p.languages.some((l) => l.toLowerCase() === key)) return id as ProfileId;
    }
  }
  return file.fallback;
}
