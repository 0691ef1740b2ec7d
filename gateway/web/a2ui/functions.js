// The functions of A2UI v0.9's basic catalog (basic_catalog.json, "functions"), which a
// dynamic value may call: `{"call": "formatCurrency", "args": {...}}`. Arguments are
// dynamic values themselves; ``resolve`` turns one into its value in the caller's scope.

const LOCALE = "ko-KR";

/** Thrown for a call the catalog does not have, or one that cannot run. */
export class FunctionError extends Error {}

/**
 * @param {string} name
 * @param {Record<string, unknown>} args  the call's arguments, not yet resolved
 * @param {(value: unknown) => unknown} resolve
 */
export function callFunction(name, args, resolve) {
  const fn = FUNCTIONS[name];
  if (!fn) throw new FunctionError(`함수 '${name}'는 이 화면이 모르는 함수입니다.`);
  const arg = (key) => resolve(args?.[key]);
  return fn(arg, args ?? {}, resolve);
}

const FUNCTIONS = {
  required: (arg) => {
    const value = arg("value");
    return !(value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length));
  },
  regex: (arg) => new RegExp(String(arg("pattern"))).test(String(arg("value") ?? "")),
  length: (arg) => {
    const length = String(arg("value") ?? "").length;
    const [min, max] = [arg("min"), arg("max")];
    return (min === undefined || length >= min) && (max === undefined || length <= max);
  },
  numeric: (arg) => {
    const value = Number(arg("value"));
    const [min, max] = [arg("min"), arg("max")];
    return !Number.isNaN(value) && (min === undefined || value >= min) && (max === undefined || value <= max);
  },
  email: (arg) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(String(arg("value") ?? "")),
  formatString: (arg, _args, resolve) => interpolate(String(arg("value") ?? ""), resolve),
  formatNumber: (arg) =>
    new Intl.NumberFormat(LOCALE, {
      ...decimals(arg("decimals")),
      useGrouping: arg("grouping") ?? true,
    }).format(Number(arg("value"))),
  formatCurrency: (arg) =>
    new Intl.NumberFormat(LOCALE, {
      style: "currency",
      currency: String(arg("currency")),
      ...decimals(arg("decimals")),
      useGrouping: arg("grouping") ?? true,
    }).format(Number(arg("value"))),
  formatDate: (arg) => formatDate(arg("value"), String(arg("format") ?? "yyyy-MM-dd")),
  pluralize: (arg) => {
    const category = new Intl.PluralRules(LOCALE).select(Number(arg("value")));
    const chosen = arg(category);
    return chosen === undefined ? arg("other") : chosen;
  },
  and: (_arg, args, resolve) => (args.values ?? []).every((value) => resolve(value) === true),
  or: (_arg, args, resolve) => (args.values ?? []).some((value) => resolve(value) === true),
  not: (arg) => arg("value") !== true,
  openUrl: (arg) => {
    const url = new URL(String(arg("url")), location.href);
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      throw new FunctionError(`${url.protocol} 주소는 열지 않습니다.`);
    }
    window.open(url.href, "_blank", "noopener,noreferrer");
  },
};

function decimals(count) {
  return count === undefined ? {} : { minimumFractionDigits: count, maximumFractionDigits: count };
}

/** `${/path}` and `${relative/path}` in a string, each replaced by its value; `\${` stays. */
function interpolate(template, resolve) {
  return template.replace(/(\\?)\$\{([^}]*)\}/g, (whole, escaped, path) => {
    if (escaped) return whole.slice(1);
    return text(resolve({ path: path.trim() }));
  });
}

/** A value as text in a string: null and undefined as nothing, objects as JSON. */
export function text(value) {
  if (value === undefined || value === null) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** A Unicode TR35 date pattern, for the tokens basic_catalog.json lists. */
function formatDate(value, pattern) {
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.valueOf())) return text(value);
  const part = (options) => new Intl.DateTimeFormat(LOCALE, options).format(date);
  const pad = (n) => String(n).padStart(2, "0");
  const tokens = {
    yyyy: () => String(date.getFullYear()),
    yy: () => pad(date.getFullYear() % 100),
    MMMM: () => part({ month: "long" }),
    MMM: () => part({ month: "short" }),
    MM: () => pad(date.getMonth() + 1),
    M: () => String(date.getMonth() + 1),
    dd: () => pad(date.getDate()),
    d: () => String(date.getDate()),
    EEEE: () => part({ weekday: "long" }),
    E: () => part({ weekday: "short" }),
    HH: () => pad(date.getHours()),
    H: () => String(date.getHours()),
    hh: () => pad(date.getHours() % 12 || 12),
    h: () => String(date.getHours() % 12 || 12),
    mm: () => pad(date.getMinutes()),
    ss: () => pad(date.getSeconds()),
    a: () => (date.getHours() < 12 ? "오전" : "오후"),
  };
  return pattern.replace(/'([^']*)'|yyyy|yy|MMMM|MMM|MM|M|dd|d|EEEE|E|HH|H|hh|h|mm|ss|a/g, (token, quoted) =>
    quoted !== undefined ? quoted : tokens[token](),
  );
}
