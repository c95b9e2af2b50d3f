/**
 * A name segment the viewer accepts in a path: no separators, no `.`/`..`, no control characters.
 * No imports: the browser bundle checks ids with it too.
 */
export const SEGMENT = /^(?!\.\.?$)[A-Za-z0-9._@+=,-]{1,200}$/;
