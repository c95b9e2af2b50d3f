/** Nomad job specs and a thin typed client: filled in by the Nomad work. */
export const NOMAD_API_VERSION = "v1";
