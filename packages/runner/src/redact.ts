import { collectStrings } from "./plan.js";

/** What replaces every secret value in what the runner prints or writes. */
export const redactedMarker = "(sensitive)";
/** Shorter values ("1", "on", "dev") are everywhere in ordinary text; replacing them hides nothing. */
export const minSecretBytes = 4;
/** The shortest line of a script-like secret (bootstrap data, a plan value) redacted on its own. */
export const minScriptLineBytes = 16;

/** One value to redact; `minLine` is the shortest of its trimmed lines also redacted on its own. */
export interface Secret {
  value: string;
  minLine: number;
}

/**
 * Replaces every known secret in a text by {@link redactedMarker}. `wrapSpan`: how many characters
 * a secret with spaces can take once the runtime wrapped it over several lines (0: none can wrap).
 */
export type Redactor = ((text: string) => string) & { readonly wrapSpan?: number };

export function secretsOf(values: Iterable<string>, minLine = minSecretBytes): Secret[] {
  return [...values].map((value) => ({ value, minLine }));
}

function jsonEscaped(value: string): string {
  return JSON.stringify(value).slice(1, -1);
}

function trimmedLines(value: string): string[] {
  if (!/[\r\n]/.test(value)) return [];
  return value.split(/[\r\n]+/).map((line) => line.trim());
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * A redactor for `secrets`: each value, its JSON-escaped form (as `validate -json` prints it) and,
 * for a multi-line value, each trimmed line of at least its `minLine` bytes. Longest forms are
 * tried first, so a value that is a prefix of another never leaves the rest visible. A line shared
 * by several secrets takes the largest `minLine` any of them asks for.
 */
export function redactor(secrets: readonly Secret[]): Redactor {
  const valueMinLine = new Map<string, number>();
  for (const { value, minLine } of secrets) valueMinLine.set(value, Math.max(valueMinLine.get(value) ?? 0, minLine));
  const lineMin = new Map<string, number>();
  for (const [value, minLine] of valueMinLine) {
    for (const line of trimmedLines(value)) lineMin.set(line, Math.max(lineMin.get(line) ?? 0, minLine));
  }
  const forms = new Set<string>();
  const add = (form: string) => {
    if (Buffer.byteLength(form) >= minSecretBytes) forms.add(form);
  };
  for (const value of valueMinLine.keys()) {
    add(value);
    add(jsonEscaped(value));
    for (const line of trimmedLines(value)) {
      if (Buffer.byteLength(line) >= lineMin.get(line)!) {
        add(line);
        add(jsonEscaped(line));
      }
    }
  }
  if (forms.size === 0) return (text) => text;
  const longestFirst = [...forms].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(longestFirst.map(formPattern).join("|"), "g");
  // A long alternation is slow to run on every line; plain substring checks find the few lines that need it.
  const clues = longestFirst.map((form) => wrappedWords(form)?.[0] ?? form);
  const wrapSpan = Math.max(0, ...longestFirst.filter((form) => wrappedWords(form)).map((form) => 2 * form.length + 16));
  return Object.assign((text: string) => (clues.some((clue) => text.includes(clue)) ? text.replace(pattern, redactedMarker) : text), {
    wrapSpan,
  });
}

/** The words of a form with inner spaces, which the runtime's word wrap may break at; undefined for one word. */
function wrappedWords(form: string): string[] | undefined {
  const words = form.trim().split(/\s+/);
  return words.length > 1 ? words : undefined;
}

/** A form as a pattern: its inner spaces also match a line break and a diagnostic box's bar (the runtime wraps long messages at spaces). */
function formPattern(form: string): string {
  return wrappedWords(form)?.map(escapeRegExp).join("[\\s│]+") ?? escapeRegExp(form);
}

/** Step environment entries that are paths, flags, addresses or the pod's name, set by the runner or the Job: never credentials. */
const notSecretEnvironment = new Set([
  "TF_DATA_DIR",
  "HOME",
  "TMPDIR",
  "TF_CLI_CONFIG_FILE",
  "TF_IN_AUTOMATION",
  "TF_INPUT",
  "KUBE_NAMESPACE",
  "PATH",
  "HOSTNAME",
  "POD_NAME",
]);
const credentialNameMarkers = ["KEY", "SECRET", "TOKEN", "PASS", "CREDENTIAL", "PRIVATE", "AUTH", "CERT", "SESSION"];
/** A value this long is redacted whatever its name: opaque credentials rarely are shorter, regions and flags usually are. */
const minAnonymousSecretBytes = 16;

/** The step environment's values that may be credentials. */
export function environmentSecrets(env: Readonly<Record<string, string | undefined>>): Secret[] {
  const values: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!value || notSecretEnvironment.has(name) || name.startsWith("KUBERNETES_")) continue;
    const upper = name.toUpperCase();
    if (credentialNameMarkers.some((marker) => upper.includes(marker)) || Buffer.byteLength(value) >= minAnonymousSecretBytes) {
      values.push(value);
    }
  }
  return secretsOf(values);
}

function parseObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const base64Text = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function decodeBase64Text(value: string): string | undefined {
  if (!base64Text.test(value)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(value, "base64"));
  } catch {
    return undefined;
  }
}

/**
 * The secrets of the generated root: every string leaf of a variable `main.tf.json` declares
 * sensitive, valued from `terraform.tfvars.json`, and `bootstrap_data` (sensitive or not) both
 * as given and base64-decoded. Unreadable files give nothing: the steps report them.
 */
export function variableSecrets(mainTfJson: string | undefined, tfvarsJson: string | undefined): Secret[] {
  const values = parseObject(tfvarsJson);
  if (!values) return [];
  const secrets: Secret[] = [];
  const variables = parseObject(mainTfJson)?.variable;
  if (typeof variables === "object" && variables !== null) {
    for (const [name, declaration] of Object.entries(variables as Record<string, unknown>)) {
      if (name === "bootstrap_data" || !(name in values)) continue;
      if ((declaration as { sensitive?: unknown } | null)?.sensitive !== true) continue;
      const leaves = new Set<string>();
      collectStrings(values[name], leaves);
      secrets.push(...secretsOf(leaves));
    }
  }
  const bootstrap = new Set<string>();
  collectStrings(values.bootstrap_data, bootstrap);
  for (const value of bootstrap) {
    secrets.push({ value, minLine: minScriptLineBytes });
    const decoded = decodeBase64Text(value);
    if (decoded !== undefined) secrets.push({ value: decoded, minLine: minScriptLineBytes });
  }
  return secrets;
}

/** Plan-sensitive values are often scripts (user_data): only their long lines are redacted on their own. */
export function planSecrets(values: Iterable<string>): Secret[] {
  return secretsOf(values, minScriptLineBytes);
}

/** Longer partial lines are passed on without waiting for their end. */
const maxPendingChars = 64 * 1024;

/**
 * Passes text on to `sink` redacted, whole lines at a time, so a secret split across two reads
 * is still found. `redact` is read on every write: the run adds plan secrets as it learns them.
 */
export class RedactingLineWriter {
  private pending = "";

  constructor(
    private readonly sink: (text: string) => void,
    private readonly redact: () => Redactor,
  ) {}

  write(text: string): void {
    const joined = this.pending + text;
    const end = joined.lastIndexOf("\n") + 1;
    if (end === 0 && joined.length <= maxPendingChars) {
      this.pending = joined;
      return;
    }
    const redact = this.redact();
    const hold = redact.wrapSpan ?? 0;
    if (hold === 0) {
      const cut = end === 0 ? joined.length : end;
      this.pending = joined.slice(cut);
      this.sink(redact(joined.slice(0, cut)));
      return;
    }
    // A secret the runtime wrapped may go on in the next write: the last lines stay back (redacted
    // as far as they go) until they are longer than any wrapped secret can be.
    const redacted = redact(joined);
    let cut = redacted.lastIndexOf("\n") + 1;
    while (cut > 0 && redacted.length - cut < hold) cut = cut >= 2 ? redacted.lastIndexOf("\n", cut - 2) + 1 : 0;
    if (cut === 0 && redacted.length > maxPendingChars) cut = redacted.lastIndexOf("\n") + 1 || redacted.length;
    this.pending = redacted.slice(cut);
    if (cut > 0) this.sink(redacted.slice(0, cut));
  }

  flush(): void {
    if (this.pending === "") return;
    const rest = this.pending;
    this.pending = "";
    this.sink(this.redact()(rest));
  }
}
