/** The pinned compiled Cline core and its launcher/driver: filled in by the Cline work. */
export const CLINE_VERSION = "1.0.10";
