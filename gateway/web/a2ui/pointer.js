// JSON Pointer (RFC 6901) over a surface's data model, and the few JSON Patch (RFC 6902)
// operations an ACTIVITY_DELTA carries. Values are plain JSON: objects, arrays, scalars.

/** The reference tokens of a pointer: "/a/b~1c" -> ["a", "b/c"]; "" and "/" are the root. */
export function tokens(pointer) {
  if (pointer === "" || pointer === "/") return [];
  if (!pointer.startsWith("/")) throw new Error(`a JSON Pointer starts with "/": ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split("/")
    .map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/**
 * An absolute pointer for a binding's path: one starting with "/" is absolute; any other is
 * relative to ``scope`` (the item a template child stands for, e.g. "/employees/0").
 */
export function absolute(path, scope = "") {
  if (path.startsWith("/")) return path;
  const base = scope === "/" ? "" : scope;
  return path === "" || path === "." ? base || "/" : `${base}/${path}`;
}

/** The value at a pointer, or undefined when any step is missing. */
export function get(document, pointer) {
  let value = document;
  for (const token of tokens(pointer)) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, token)) return undefined;
    value = value[token];
  }
  return value;
}

/**
 * The document with ``value`` put at ``pointer`` (undefined removes it), creating the
 * objects on the way. The root pointer replaces the whole document.
 */
export function put(document, pointer, value) {
  const path = tokens(pointer);
  if (!path.length) return value === undefined ? {} : value;
  const root = document !== null && typeof document === "object" ? document : {};
  let parent = root;
  for (const token of path.slice(0, -1)) {
    if (parent[token] === null || typeof parent[token] !== "object") parent[token] = {};
    parent = parent[token];
  }
  const last = path.at(-1);
  if (Array.isArray(parent) && last === "-") {
    if (value !== undefined) parent.push(value);
  } else if (value === undefined) {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else {
    parent[last] = value;
  }
  return root;
}

/** Applies JSON Patch operations (add, replace, remove) to a copy of ``document``. */
export function applyPatch(document, patch) {
  let result = structuredClone(document);
  for (const { op, path, value } of patch) {
    if (op === "add" || op === "replace") {
      const target = tokens(path);
      const parent = get(result, `/${target.slice(0, -1).map(escape).join("/")}`);
      if (op === "add" && Array.isArray(parent) && target.at(-1) !== "-") {
        parent.splice(Number(target.at(-1)), 0, structuredClone(value));
      } else {
        result = put(result, path, structuredClone(value));
      }
    } else if (op === "remove") {
      result = put(result, path, undefined);
    } else {
      throw new Error(`JSON Patch operation ${JSON.stringify(op)} is not supported here`);
    }
  }
  return result;
}

function escape(token) {
  return token.replaceAll("~", "~0").replaceAll("/", "~1");
}
