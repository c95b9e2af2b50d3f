export {
  loadProfiles,
  PROFILE_IDS,
  PROFILES_JSON_URL,
  Profile,
  ProfileId,
  ProfilesFile,
  parseProfiles,
  profileForLanguage,
} from "./profiles.js";
