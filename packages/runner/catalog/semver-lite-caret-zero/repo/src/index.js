export { parseRange, satisfies } from "./range.js";
export { compare, format, parse } from "./version.js";
