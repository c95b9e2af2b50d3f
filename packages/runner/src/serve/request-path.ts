/**
 * The path of a request's target, as the client sent it (still %-encoded), or undefined when the
 * target is malformed: an origin-form target (`/v1/groups/x?q`) is its part before `?`, an
 * absolute-form one (`http://host/path`) its URL's path; anything else (`*`, `http://[`) has no
 * path. Never throws: a bad target is the client's 400, never our 500. Pure.
 */
export function requestPathOf(target: string): string | undefined {
  const q = target.indexOf("?");
  const beforeQuery = q < 0 ? target : target.slice(0, q);
  if (beforeQuery.startsWith("/")) return beforeQuery;
  if (!/^https?:\/\//i.test(target)) return undefined;
  try {
    return new URL(target).pathname;
  } catch {
    return undefined;
  }
}
